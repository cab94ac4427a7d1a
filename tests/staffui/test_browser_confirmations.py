"""Issue 11 in a real browser (Playwright, Chromium): the staff work queue counts what waits and leads to it; each
hard-to-undo staff action shows its summary page first (run approval, emergency decision, claim denial with the letter
previewed), and only the confirming button acts. (A participant's Stop deferring review is the portal's, on main.)"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from django.db import connections
from django.utils import timezone

from claims.models import Claim, State
from core.models import JobRun
from participants.models import Participation
from payments.models import EmergencyWithdrawal, PaymentRun
from payments.services.runs import payment_run_prepare
from payments.services.withdrawals import emergency_request_record
from tests.claims.factories import at, file_claim
from tests.claims.factories import participant as claims_participant
from tests.payments.factories import deferrals, scenario, simulate, staff_user
from tests.signin import CHROMIUM_ARGS, authenticator_of, browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
ARGS = CHROMIUM_ARGS
PASSWORD = "a-long-test-password"


def _browser(run):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        try:
            run(browser)
        finally:
            browser.close()
            connections.close_all()


def _page(browser, base: str, username: str, password: str = PASSWORD):
    page = browser.new_context().new_page()
    page.set_default_timeout(20_000)
    browser_sign_in(page, base, username, password)
    return page


def _count(page, key: str) -> str:
    return page.inner_text(f'tr[data-queue="{key}"] td[data-count]').strip()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_work_queue_counts_what_waits_and_the_run_is_approved_after_its_summary(live_server):
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    now = timezone.now()
    JobRun.objects.create(
        kind="crediting", key="2031-01-02", status="failed", heartbeat_at=now, started_at=now
    )
    admin, committee = staff_user("ad-q", "administrator"), staff_user("cm-q", "committee")
    for user in (admin, committee):
        authenticator_of(user)
    payment_run_prepare(period_end=dt.date(2026, 5, 15), actor=admin)

    def run(browser):
        page = _page(browser, live_server.url, "cm-q")
        page.goto(live_server.url + "/staff/")
        assert (_count(page, "runs"), _count(page, "jobs"), _count(page, "claims")) == ("1", "1", "0")
        with page.expect_navigation():
            page.click('tr[data-queue="runs"] td[data-count] a')
        assert page.url.endswith("/staff/payments/runs/")
        with page.expect_navigation():
            page.click("table.data a[href*='/runs/']")
        with page.expect_navigation():
            page.click("#approve-run")
        assert page.inner_text("[data-summary=count]") == "1"
        assert page.inner_text("[data-summary=net]") == "43,350.00"
        assert page.inner_text("[data-summary=withholding]") == "16,650.00"
        with page.expect_navigation():
            page.click("#confirm-approve")
        assert page.inner_text("#run-status") == "Approved and released"
        page.goto(live_server.url + "/staff/")
        assert _count(page, "runs") == "0"

    _browser(run)
    assert PaymentRun.objects.get().status == PaymentRun.Status.RELEASED


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_emergency_decision_and_a_denial_are_reviewed_before_they_are_recorded(live_server):
    simulate(scenario(events=deferrals(), through="2026-04-30"))
    emergency = emergency_request_record(
        participation=Participation.objects.get(person__employee_number="P1"),
        amount=Decimal("12000.00"),
        requested_on=dt.date(2026, 5, 4),
        need="Hospital bills",
        documents="Invoice 77",
        actor="test",
    )
    alice = claims_participant("EDCP", username="alice-c", first_name="Alice", last_name="Claimant")
    claim = file_claim(alice, now=at(2025, 1, 10))
    committee, admin = staff_user("cm-e", "committee"), staff_user("ad-e", "administrator")
    for user in (admin, committee):
        authenticator_of(user)

    def run(browser):
        page = _page(browser, live_server.url, "cm-e")
        page.goto(f"{live_server.url}/staff/payments/emergencies/{emergency.pk}/")
        page.check("input[name=decision][value=approve]")
        page.fill("input[name=amount]", "11000.00")
        page.fill("textarea[name=reason]", "Need net of insurance")
        with page.expect_navigation():
            page.click("#decide-emergency")
        assert "Approve 11,000.00" in page.inner_text("[data-summary=decision]")
        with page.expect_navigation():
            page.click("#confirm-emergency")
        assert page.inner_text("#emergency-status") == "Approved"

        staff = _page(browser, live_server.url, "ad-e")
        staff.goto(f"{live_server.url}/staff/claims/{claim.pk}/")
        staff.fill("#deny-form textarea[name=reasons]", "The contribution was credited.")
        staff.select_option("#deny-form select[name=provisions]", index=0)
        staff.fill("#deny-form textarea[name=additional_material]", "None is needed.")
        with staff.expect_navigation():
            staff.click("#preview-denial")
        assert "/deny/review/" in staff.url
        assert staff.locator("img.letter-page").count() >= 1
        assert "The contribution was credited." in (staff.text_content("#letter-text") or "")
        with staff.expect_navigation():
            staff.click("#issue-denial")
        assert "/deny/review/" not in staff.url

    before = EmergencyWithdrawal.objects.get().status
    assert before == "requested" and Claim.objects.get().state == State.RECEIVED
    _browser(run)
    assert EmergencyWithdrawal.objects.get().status == "approved"
    assert Claim.objects.get().state == State.DENIED
