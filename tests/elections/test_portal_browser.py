"""Issue 11 in a real browser (headless Chromium, Playwright): the portal asks the engine first. A Key
Employee's calendar date, no election offered after separation, every error of a deferral form at once with
nothing stored, the review page then the submit, net pay on the calendar, and the claim form's plans."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from claims.models import Claim
from core.dates import day_of_month_after
from elections.models import DeferralElection, Status
from participants.models import KeyEmployeeList, Person
from participants.services import employment_event_record
from payments.models import ScheduledPayment
from plans.models import Plan
from tests.elections.factories import default_fund, participant
from tests.elections.test_browser import browser_page  # noqa: F401 - the Playwright page fixture
from tests.payments.factories import deferrals, scenario, simulate
from tests.signin import browser_sign_in

PASSWORD = "a long browser password 7"
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _can_sign_in(user) -> None:
    user.set_password(PASSWORD)
    user.save()


def _alice():
    default_fund()
    alice = participant(username="alice", first_name="Alice", last_name="Archer", email="alice@example.com")
    _can_sign_in(alice.person.user)
    return alice


def test_a_key_employee_sees_the_engines_date_for_a_separation_today(live_server, browser_page):  # noqa: F811
    alice = _alice()
    today = timezone.localdate()
    identified = KeyEmployeeList.identification_year_for(today, 4, 1)
    KeyEmployeeList.objects.filter(identification_year=identified).delete()
    KeyEmployeeList.objects.create(
        identification_year=identified, recorded_by="test", recorded_at=timezone.now()
    ).members.add(alice.person)
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/payments/")
    # EDCP 5.1(b): the 1st day of the 7th month after the month of separation, not the 15th of the next month.
    expected = day_of_month_after(today, 1, 7)
    assert page.inner_text(".key-employee-date") == f"{expected:%B} {expected.day}, {expected.year}"


def test_a_separated_participant_is_offered_no_election(live_server, browser_page):  # noqa: F811
    alice = _alice()
    employment_event_record(
        person=alice.person,
        kind="separation",
        effective_date=timezone.localdate() - dt.timedelta(days=30),
        actor="hr",
        now=timezone.now(),
    )
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/elections/")
    assert "after your employment ended" in page.inner_text("#no-election-EDCP")
    assert page.locator("a.button.primary", has_text="Plan year").count() == 0
    assert page.locator("text=Stop deferring").count() == 0


def test_every_error_of_a_deferral_form_at_once_and_nothing_stored(live_server, browser_page):  # noqa: F811
    _alice()
    year = timezone.localdate().year + 1
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/elections/EDCP/enrol/?year={year}&kind=annual")
    page.fill("#pct_base_salary", "80")
    page.fill("#pct_monthly_bonus", "10.5")
    page.fill("#alloc_default", "50")
    page.fill("#sd_month_1", "2031-3")
    page.fill("#sd_percent_1", "30")
    page.click("#review-election")
    page.wait_for_selector("#form-errors")
    assert "4 problems" in page.inner_text("#form-errors")
    assert "at most 75%" in page.inner_text("#pct_base_salary-error")
    assert "not a whole number" in page.inner_text("#pct_monthly_bonus-error")
    assert "YYYY-MM" in page.inner_text("#sd_month_1-error")
    assert "not 100%" in page.inner_text("#alloc_default-error")
    assert page.get_attribute("#pct_base_salary", "aria-invalid") == "true"
    assert page.input_value("#pct_base_salary") == "80"
    assert not DeferralElection.objects.exists()


def test_the_review_page_then_the_submit(live_server, browser_page):  # noqa: F811
    _alice()
    year = timezone.localdate().year + 1
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/elections/EDCP/enrol/?year={year}&kind=annual")
    page.fill("#pct_base_salary", "10")
    page.click("#review-election")
    page.wait_for_selector("#review-percentages")
    assert re.search(r"Base salary\s+none\s+10%", page.inner_text("#review-percentages"))
    assert not DeferralElection.objects.exists()
    page.click("#submit-election")
    page.wait_for_selector("#confirmation")
    election = DeferralElection.objects.get()
    assert (election.status, election.plan_year) == (Status.ACCEPTED, year)


def test_net_pay_on_the_calendar(live_server, browser_page):  # noqa: F811
    # A Key Employee separated April 10, 2026: the engine's Payment Date is November 1, 2026 (EDCP 5.1(b)).
    simulate(
        scenario(
            participants={
                "P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01", "key_employee_years": [2025]}
            },
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-06-30",
        )
    )
    person = Person.objects.get(employee_number="P1")
    alice = participant(username="alice").person.user  # a user to attach: the simulator's people have none
    Person.objects.filter(user=alice).update(user=None)
    person.user = alice
    person.save()
    _can_sign_in(alice)
    payment = ScheduledPayment.objects.get(participation__person=person)
    assert payment.payment_date == dt.date(2026, 11, 1)
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/payments/")
    row = page.locator("table.payments-calendar tbody tr").first
    assert "November 1, 2026" in row.inner_text()
    net = row.locator(".payment-net").inner_text()
    assert re.match(r"^\$\d{1,3}(,\d{3})*\.\d{2}", net)
    assert payment.status == "paid" or "estimate" in net
    federal = row.locator("td[data-label='Federal tax withheld']").inner_text()
    assert re.match(r"^\$\d{1,3}(,\d{3})*\.\d{2}", federal)


def test_the_claim_form_offers_the_claimants_plans(live_server, browser_page):  # noqa: F811
    _alice()
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/claims/new/")
    own = page.locator("optgroup[label='Your plans'] option").all_inner_texts()
    assert own == [str(Plan.objects.get(code="EDCP"))]
    assert page.locator("select[name=plan] option:checked").inner_text() == str(Plan.objects.get(code="EDCP"))
    page.select_option("select[name=plan]", label=str(Plan.objects.get(code="BRP")))
    page.fill("textarea[name=description]", "My benefit is wrong.")
    page.click("#claim-form button[type=submit]")
    assert "You have no account in" in page.inner_text("main")
    assert not Claim.objects.exists()


def test_stop_deferring_shows_what_stops_and_files_only_on_the_confirmation(live_server, browser_page):  # noqa: F811
    from elections.services import deferral_election_submit

    alice = _alice()
    year = timezone.localdate().year + 1
    deferral_election_submit(
        participation=alice,
        plan_year=year,
        percentages={"base_salary": 7},
        accounts=None,
        submitted_at=timezone.now(),
        channel="portal",
        actor="alice",
    )
    page = browser_page
    browser_sign_in(page, live_server.url, "alice", PASSWORD)
    page.goto(f"{live_server.url}/portal/elections/")
    page.click("#stop-EDCP")
    page.wait_for_selector("#stop-summary")
    # The summary: the election in force against 0%, before anything is filed.
    assert "7%" in page.inner_text("#stop-summary")
    assert DeferralElection.objects.count() == 1
    page.click("#confirm-stop")
    page.wait_for_selector("#confirmation")
    latest = DeferralElection.objects.order_by("-id").first()
    assert latest.status == Status.ACCEPTED and {line.percent for line in latest.lines.all()} == {0}
