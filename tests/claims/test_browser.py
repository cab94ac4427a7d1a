"""In a real browser (headless Chromium from Debian, driven by Playwright): a participant files a claim with an
attachment and downloads the denial notice; another participant cannot open that claim by any URL or endpoint."""

from __future__ import annotations

import os
import re

import pytest
from django.db import connections
from django.utils import timezone

from claims.models import Claim, State
from core.pdf import pdf_text
from tests.claims.factories import PASSWORD, deny, participant, pdf_bytes, user_in
from tests.signin import browser_sign_in

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("/usr/bin/chromium is missing: .ci/run installs Debian's chromium")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
            # ORM calls made while Playwright's loop runs get their own connection: close it, or the test
            # database cannot be dropped at the end of the session.
            connections.close_all()


def sign_in(browser, base: str, username: str):
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15000)
    browser_sign_in(page, base, username, PASSWORD)
    return context, page


def test_a_participant_files_a_claim_and_downloads_the_denial_notice_and_no_one_else_can_open_it(
    browser, live_server, tmp_path
):
    alice = participant("EDCP", username="alice", first_name="Alice", last_name="Claimant")
    participant("EDCP", username="bob", first_name="Bob", last_name="Other")
    delegate = user_in("administrator", username="delegate")
    attachment = tmp_path / "statement.pdf"
    attachment.write_bytes(pdf_bytes("Statement of benefits for 2024"))
    base = live_server.url

    context, page = sign_in(browser, base, "alice")
    page.click("text=My claims")
    page.click("text=File a claim")
    page.select_option("select[name=plan]", label="EDCP: Executive Deferred Compensation Plan")
    page.select_option("select[name=subject]", value="amount")
    page.fill("textarea[name=description]", "My 2024 company contribution was not credited.")
    page.set_input_files("input[name=attachments]", str(attachment))
    page.click("#claim-form button[type=submit]")
    page.wait_for_url(re.compile(r"/portal/claims/\d+/\?receipt=1$"))
    assert "Filing receipt" in page.content() and "Decision due by" in page.content()  # issue 11
    claim = Claim.objects.get()
    assert claim.claimant == alice and claim.documents.get().original_name == "statement.pdf"
    claim_url = page.url

    deny(
        claim,
        now=timezone.now(),
        actor=delegate,
        reasons="The 2024 company contribution was credited on December 31, 2024.",
    )
    claim.refresh_from_db()
    assert claim.state == State.DENIED

    page.reload()
    assert page.text_content("#claim-state") == "Denied"
    with page.expect_download() as download_info:
        page.click("#notices a.claims-download")
    data = open(download_info.value.path(), "rb").read()
    text = " ".join(pdf_text(data).split())
    assert (
        "Notice of denial of claim" in text and "credited on December 31, 2024" in text and "502(a)" in text
    )
    notice = claim.decisions.get().notice
    upload = claim.documents.get()
    context.close()

    other, page = sign_in(browser, base, "bob")
    urls = [
        claim_url,
        f"{claim_url}notices/{notice.pk}/",
        f"{claim_url}uploads/{upload.pk}/",
        f"{base}/documents/{notice.pk}/",
        f"{base}/api/claims/claims/{claim.pk}/",
        f"{base}/staff/claims/{claim.pk}/",
    ]
    for url in urls:
        response = other.request.get(url)
        assert response.status == 404, url
    assert page.goto(claim_url).status == 404
    listing = other.request.get(f"{base}/api/claims/claims/").json()
    assert listing["results"] == []
    other.close()
