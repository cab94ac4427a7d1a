"""Paying the BRP (4.2-4.3, 5.1-5.2): monthly payments of a fixed amount through the ordinary payment runs.

Figures on the toy basis of tests/pensions/factories.py (ä65 = 18.5/12, ä60 = 78.5/12, ä65:60 = 18.5/12, 0%):
the Supplemental Benefit is 180,000 - 110,000 = 70,000 a year as a Single Life Annuity (5,833.33 a month).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import DefinedBenefitRecord, PendingTransaction
from core.models import JobRun
from payments.models import Annuity, PaymentSchedule, ScheduledPayment
from payments.services.annuities import annuities_extend, annuity_survivor_death_record
from payments.services.processing import payment_day_process
from payments.services.runs import payment_run_approve, payment_run_csv, payment_run_prepare
from plans.models import DatedFigure
from tests.conftest import eastern
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation, key_employees, separate

pytestmark = pytest.mark.django_db
S = ScheduledPayment.Status


def rows(participation, *, status=None):
    qs = ScheduledPayment.objects.filter(participation=participation).exclude(status=S.CANCELLED)
    if status:
        qs = qs.filter(status=status)
    return list(qs.order_by("payment_date", "id"))


def credited(day: dt.date) -> None:
    """The crediting of `day` is done (the payment job values what falls due by then)."""
    at = eastern(day.year, day.month, day.day, 18)
    JobRun.objects.update_or_create(
        kind="crediting",
        key=day.isoformat(),
        defaults={"status": JobRun.Status.DONE, "started_at": at, "heartbeat_at": at},
    )


def test_a_single_participant_is_paid_a_single_life_annuity_from_the_first_of_the_month_after_separation(
    toy_basis, no_key_employees
):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.status == Annuity.Status.IN_PAY and annuity.form == "single_life"
    assert annuity.monthly == Decimal("5833.33")  # 70,000 / 12
    planned = rows(participation)
    # BRP 4.2(a): May 1, 2026; monthly on the 1st (4.2(c)), planned through the 1st of the month a year ahead
    assert [p.payment_date for p in planned][:3] == [
        dt.date(2026, 5, 1),
        dt.date(2026, 6, 1),
        dt.date(2026, 7, 1),
    ]
    assert planned[-1].payment_date == dt.date(2027, 4, 1)
    assert {p.amount for p in planned} == {Decimal("5833.33")}
    assert {(p.kind, p.share) for p in planned} == {("annuity", "defined")}
    assert planned[0].cite == "BRP 4.2(a)" and planned[1].cite == "BRP 4.2(c)"
    schedule = PaymentSchedule.objects.get(participation=participation)
    assert "BRP 4.2(a)" in schedule.summary and "BRP 3.4(c)" in schedule.summary


def test_a_key_employee_is_first_paid_after_six_months_with_the_missed_payments(toy_basis, no_key_employees):
    participation = brp_participation()
    key_employees(2025, participation.person)
    separate(participation, dt.date(2026, 4, 20))
    planned = rows(participation)
    # BRP 4.3: the 1st day of the month after the six-month anniversary (October 20) is November 1, 2026;
    # May through October (6 payments) are caught up: 7 x 5,833.33 = 40,833.31
    assert planned[0].payment_date == dt.date(2026, 11, 1) and planned[0].amount == Decimal("40833.31")
    assert planned[0].cite == "BRP 4.3" and "6 monthly payments missed" in planned[0].reason
    assert planned[1].payment_date == dt.date(2026, 12, 1) and planned[1].amount == Decimal("5833.33")


def test_an_unknown_key_employee_list_holds_the_first_six_months_until_it_is_recorded(toy_basis):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    held = rows(participation, status=S.HELD)
    assert [p.payment_date for p in held] == [dt.date(2026, m, 1) for m in range(5, 11)]
    assert {p.hold_code for p in held} == {"key_employee_unknown"}
    key_employees(2025, participation.person)
    payment_day_process(day=dt.date(2026, 4, 22), now=eastern(2026, 4, 22, 7))
    assert rows(participation)[0].payment_date == dt.date(2026, 11, 1)
    assert not rows(participation, status=S.HELD)


def test_the_elected_lump_sum_is_one_payment_of_the_present_value(toy_basis, no_key_employees):
    from elections.services import annuity_election_submit

    participation = brp_participation()
    annuity_election_submit(
        participation=participation,
        form="lump_sum",
        defer_years=5,
        submitted_at=eastern(2019, 1, 10),
        channel="staff",
        actor="test",
    )
    separate(participation, dt.date(2026, 4, 20))  # the change took effect 2020-01-10; deferred 5 years
    (held,) = rows(participation)
    assert held.hold_code == "maximum_benefit_limit" and "415(b)(1)(A) limit for 2031" in held.hold_reason
    DatedFigure.objects.create(code="415(b)(1)(A)", year=2031, amount=Decimal("330000"))
    payment_day_process(day=dt.date(2026, 4, 21), now=eastern(2026, 4, 21, 7))
    (payment,) = rows(participation)
    # BRP 4.2(d): five years after May 1, 2026, at age 70: on the toy table only the year of age 70 is left, with
    # survival 1 - k/12 in month k: 70,000 x 6.5/12 = 37,916.67 (0%)
    assert payment.payment_date == dt.date(2031, 5, 1) and payment.kind == "lump_sum"
    assert payment.amount == Decimal("37916.67")
    assert Annuity.objects.get(participation=participation).status == Annuity.Status.COMPLETE


def test_a_married_participant_without_an_election_gets_the_qjsa(toy_basis, no_key_employees):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    # 70,000 x ä65 / (ä65 + 50% (ä60 - ä65:60)) = 70,000 x 18.5 / 48.5 = 26,701.03 a year
    assert annuity.form == "qjsa" and annuity.annual == Decimal("26701.03")
    assert annuity.monthly == Decimal("2225.09") and annuity.survivor_monthly == Decimal("1112.54")
    assert annuity.survivor_name == "Dana Roe"


def test_without_pension_plan_figures_the_benefit_waits_on_the_staff_queue_then_follows_them(
    toy_basis, no_key_employees
):
    from pensions.services.benefit import pension_figures_record

    participation = brp_participation()
    DefinedBenefitRecord.objects.filter(participation=participation).delete()
    separate(participation, dt.date(2026, 4, 20))
    (held,) = rows(participation)
    assert held.status == S.HELD and held.hold_code == "pension_figures" and held.amount is None
    assert "BRP 3.2" in held.hold_reason
    pension_figures_record(
        participation=participation,
        as_of=dt.date(2026, 4, 30),
        actor="test",
        now=eastern(2026, 4, 30),
        unlimited_annual_benefit=Decimal("150000.00"),
        payable_annual_benefit=Decimal("110000.00"),
        benefit_service_years=Decimal("20"),
        early_retirement_date=dt.date(2016, 5, 1),
        normal_retirement_date=dt.date(2026, 5, 1),
    )
    planned = rows(participation)
    assert planned[0].status == S.SCHEDULED and planned[0].amount == Decimal("3333.33")  # 40,000 / 12


def test_an_annuity_payment_is_paid_through_the_run_without_selling_units(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    credited(dt.date(2026, 4, 30))
    payment_day_process(day=dt.date(2026, 5, 1), now=eastern(2026, 5, 1, 7))
    first = rows(participation)[0]
    assert first.status == S.VALUED and first.amount == Decimal("5833.33")
    run = payment_run_prepare(
        period_end=dt.date(2026, 5, 1), actor=staff_user("prep", "administrator"), now=eastern(2026, 5, 1, 8)
    )
    first.refresh_from_db()
    assert first.federal_withholding == Decimal("1283.33")  # 22% supplemental rate
    assert first.state_withholding == Decimal("335.42") and first.net_amount == Decimal("4214.58")  # VA 5.75%
    run = payment_run_approve(run=run, actor=staff_user("appr", "committee"), now=eastern(2026, 5, 1, 10))
    first.refresh_from_db()
    assert first.status == S.PAID and first.paid_on == dt.date(2026, 5, 1) and first.pending is None
    assert not PendingTransaction.objects.filter(account__participation=participation).exists()
    assert "Monthly payment 1" in payment_run_csv(run=run) and "BRP 4.2(a)" in payment_run_csv(run=run)


def test_a_run_approved_before_the_release_date_is_paid_by_the_job_on_that_date(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    credited(dt.date(2026, 4, 30))
    payment_day_process(day=dt.date(2026, 4, 30), now=eastern(2026, 4, 30, 7))
    run = payment_run_prepare(
        period_end=dt.date(2026, 5, 1), actor=staff_user("prep", "administrator"), now=eastern(2026, 4, 30, 8)
    )
    payment_run_approve(run=run, actor=staff_user("appr", "committee"), now=eastern(2026, 4, 30, 10))
    first = rows(participation)[0]
    assert first.status == S.RELEASED
    payment_day_process(day=dt.date(2026, 5, 1), now=eastern(2026, 5, 1, 7))
    first.refresh_from_db()
    assert first.status == S.PAID and first.paid_on == dt.date(2026, 5, 1)


def test_the_daily_job_keeps_a_year_of_monthly_payments_planned(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    assert rows(participation)[-1].payment_date == dt.date(2027, 4, 1)
    assert (
        annuities_extend(day=dt.date(2026, 4, 30), now=eastern(2026, 4, 30, 7)) == 0
    )  # same month: nothing to do
    credited(dt.date(2026, 5, 29))
    payment_day_process(day=dt.date(2026, 6, 1), now=eastern(2026, 6, 1, 7))
    assert rows(participation)[-1].payment_date == dt.date(2027, 6, 1)
    assert len(rows(participation)) == 14


def test_death_stops_a_single_life_annuity_after_the_month_of_death(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 7, 15), kind="death")
    assert [p.payment_date for p in rows(participation)] == [dt.date(2026, m, 1) for m in (5, 6, 7)]
    assert Annuity.objects.get(participation=participation).status == Annuity.Status.COMPLETE


def test_a_joint_and_survivor_annuity_continues_to_the_survivor_and_stops_after_the_survivor_dies(
    toy_basis, no_key_employees
):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 7, 15), kind="death")
    planned = rows(participation)
    assert [(p.payment_date, p.amount, p.payee_name) for p in planned[:4]] == [
        (dt.date(2026, 5, 1), Decimal("2225.09"), ""),
        (dt.date(2026, 6, 1), Decimal("2225.09"), ""),
        (dt.date(2026, 7, 1), Decimal("2225.09"), ""),
        (dt.date(2026, 8, 1), Decimal("1112.54"), "Dana Roe"),
    ]
    assert planned[3].cite == "BRP 5.2" and planned[3].benefit == "Post-Retirement Survivor Benefit"
    annuity = Annuity.objects.get(participation=participation)
    annuity_survivor_death_record(
        annuity=annuity, died_on=dt.date(2026, 10, 3), actor="test", now=eastern(2026, 10, 5)
    )
    assert [p.payment_date for p in rows(participation)][-1] == dt.date(2026, 10, 1)


def test_a_period_certain_pays_the_rest_of_the_guaranteed_payments_to_the_beneficiary(
    toy_basis, no_key_employees
):
    from elections.services import annuity_election_submit
    from participants.services import beneficiaries_designate

    participation = brp_participation()
    annuity_election_submit(
        participation=participation,
        form="period_certain_60",
        defer_years=0,
        submitted_at=eastern(2026, 1, 10),
        channel="staff",
        actor="test",
    )
    beneficiaries_designate(
        person=participation.person,
        plan=participation.plan,
        actor="test",
        beneficiaries=[{"tier": "primary", "name": "Robin Heir", "percent": 100}],
    )
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    # 70,000 x (18.5/12) / 5 (60 certain payments at 0%) = 21,583.33 a year, 1,798.61 a month
    assert annuity.annual == Decimal("21583.33") and annuity.monthly == Decimal("1798.61")
    separate(participation, dt.date(2026, 7, 15), kind="death")
    annuities_extend(day=dt.date(2031, 5, 1), now=eastern(2031, 5, 1))
    planned = rows(participation)
    assert len(planned) == 60 and planned[-1].payment_date == dt.date(2031, 4, 1)
    assert {p.payee_name for p in planned[3:]} == {"Robin Heir"} and planned[
        -1
    ].label == "Monthly payment 60 of 60 guaranteed"
    assert Annuity.objects.get(participation=participation).status == Annuity.Status.COMPLETE


def test_brp_4_3_a_key_employee_who_dies_in_the_wait_is_paid_when_the_wait_ends_not_after_death(
    toy_basis, no_key_employees
):
    participation = brp_participation()
    key_employees(2025, participation.person)
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 7, 15), kind="death")
    (payment,) = rows(participation)
    # May, June, July: 3 x 5,833.33 = 17,499.99; 4.3 has no exception for death: paid November 1, 2026 (the
    # 1st of the month after the six-month anniversary, October 20), to whoever is then entitled: the estate
    assert payment.payment_date == dt.date(2026, 11, 1) and payment.amount == Decimal("17499.99")
    assert payment.payee_name == f"Estate of {participation.person.full_name}" and payment.cite == "BRP 4.3"
    assert Annuity.objects.get(participation=participation).status == Annuity.Status.COMPLETE


def test_brp_4_3_the_survivor_payments_that_fall_in_the_wait_are_paid_when_it_ends(
    toy_basis, no_key_employees
):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    key_employees(2025, participation.person)
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 7, 15), kind="death")
    planned = [(p.payment_date, p.amount, p.payee_name) for p in rows(participation)]
    # QJSA 2,225.09 a month (survivor half 1,112.54): May-July to the estate on November 1 (3 x 2,225.09);
    # the survivor's August-October wait with November's payment on November 1 (4 x 1,112.54), then monthly
    estate = f"Estate of {participation.person.full_name}"
    assert sorted(p for p in planned if p[0] == dt.date(2026, 11, 1)) == sorted(
        [
            (dt.date(2026, 11, 1), Decimal("6675.27"), estate),
            (dt.date(2026, 11, 1), Decimal("4450.16"), "Dana Roe"),
        ]
    )
    assert (dt.date(2026, 12, 1), Decimal("1112.54"), "Dana Roe") in planned
    assert not [p for p in planned if p[0] < dt.date(2026, 11, 1)]


def test_the_pre_retirement_survivor_benefit_is_half_of_a_50_percent_joint_and_survivor_annuity(toy_basis):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    separate(participation, dt.date(2026, 4, 10), kind="death")
    annuity = Annuity.objects.get(participation=participation)
    # BRP 5.1(b): the survivor part of the 50% J&S just before death: 26,701.03 x 50% = 13,350.52 a year;
    # from the later of June 1, 2026 (2nd month after the month of death) and May 1, 2016 (after the ERD)
    assert annuity.benefit == "Pre-Retirement Survivor Benefit" and annuity.annual == Decimal("13350.52")
    planned = rows(participation)
    assert planned[0].payment_date == dt.date(2026, 6, 1) and planned[0].amount == Decimal("1112.54")
    assert planned[0].payee_name == "Dana Roe" and planned[0].cite == "BRP 5.1"


def test_the_pre_retirement_survivor_benefit_waits_for_the_early_retirement_date(toy_basis):
    participation = brp_participation(
        marital="married",
        spouse_birth=dt.date(1966, 5, 1),
        spouse_name="Dana Roe",
        erd=dt.date(2027, 8, 15),
        nrd=dt.date(2031, 5, 1),
    )
    separate(participation, dt.date(2026, 4, 10), kind="death")
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.first_payment_date == dt.date(2027, 9, 1) and not rows(
        participation
    )  # the month after the ERD
    annuities_extend(
        day=dt.date(2026, 9, 1), now=eastern(2026, 9, 1, 7)
    )  # now within the twelve months planned
    assert rows(participation)[0].payment_date == dt.date(2027, 9, 1)


def test_no_pre_retirement_survivor_benefit_under_ten_years_of_benefit_service(toy_basis):
    participation = brp_participation(marital="married", spouse_birth=dt.date(1966, 5, 1), service="9.50")
    separate(participation, dt.date(2026, 4, 10), kind="death")
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.status == Annuity.Status.NOT_PAYABLE and not rows(participation)
    assert "BRP 5.1" in annuity.schedule.summary


def test_a_benefit_in_pay_stays_fixed_when_the_pension_plan_figures_change(toy_basis, no_key_employees):
    from pensions.services.benefit import pension_figures_record

    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    credited(dt.date(2026, 4, 30))
    payment_day_process(day=dt.date(2026, 5, 1), now=eastern(2026, 5, 1, 7))
    run = payment_run_prepare(
        period_end=dt.date(2026, 5, 1), actor=staff_user("prep", "administrator"), now=eastern(2026, 5, 1, 8)
    )
    payment_run_approve(run=run, actor=staff_user("appr", "committee"), now=eastern(2026, 5, 1, 10))
    pension_figures_record(
        participation=participation,
        as_of=dt.date(2026, 5, 10),
        actor="test",
        now=eastern(2026, 5, 10),
        unlimited_annual_benefit=Decimal("180000.00"),
        payable_annual_benefit=Decimal("130000.00"),
        benefit_service_years=Decimal("18.5"),
        early_retirement_date=dt.date(2016, 5, 1),
        normal_retirement_date=dt.date(2026, 5, 1),
    )
    # BRP 3.4(c): not reduced when more becomes payable from the Pension Plan
    assert {p.amount for p in rows(participation)} == {Decimal("5833.33")}
    assert Annuity.objects.get(participation=participation).fixed_on == dt.date(2026, 5, 1)


def test_no_benefit_for_a_participant_who_left_before_early_retirement(toy_basis, no_key_employees):
    participation = brp_participation(erd=dt.date(2027, 5, 1), nrd=dt.date(2031, 5, 1))
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.status == Annuity.Status.NOT_PAYABLE and not rows(participation)
    assert "BRP 3.1(ii)" in annuity.schedule.summary


def test_a_married_participant_without_the_spouses_birth_date_waits_for_it(toy_basis, no_key_employees):
    from pensions.services.benefit import pension_figures_record

    participation = brp_participation(marital="married")
    separate(participation, dt.date(2026, 4, 20))
    (held,) = rows(participation)
    assert held.hold_code == "survivor_birth_date" and "BRP 4.2(c)" in held.hold_reason
    pension_figures_record(
        participation=participation,
        as_of=dt.date(2026, 4, 25),
        actor="test",
        now=eastern(2026, 4, 25),
        unlimited_annual_benefit=Decimal("180000.00"),
        payable_annual_benefit=Decimal("110000.00"),
        benefit_service_years=Decimal("18.5"),
        early_retirement_date=dt.date(2016, 5, 1),
        normal_retirement_date=dt.date(2026, 5, 1),
        spouse_name="Dana Roe",
        spouse_birth_date=dt.date(1966, 5, 1),
    )
    assert rows(participation)[0].amount == Decimal("2225.09")  # the QJSA of the default (BRP 4.2(c))
    assert ScheduledPayment.objects.get(pk=held.pk).status == S.CANCELLED


def test_brp_appendix_a_the_pre_2005_benefit_is_paid_from_the_pension_plan_start_without_the_key_employee_wait(
    toy_basis, no_key_employees
):
    participation = brp_participation()
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    key_employees(2025, participation.person)
    separate(participation, dt.date(2026, 4, 20))
    planned = rows(participation)
    pre = [p for p in planned if p.benefit == "Pre-2005 Supplemental Benefit"]
    post = [p for p in planned if p.benefit == "Supplemental Benefit"]
    # App. A 3: 20,000 a year in the Pension Plan's form (single life, the participant is single): 1,666.67 a
    # month from May 1, 2026, the Pension Plan's start; no Key Employee delay (App. A is outside 409A)
    assert (pre[0].payment_date, pre[0].amount, pre[0].cite) == (
        dt.date(2026, 5, 1),
        Decimal("1666.67"),
        "BRP App. A 3(b)",
    )
    # 4.3 keeps the rest waiting: 70,000 - 20,000 = 50,000 a year, 4,166.67 a month; November 1 pays 7 of them
    assert (post[0].payment_date, post[0].amount) == (dt.date(2026, 11, 1), Decimal("29166.69"))
    assert Annuity.objects.get(participation=participation).pre_2005["monthly"] == "1666.67"


def test_brp_appendix_a_the_pre_2005_benefit_keeps_the_pension_plan_form_when_a_lump_sum_is_elected(
    toy_basis, no_key_employees
):
    from elections.services import annuity_election_submit

    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    election = annuity_election_submit(
        participation=participation,
        form="lump_sum",
        defer_years=0,
        submitted_at=eastern(2007, 6, 1),
        channel="staff",
        actor="test",
    )
    assert election.accepted  # BRP 4.2(b): the initial election of 2007 stands as made
    separate(participation, dt.date(2026, 4, 20))
    planned = rows(participation)
    lump = [p for p in planned if p.kind == "lump_sum"]
    pre = [p for p in planned if p.benefit == "Pre-2005 Supplemental Benefit"]
    # Post-2004: 50,000 x ä65 = 50,000 x 18.5/12 = 77,083.33, once, on May 1, 2026
    assert [(p.payment_date, p.amount) for p in lump] == [(dt.date(2026, 5, 1), Decimal("77083.33"))]
    # Pre-2005 in the Pension Plan's QJSA: 20,000 x 18.5 / (18.5 + 0.5 x (78.5 - 18.5)) = 20,000 x 18.5/48.5
    # = 7,628.87 a year, 635.74 a month from May 1, 2026
    assert pre[0].payment_date == dt.date(2026, 5, 1) and {p.amount for p in pre} == {Decimal("635.74")}
