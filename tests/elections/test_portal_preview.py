"""Issue 11, participant side: the portal offers only what the engine would accept today, and an election
form is checked as a whole (every problem at once, nothing stored), reviewed (old against new, per paycheck),
then submitted."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from books.models import PayrollRecord
from core.audit import AuditEvent
from elections.models import DeferralElection, Status
from elections.services import (
    deferral_election_submit,
    deferral_offer,
    distribution_election_submit,
    enrollment_preview,
)
from participants.services import employment_event_record
from tests.elections.factories import at, default_fund, participant
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

NOW = at(2026, 11, 10, 10)
ENROL = "elections_portal:enrol"


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch):
    """A day when the 2027 enrollment is open (EDCP 3.2(b): until December 31, 2026)."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)


@pytest.fixture
def fund(db):
    return default_fund()


def _client(client, participation):
    sign_in(client, participation.person.user)
    return client


def _form(**fields):
    return {"plan_year": "2027", "kind": "annual", "action": "review", **fields}


def test_every_problem_of_a_deferral_form_shows_at_once_beside_its_field_and_nothing_is_stored(
    client, alice, fund
):
    c = _client(client, alice)
    audit_before = AuditEvent.objects.count()
    response = c.post(
        reverse(ENROL, args=["EDCP"]),
        _form(
            pct_base_salary="80",
            pct_monthly_bonus="10.5",
            alloc_default="50",
            sd_month_1="2031-3",
            sd_percent_1="30",
        ),
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "4 problems to fix" in page and "nothing has been filed" in page
    assert 'id="pct_base_salary-error"' in page and "at most 75%" in page
    assert 'id="pct_monthly_bonus-error"' in page and "10.5 is not a whole number" in page
    assert 'id="sd_month_1-error"' in page and "2031-3 is not one" in page
    assert 'id="alloc_default-error"' in page and "add up to 80%, not 100%" in page
    assert 'value="80"' in page and 'value="2031-3"' in page  # what was typed stays in the form
    assert not DeferralElection.objects.exists()
    assert AuditEvent.objects.count() == audit_before


def test_a_good_form_leads_to_a_review_of_old_against_new_and_the_deferral_per_paycheck(client, alice, fund):
    deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 5},
        accounts=None,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    PayrollRecord.objects.create(
        person=alice.person,
        pay_date=dt.date(2026, 10, 31),
        component="base_salary",
        gross=Decimal("12500.00"),
        plan_year=2026,
        recorded_at=NOW,
    )
    c = _client(client, alice)
    form = c.get(reverse(ENROL, args=["EDCP"]), {"year": 2027, "kind": "annual"}).content.decode()
    assert 'name="pct_base_salary" id="pct_base_salary" value="5"' in form  # prefilled with what is in force
    review = c.post(reverse(ENROL, args=["EDCP"]), _form(pct_base_salary="12")).content.decode()
    assert "Nothing is filed yet" in review
    assert "$625.00" in review and "$1,500.00" in review  # 5% and 12% of $12,500.00, the last paycheck
    assert DeferralElection.objects.count() == 1
    response = c.post(
        reverse(ENROL, args=["EDCP"]),
        {"plan_year": "2027", "kind": "annual", "pct_base_salary": "12", "action": "submit"},
    )
    assert response.status_code == 302
    latest = DeferralElection.objects.order_by("-id").first()
    assert latest.status == Status.ACCEPTED and latest.lines.get().percent == 12


def test_change_it_returns_to_the_form_with_what_was_typed(client, alice, fund):
    page = _client(client, alice).post(
        reverse(ENROL, args=["EDCP"]), _form(pct_base_salary="9", action="edit")
    )
    assert page.status_code == 200 and 'value="9"' in page.content.decode()
    assert not DeferralElection.objects.exists()


