"""Distribution elections (EDCP 5.1, 5.2) with their defaults, and schedule changes (EDCP Article VI)."""

from __future__ import annotations

import datetime as dt

import pytest

from elections.models import Status
from elections.selectors import account_schedules
from elections.services import (
    deferral_election_submit,
    distribution_election_submit,
    schedule_change_preview,
    schedule_change_submit,
)
from participants.services import employment_event_record
from tests.elections.factories import at, participant

pytestmark = pytest.mark.django_db


def payment(participation, account, form, installments=None, lump=None, delay_months=0, when=None):
    return distribution_election_submit(
        participation=participation,
        account=account,
        form=form,
        installments=installments,
        lump_sum_percent=lump,
        delay_months=delay_months,
        submitted_at=when or at(2026, 11, 1),
        channel="portal",
        actor="test",
    )


def change(participation, account="specified_date:2030-03", when=None, **kw):
    return schedule_change_submit(
        participation=participation,
        account=account,
        submitted_at=when or at(2027, 1, 5),
        channel="portal",
        actor="test",
        **kw,
    )


# --- distribution elections -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form, installments, lump",
    [
        ("lump_sum", None, None),
        ("installments", 2, None),
        ("installments", 10, None),
        ("lump_sum_and_installments", 5, 30),
    ],
)
def test_the_retirement_termination_forms_of_5_1_are_accepted(alice, form, installments, lump):
    assert payment(alice, "retirement_termination", form, installments, lump).status == Status.ACCEPTED


@pytest.mark.parametrize(
    "form, installments, lump, rule",
    [
        ("installments", 11, None, "EDCP 5.1(c)"),
        ("installments", 1, None, "EDCP 5.1(c)"),
        ("lump_sum_and_installments", 5, 100, "EDCP 5.1"),
        ("lump_sum_and_installments", 5, None, "EDCP 5.1"),
        ("annuity", None, None, "EDCP 5.1"),
    ],
)
def test_other_retirement_termination_schedules_are_refused(alice, form, installments, lump, rule):
    e = payment(alice, "retirement_termination", form, installments, lump)
    assert (e.status, e.rule) == (Status.REJECTED, rule)
    assert e.message.endswith(".")


def test_a_later_first_payment_may_be_up_to_five_years_after_separation(alice):
    assert payment(alice, "retirement_termination", "lump_sum", delay_months=60).accepted
    late = payment(alice, "retirement_termination", "lump_sum", delay_months=72)
    assert (late.status, late.rule) == (Status.REJECTED, "EDCP 5.1(b)")


def test_a_specified_date_account_pays_a_lump_sum_or_two_to_five_installments(alice):
    assert payment(alice, "specified_date:2031-03", "installments", 5).accepted
    six = payment(alice, "specified_date:2031-03", "installments", 6)
    assert (six.status, six.rule) == (Status.REJECTED, "EDCP 5.2(c)")
    mixed = payment(alice, "specified_date:2031-03", "lump_sum_and_installments", 3, 50)
    assert (mixed.status, mixed.rule) == (Status.REJECTED, "EDCP 5.2")


def test_a_specified_date_in_the_past_is_refused_for_a_payment_election(alice):
    e = payment(alice, "specified_date:2026-06", "lump_sum")
    assert (e.status, e.rule) == (Status.REJECTED, "EDCP 5.2")
    assert "in the past" in e.message


def test_the_company_contribution_account_is_paid_only_as_a_lump_sum(alice):
    e = payment(alice, "company_contribution", "installments", 3)
    assert (e.status, e.rule) == (Status.REJECTED, "EDCP 5.3")


def test_without_an_election_the_default_lump_sum_is_shown_with_its_section(alice):
    schedules = {s.account: s for s in account_schedules(participation=alice, as_of=dt.date(2026, 11, 1))}
    rt = schedules["retirement_termination"]
    assert rt.is_default and rt.form == "lump_sum" and rt.cite == "EDCP 5.1"
    payment(alice, "retirement_termination", "installments", 4)
    rt = {s.account: s for s in account_schedules(participation=alice, as_of=dt.date(2026, 11, 2))}[
        "retirement_termination"
    ]
    assert not rt.is_default and rt.form_label == "4 annual installments"


def test_a_specified_date_account_named_in_a_deferral_election_shows_its_default(alice):
    deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 10},
        accounts={"specified_date:2031-03": 100},
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="test",
    )
    schedules = {s.account: s for s in account_schedules(participation=alice, as_of=dt.date(2026, 11, 2))}
    assert (
        schedules["specified_date:2031-03"].is_default
        and schedules["specified_date:2031-03"].cite == "EDCP 5.2"
    )


# --- schedule changes -------------------------------------------------------------------------------------------


@pytest.fixture
def march_2030(alice):
    """Alice's Specified Date Account paying from March 15, 2030 (its payment schedule filed in 2026)."""
    assert payment(alice, "specified_date:2030-03", "lump_sum", when=at(2026, 10, 1)).accepted
    return alice


def test_a_change_filed_exactly_twelve_months_before_the_first_payment_is_accepted(march_2030):
    c = change(march_2030, when=at(2029, 3, 15, 16), new_month=dt.date(2035, 3, 1))
    assert c.status == Status.ACCEPTED
    assert (c.previous_first_payment, c.new_first_payment) == (dt.date(2030, 3, 15), dt.date(2035, 3, 15))
    assert c.irrevocable_at == c.submitted_at  # EDCP 6.4: irrevocable on receipt
    assert c.takes_effect_on == dt.date(2030, 3, 15)


