"""Issue 11, preview then submit, for the payment election and the change of payment schedule (EDCP 5.1, 5.2,
Article VI): prefilled with what is in force, every problem at once beside its field (a format mistake is never
stored), a review of old against new with the schedule engine's dates, then the submit (a refusal is stored)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from core.audit import AuditEvent
from elections.models import DistributionElection, ScheduleChange, Status
from elections.services import (
    distribution_election_submit,
    distribution_preview,
    schedule_change_form_preview,
)
from tests.elections.factories import at, default_fund, participant
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

NOW = at(2026, 11, 10, 10)
PAYMENT = "elections_portal:payment"
CHANGE = "elections_portal:schedule_change"
RT = "retirement_termination"
SD = "specified_date:2030-03"


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)


@pytest.fixture
def alice(db):
    default_fund()
    return participant(username="alice", first_name="Alice", last_name="Archer")


@pytest.fixture
def march_2030(alice):
    """A Specified Date Account paying a lump sum on March 15, 2030."""
    e = distribution_election_submit(
        participation=alice,
        account=SD,
        form="lump_sum",
        installments=None,
        lump_sum_percent=None,
        submitted_at=at(2026, 10, 1),
        channel="portal",
        actor="alice",
    )
    assert e.status == Status.ACCEPTED
    return alice


def _client(client, participation):
    sign_in(client, participation.person.user)
    return client


def _rows():
    return (DistributionElection.objects.count(), ScheduleChange.objects.count(), AuditEvent.objects.count())


def _url(name):
    return reverse(name, args=["EDCP"])


# --- the payment election ------------------------------------------------------------------------------------------


def test_every_problem_of_a_payment_form_shows_at_once_beside_its_field_and_nothing_is_stored(client, alice):
    c = _client(client, alice)
    before = _rows()  # after signing in (a sign-in is audited)
    response = c.post(
        _url(PAYMENT),
        {
            "account": RT,
            "dist_form": "lump_sum_and_installments",
            "dist_installments": "12",
            "dist_lump_sum_percent": "150",
            "dist_delay_years": "two",
            "action": "review",
        },
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "3 problems to fix" in page and "nothing has been filed" in page
    assert 'id="dist_installments-error"' in page and "from 2 to 10" in page and "EDCP 5.1(c)" in page
    assert 'id="dist_lump_sum_percent-error"' in page and "from 1 to 99" in page
    assert 'id="dist_delay_years-error"' in page and "&#x27;two&#x27; is not one" in page
    assert 'value="12"' in page and 'value="150"' in page and 'value="two"' in page  # what was typed stays
    assert _rows() == before


def test_the_payment_form_is_prefilled_with_the_schedule_in_force(client, alice):
    distribution_election_submit(
        participation=alice,
        account=RT,
        form="installments",
        installments=4,
        lump_sum_percent=None,
        delay_months=24,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    page = _client(client, alice).get(_url(PAYMENT), {"account": RT}).content.decode()
    assert '<option value="installments" selected>' in page
    assert 'name="dist_installments" size="3" inputmode="numeric" value="4"' in page
    assert 'name="dist_delay_years" size="3" inputmode="numeric" value="2"' in page


def test_the_payment_review_shows_old_against_new_and_the_engine_dates_then_submits(client, alice):
    c = _client(client, alice)
    form = {"account": RT, "dist_form": "installments", "dist_installments": "5"}
    review = c.post(_url(PAYMENT), {**form, "action": "review"})
    page = review.content.decode()
    assert review.status_code == 200 and "Nothing is filed yet" in page
    assert "Single lump sum" in page and "5 annual installments" in page  # old against new
    # A separation today (November 10, 2026): the 15th of the next month (EDCP 5.1(b)), then yearly.
    assert "For illustration, if you separated from service on <strong>November 10, 2026" in page
    old = page.split('id="old-dates"')[1].split("</ul>")[0]
    new = page.split('id="new-dates"')[1].split("</ul>")[0]
    assert "December 15, 2026: Lump sum" in old
    assert "December 15, 2026: Installment 1 of 5" in new and "December 15, 2030: Installment 5 of 5" in new
    assert 'class="cite">EDCP 5.1(b)' in page
    assert not DistributionElection.objects.exists()
    done = c.post(_url(PAYMENT), {**form, "action": "submit"}, follow=True)
    election = DistributionElection.objects.get()
    assert (election.status, election.installments) == (Status.ACCEPTED, 5)
    result = done.content.decode()
    assert 'id="confirmation-pdf"' in result and "{&#x27;" not in result


def test_change_it_returns_to_the_payment_form_with_what_was_typed(client, alice):
    response = _client(client, alice).post(
        _url(PAYMENT),
        {"account": RT, "dist_form": "installments", "dist_installments": "7", "action": "edit"},
    )
    page = response.content.decode()
    assert response.status_code == 200 and 'value="7"' in page and "problem" not in page
    assert '<option value="installments" selected>' in page
    assert not DistributionElection.objects.exists()


def test_a_payment_election_the_plan_refuses_is_stored_as_refused_with_an_english_page(client, alice):
    response = _client(client, alice).post(
        _url(PAYMENT),
        {"account": RT, "dist_form": "installments", "dist_installments": "12", "action": "submit"},
        follow=True,
    )
    election = DistributionElection.objects.get()
    assert (election.status, election.rule) == (Status.REJECTED, "EDCP 5.1(c)")
    page = response.content.decode()
    assert "Refused under" in page and 'id="submitted"' in page
    assert "{&#x27;" not in page and 'id="confirmation-pdf"' not in page


def test_the_distribution_preview_writes_nothing(alice):
    before = _rows()
    ok = distribution_preview(
        participation=alice,
        data={"account": RT, "form": "installments", "installments": "3"},
        as_of=NOW.date(),
        now=NOW,
    )
    bad = distribution_preview(
        participation=alice,
        data={
            "account": RT,
            "form": "lump_sum_and_installments",
            "installments": "1",
            "lump_sum_percent": "0",
        },
        as_of=NOW.date(),
        now=NOW,
    )
    assert ok.ok and ok.arguments["installments"] == 3
    assert set(bad.errors) == {"installments", "lump_sum_percent"}
    assert _rows() == before


# --- the change of payment schedule ---------------------------------------------------------------------------------


def test_every_problem_of_a_schedule_change_shows_at_once_and_a_malformed_month_is_never_stored(
    client, march_2030
):
    c = _client(client, march_2030)
    before = _rows()
    response = c.post(
        _url(CHANGE), {"account": SD, "new_month": "2035-3", "form": "installments", "installments": "9"}
    )
    page = response.content.decode()
    assert response.status_code == 400  # no redirect and no flash: a field error
    assert "2 problems to fix" in page
    assert 'id="new_month-error"' in page and "&#x27;2035-3&#x27; is not one" in page
    assert 'id="installments-error"' in page and "from 2 to 5" in page
    assert 'value="2035-3"' in page and 'value="9"' in page
    assert _rows() == before


def test_a_schedule_change_too_early_is_a_field_error_before_review(client, march_2030):
    page = (
        _client(client, march_2030)
        .post(_url(CHANGE), {"account": SD, "new_month": "2034-03", "action": "review"})
        .content.decode()
    )
    assert 'id="new_month-error"' in page and "The earliest new first payment is March 15, 2035." in page
    assert not ScheduleChange.objects.exists()


def test_the_schedule_change_review_shows_old_and_new_dates_and_the_rule_then_submits(client, march_2030):
    c = _client(client, march_2030)
    form = {"account": SD, "new_month": "2035-03", "form": "installments", "installments": "3"}
    page = c.post(_url(CHANGE), {**form, "action": "review"}).content.decode()
    assert "Nothing is filed yet" in page
    assert "March 15, 2030" in page and "March 15, 2035" in page
    old = page.split('id="old-dates"')[1].split("</ul>")[0]
    new = page.split('id="new-dates"')[1].split("</ul>")[0]
    assert "March 15, 2030: Lump sum" in old
    assert "March 15, 2035: Installment 1 of 3" in new and "March 15, 2037: Installment 3 of 3" in new
    assert 'id="schedule-rule"' in page and "at least 12 months" in page and "at least 5 years later" in page
    assert not ScheduleChange.objects.exists()
    edit = c.post(_url(CHANGE), {**form, "action": "edit"}).content.decode()
    assert 'value="2035-03"' in edit and '<option value="installments" selected>' in edit
    done = c.post(_url(CHANGE), {**form, "action": "submit"}, follow=True)
    change = ScheduleChange.objects.get()
    assert change.status == Status.ACCEPTED and change.new_first_payment == dt.date(2035, 3, 15)
    assert 'id="confirmation-pdf"' in done.content.decode()


def test_a_separation_account_is_reviewed_for_a_separation_when_the_change_takes_effect(client, alice):
    page = (
        _client(client, alice)
        .post(_url(CHANGE), {"account": RT, "delay_years": "5", "action": "review"})
        .content.decode()
    )
    assert "November 10, 2027" in page  # EDCP 6.2: the change takes effect 12 months after it is filed
    old = page.split('id="old-dates"')[1].split("</ul>")[0]
    new = page.split('id="new-dates"')[1].split("</ul>")[0]
    assert "December 15, 2027: Lump sum" in old and "December 15, 2032: Lump sum" in new
    assert not ScheduleChange.objects.exists()


def test_a_schedule_change_the_plan_refuses_is_stored_as_refused_with_an_english_page(client, march_2030):
    response = _client(client, march_2030).post(
        _url(CHANGE), {"account": SD, "new_month": "2033-03", "action": "submit"}, follow=True
    )
    change = ScheduleChange.objects.get()
    assert (change.status, change.rule) == (Status.REJECTED, "EDCP 6.3")
    page = response.content.decode()
    assert "Refused under" in page and "{&#x27;" not in page


def test_the_schedule_change_preview_writes_nothing(march_2030):
    before = _rows()
    preview = schedule_change_form_preview(
        participation=march_2030, data={"account": SD, "new_month": "2035-03"}, as_of=NOW.date(), now=NOW
    )
    assert preview.ok and preview.check.new_first_payment == dt.date(2035, 3, 15)
    bad = schedule_change_form_preview(
        participation=march_2030,
        data={"account": SD, "new_month": "20x5-03", "form": "annuity", "installments": "x"},
        as_of=NOW.date(),
        now=NOW,
    )
    assert set(bad.errors) == {"new_month", "form", "installments"}
    assert _rows() == before