def test_a_refusal_submitted_after_review_is_stored_and_its_page_speaks_english(client, alice, fund):
    response = _client(client, alice).post(
        reverse(ENROL, args=["EDCP"]),
        {"plan_year": "2027", "kind": "annual", "pct_base_salary": "80", "action": "submit"},
        follow=True,
    )
    page = response.content.decode()
    assert DeferralElection.objects.get().status == Status.REJECTED
    assert "Refused under" in page and "Base salary: 80%" in page
    assert "{&#x27;" not in page and "{'" not in page  # no Python dict


def test_the_preview_writes_nothing(alice, fund):
    before = (DeferralElection.objects.count(), AuditEvent.objects.count())
    preview = enrollment_preview(
        participation=alice,
        plan_year=2027,
        data={"pct_base_salary": "10"},
        performance_period=None,
        submitted_at=NOW,
    )
    assert preview.ok and preview.percentages == {"base_salary": 10}
    assert (DeferralElection.objects.count(), AuditEvent.objects.count()) == before


def test_a_separated_participant_is_offered_no_election_and_told_why(client, alice, fund):
    employment_event_record(
        person=alice.person, kind="separation", effective_date=dt.date(2026, 9, 30), actor="hr", now=NOW
    )
    offer = deferral_offer(participation=alice, now=NOW)
    assert not offer.allowed and offer.cite
    c = _client(client, alice)
    page = c.get(reverse("elections_portal:home")).content.decode()
    assert reverse(ENROL, args=["EDCP"]) + "?year=" not in page  # no "Elect now" button
    assert "Stop deferring" not in page
    assert 'id="no-election-EDCP"' in page and offer.reason in page.replace("&#x27;", "'")
    form = c.get(reverse(ENROL, args=["EDCP"]), {"year": 2027}).content.decode()
    assert 'id="not-offered"' in form and 'id="review-election"' not in form


def test_an_employed_participant_in_the_window_is_offered_the_election(client, alice, fund):
    assert deferral_offer(participation=alice, now=NOW).allowed
    page = _client(client, alice).get(reverse("elections_portal:home")).content.decode()
    assert reverse(ENROL, args=["EDCP"]) + "?year=2027" in page


def test_a_brp_only_participant_has_no_emergency_payment_in_the_menu(client, db):
    brp = participant("BRP")
    page = _client(client, brp).get(reverse("elections_portal:home")).content.decode()
    assert "Emergency payment" not in page
    assert "Payment calendar" in page


def test_an_edcp_participant_has_emergency_payment_in_the_menu(client, alice, fund):
    page = _client(client, alice).get(reverse("elections_portal:home")).content.decode()
    assert "Emergency payment" in page


@pytest.fixture
def alice(db):
    return participant(username="alice", first_name="Alice", last_name="Archer", email="alice@example.com")


def test_stop_deferring_shows_what_stops_before_anything_is_filed(client, alice, fund):
    deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 7},
        accounts=None,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    c = _client(client, alice)
    page = c.get(reverse("elections_portal:stop", args=["EDCP"]), {"plan_year": 2027}).content.decode()
    assert 'id="stop-summary"' in page and "7%" in page and 'id="confirm-stop"' in page
    assert DeferralElection.objects.count() == 1
    response = c.post(reverse("elections_portal:stop", args=["EDCP"]), {"plan_year": "2027"})
    assert response.status_code == 302
    latest = DeferralElection.objects.order_by("-id").first()
    assert latest.status == Status.ACCEPTED and {line.percent for line in latest.lines.all()} == {0}


def test_a_schedule_change_the_plan_would_refuse_is_a_sentence_not_a_submit_button(client, alice, fund):
    distribution_election_submit(
        participation=alice,
        account="specified_date:2027-03",
        form="lump_sum",
        installments=None,
        lump_sum_percent=None,
        submitted_at=at(2026, 10, 1),
        channel="portal",
        actor="alice",
    )
    c = _client(client, alice)
    page = c.get(
        reverse("elections_portal:schedule_change", args=["EDCP"]), {"account": "specified_date:2027-03"}
    ).content.decode()
    assert 'id="not-offered"' in page and "Submit the change" not in page and "EDCP 6.2" in page
    home = c.get(reverse("elections_portal:home")).content.decode()
    assert "schedule_change/?account=specified_date:2027-03" not in home