def test_a_change_filed_a_day_later_is_refused_under_6_2(march_2030):
    c = change(march_2030, when=at(2029, 3, 16, 9), new_month=dt.date(2035, 3, 1))
    assert (c.status, c.rule) == (Status.REJECTED, "EDCP 6.2")
    assert "the last day to file was March 15, 2029" in c.message


def test_a_new_first_payment_exactly_five_years_later_is_accepted(march_2030):
    assert change(march_2030, new_month=dt.date(2035, 3, 1)).accepted


def test_a_new_first_payment_less_than_five_years_later_is_refused_with_the_earliest_date(march_2030):
    c = change(march_2030, new_month=dt.date(2035, 2, 1))
    assert (c.status, c.rule) == (Status.REJECTED, "EDCP 6.3")
    assert "The earliest new first payment is March 15, 2035." in c.message


def test_a_change_that_accelerates_is_refused(march_2030):
    c = change(march_2030, new_month=dt.date(2029, 3, 1))
    assert (c.status, c.rule) == (Status.REJECTED, "EDCP 6.3")
    assert "never bring a payment forward" in c.message


def test_a_second_change_counts_five_years_from_the_last_changed_date(march_2030):
    assert change(march_2030, new_month=dt.date(2035, 3, 1)).accepted
    too_soon = change(march_2030, when=at(2027, 2, 1), new_month=dt.date(2039, 3, 1))
    assert (too_soon.status, too_soon.rule) == (Status.REJECTED, "EDCP 6.3")
    assert change(march_2030, when=at(2027, 2, 2), new_month=dt.date(2040, 3, 1)).accepted


def test_a_change_of_form_alone_does_not_move_the_payment_and_is_refused(march_2030):
    c = change(march_2030, form="installments", installments=3)
    assert (c.status, c.rule) == (Status.REJECTED, "EDCP 6.3")


def test_the_portal_preview_shows_the_earliest_accepted_date_before_submitting(march_2030):
    preview = schedule_change_preview(
        participation=march_2030, account="specified_date:2030-03", as_of=dt.date(2027, 1, 5)
    )
    assert preview.current_first_payment == dt.date(2030, 3, 15)
    assert preview.latest_filing == dt.date(2029, 3, 15)
    assert preview.earliest_allowed == dt.date(2035, 3, 15)
    # And that date is indeed accepted.
    assert change(march_2030, new_month=preview.earliest_allowed.replace(day=1)).accepted


def test_a_separation_triggered_account_is_delayed_by_at_least_five_years(alice):
    short = change(alice, account="retirement_termination", delay_years=4)
    assert (short.status, short.rule) == (Status.REJECTED, "EDCP 6.3")
    ok = change(alice, account="retirement_termination", delay_years=5)
    assert ok.accepted and ok.takes_effect_on == dt.date(2028, 1, 5)  # EDCP 6.2: 12 months after it is made


def test_after_separation_a_change_within_twelve_months_of_the_first_payment_is_late(alice):
    employment_event_record(
        person=alice.person,
        kind="separation",
        effective_date=dt.date(2027, 6, 10),
        reason="resignation",
        actor="test",
        now=at(2027, 6, 10),
    )
    late = change(alice, account="retirement_termination", when=at(2027, 6, 20), delay_years=5)
    assert (late.status, late.rule) == (Status.REJECTED, "EDCP 6.2")
    assert "July 15, 2027" in late.message


def test_a_plan_without_schedule_changes_refuses_them(db):
    p = participant("RRP")
    c = change(p, account="elective_deferral", delay_years=5)
    assert (c.status, c.rule) == (Status.REJECTED, "RRP 4.02")


def test_a_schedule_change_of_an_account_one_does_not_have_is_refused(alice):
    c = change(alice, account="specified_date:2033-09", new_month=dt.date(2040, 9, 1))
    assert (c.status, c.rule) == (Status.REJECTED, "EDCP 6.1")
    assert "no Specified Date Account for September 2033" in c.message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"account": "specified_date:20x1-03", "new_month": dt.date(2040, 9, 1)},
        {"account": "retirement_termination", "delay_years": -3},
        {
            "account": "retirement_termination",
            "delay_years": 99999,
            "form": "installments" * 5,
            "installments": 99999,
        },
    ],
)
def test_nonsense_schedule_changes_are_refused_and_stored_without_error(march_2030, kwargs):
    c = change(march_2030, **kwargs)
    assert c.status == Status.REJECTED and c.rule.startswith("EDCP") and c.pk


@pytest.mark.parametrize(
    "account, form, installments, delay",
    [
        ("specified_date:2031-13", "lump_sum", None, 0),
        ("retirement_termination", "installments", 99999, 0),
        ("retirement_termination", "lump_sum", None, -12),
        ("retirement_termination", "x" * 80, None, 0),
    ],
)
def test_nonsense_payment_elections_are_refused_and_stored_without_error(
    march_2030, account, form, installments, delay
):
    e = payment(march_2030, account, form, installments, delay_months=delay)
    assert e.status == Status.REJECTED and e.rule.startswith("EDCP") and e.pk
