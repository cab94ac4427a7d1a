"""A participant enrols in a real browser (headless Chromium driven by Playwright): signs in, elects, sees the
confirmation and downloads its PDF, whose text holds the election and the provisions it rests on."""

from __future__ import annotations

import os

import pytest
from django.db import connections
from django.utils import timezone

from core.models import Document
from core.pdf import pdf_text
from elections.models import DeferralElection, Status
from tests.elections.factories import default_fund, participant

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "a long browser password 7"


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(10_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()
            # Playwright's sync API runs the test in a greenlet with its own context, so the test's queries used
            # a database connection of their own: close it, or the test database cannot be dropped at the end.
            connections.close_all()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_participant_enrols_in_the_browser_and_downloads_the_confirmation(
    live_server, browser_page, monkeypatch
):
    from elections import tasks

    # No worker runs in the test: the task runs when queued, in the request that accepted the election.
    monkeypatch.setattr(
        tasks.election_confirmation_task, "delay", lambda *args: tasks.election_confirmation_task(*args)
    )
    default_fund()
    alice = participant(username="alice", first_name="Alice", last_name="Archer")
    alice.person.user.set_password(PASSWORD)
    alice.person.user.save()
    year = timezone.localdate().year + 1
    page = browser_page

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/portal/elections/")
    page.click(f"text=Plan year {year}")
    page.fill("#pct_base_salary", "10")
    page.fill("#pct_monthly_bonus", "5")
    page.click("#review-election")  # issue 11: a review page, then the submit
    page.click("#submit-election")

    page.wait_for_selector("#confirmation")
    assert "Becomes irrevocable on" in page.inner_text("#confirmation")
    assert f"December 31, {year - 1}, 11:59 p.m. Eastern Time" in page.inner_text("#confirmation")
    election = DeferralElection.objects.get()
    assert (election.status, election.plan_year, election.channel) == (Status.ACCEPTED, year, "portal")

    assert Document.objects.filter(kind="election_confirmation", object_id=str(election.pk)).exists()
    href = page.get_attribute("#confirmation-pdf", "href")
    response = page.context.request.get(f"{live_server.url}{href}")
    assert response.status == 200 and response.headers["content-type"] == "application/pdf"
    text = " ".join(pdf_text(response.body()).split())
    assert "Alice Archer" in text
    assert "Base salary 10%" in text and "Monthly bonus 5%" in text
    assert "EDCP 1.12" in text and "EDCP 3.2(b)" in text and "11:59 p.m. Eastern Time on December 31" in text
