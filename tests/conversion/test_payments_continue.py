"""Converted benefits live on (issue 14, "Done when"): payments in progress continue on their dates and amounts,
BRP benefits in pay are paid by the payment runs, and the conversion year's year-to-date figures are in the books.

Each test converts the sample package (tests/conversion/sample) and runs production days on top of it through
payments.services.day.production_day_run, the sequence production, the demo and the simulator share.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from books.models import Account, DailyValuation, PayrollDeferral, PayrollRecord
from conversion import apply_payments
from core import valuation_calendar as cal
from core.money import installment
from payments.models import Annuity, PaymentSchedule, ScheduledPayment
from payments.services.day import RunStaff, production_day_run
from plans.models import Fund, FundPrice

PACKAGE = Path(__file__).parent / "sample" / "package"
CD = dt.date(2026, 11, 30)
S = ScheduledPayment.Status


def convert() -> None:
    out = io.StringIO()
    call_command("convert", str(PACKAGE), "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["status"] == "applied", result["exceptions"]


def _user(username: str, role: str):
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def run_days(*, start: dt.date, end: dt.date, growth: Decimal = Decimal("1.0002")) -> None:
    """Production days from `start` through `end`: the payment job, the two-person run, and on a Valuation Date
    the crediting at each fund's last price times `growth`."""
    staff = RunStaff(
        preparer=_user("conv-preparer", "administrator"), approver=_user("conv-approver", "committee")
    )
    day = start
    while day <= end:
        moment = dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC)
        valuation = cal.is_valuation_date(day)
        if valuation:
            for fund in Fund.objects.all():
                last = FundPrice.objects.filter(fund=fund, date__lt=day).order_by("-date").first()
                assert last is not None
                FundPrice.objects.get_or_create(
                    fund=fund,
                    date=day,
                    defaults={
                        "price": (last.price * growth).quantize(Decimal("0.000001")),
                        "loaded_at": moment,
                    },
                )

        def at(_hour: int, m: dt.datetime = moment) -> dt.datetime:
            return m

        result = production_day_run(as_of=day, at=at, staff=staff, credit=valuation)
        assert result.crediting_refused is None, (day, result.crediting_refused.message)
        day += dt.timedelta(days=1)


def _payments(emp: str, plan: str, account: str | None = None) -> list[ScheduledPayment]:
    qs = ScheduledPayment.objects.filter(
        participation__person__employee_number=emp, participation__plan__code=plan
    ).exclude(status=S.CANCELLED)
    if account is not None:
        qs = qs.filter(account__kind=account.split(":")[0])
    return list(qs.order_by("payment_date", "number", "id"))


@pytest.mark.django_db
def test_an_installment_schedule_in_progress_continues_with_the_payments_made_recorded():
    convert()
    # 1172979: 8 annual installments from 2025-07-15, 2 made by the prior recordkeeper (the last 197,354.04)
    payments = _payments("1172979", "EDCP", "retirement_termination")
    assert [(p.kind, p.number, p.of, p.payment_date.isoformat(), p.status) for p in payments[:3]] == [
        ("installment", 1, 8, "2025-07-15", S.PAID),
        ("installment", 2, 8, "2026-07-15", S.PAID),
        ("installment", 3, 8, "2027-07-15", S.SCHEDULED),
    ]
    assert len(payments) == 8 and payments[1].amount == Decimal("197354.04")
    assert all(p.pending_id is None for p in payments[:2])  # paid by the prior recordkeeper: no units moved
    schedule = PaymentSchedule.objects.get(account=payments[0].account)
    assert schedule.form == "installments" and schedule.installments == 8
    # every account of payment_schedules.csv has its schedule; nothing else was scheduled anew
    assert PaymentSchedule.objects.filter(account__participation__plan__kind="account_balance").count() == 24


@pytest.mark.django_db
def test_the_next_installment_is_paid_on_its_date_at_the_plans_amount():
    convert()
    # 3746328's Specified Date Account (2025-12): installment 2 of 5 on 2026-12-15, valued at the end of the month
    # before the payment (EDCP 5.8): the converted value on 2026-11-30 divided by the 4 installments left
    account = Account.objects.get(
        participation__person__employee_number="3746328",
        kind="specified_date",
        specified_month=dt.date(2025, 12, 1),
    )
    value = sum(v.value for v in DailyValuation.objects.filter(account=account, valuation_date=CD))
    run_days(start=dt.date(2026, 12, 1), end=dt.date(2026, 12, 15))
    payment = ScheduledPayment.objects.get(account=account, number=2)
    assert payment.payment_date == dt.date(2026, 12, 15) and payment.of == 5
    assert payment.status in (S.RELEASED, S.PAID), (payment.status, payment.hold_reason)
    assert payment.amount == installment(value, 4)
    assert payment.run is not None and payment.run.status == "released"


@pytest.mark.django_db
def test_brp_benefits_in_pay_are_paid_by_the_next_payment_run():
    convert()
    annuity = Annuity.objects.get(participation__person__employee_number="5434012")
    assert (annuity.status, annuity.form, annuity.monthly, annuity.commencement_date) == (
        Annuity.Status.IN_PAY,
        "js_50",
        Decimal("10302.91"),
        dt.date(2023, 12, 1),
    )
    assert annuity.survivor_name == "Karen James" and annuity.survivor_monthly == Decimal("5151.46")
    paid_before = [p for p in _payments("5434012", "BRP") if p.status == S.PAID]
    assert len(paid_before) == 36 and paid_before[-1].payment_date == dt.date(2026, 11, 1)
    # the survivor of a joint and survivor annuity in pay (6136241 died 2025-05-14): 6,991.40 to Emily Bailey
    survivor = [p for p in _payments("6136241", "BRP") if p.status != S.PAID]
    assert (survivor[0].payment_date, survivor[0].amount, survivor[0].payee_name) == (
        dt.date(2026, 12, 1),
        Decimal("6991.40"),
        "Emily Bailey",
    )
    # the rest of a period certain goes on to the Beneficiary: 66 guaranteed payments left for 6625039
    left = [p for p in _payments("6625039", "BRP") if p.status != S.PAID]
    assert left[0].number == 55 and left[0].of == 120 and left[0].amount == Decimal("11934.20")
    run_days(start=dt.date(2026, 12, 1), end=dt.date(2026, 12, 1))
    december = ScheduledPayment.objects.get(
        participation__person__employee_number="5434012", payment_date=dt.date(2026, 12, 1)
    )
    assert december.number == 37 and december.amount == Decimal("10302.91")
    assert december.status in (S.RELEASED, S.PAID) and december.run is not None


@pytest.mark.django_db
def test_brp_benefits_taken_over_one_call_at_a_time_are_taken_over_the_same(monkeypatch):
    monkeypatch.setattr(apply_payments, "BENEFITS_PER_CALL", 1)  # each benefit in a call of its own
    convert()
    paid_before = [p for p in _payments("5434012", "BRP") if p.status == S.PAID]
    assert len(paid_before) == 36 and paid_before[-1].payment_date == dt.date(2026, 11, 1)
    left = [p for p in _payments("6625039", "BRP") if p.status != S.PAID]
    assert left[0].number == 55 and left[0].of == 120 and left[0].amount == Decimal("11934.20")
    payments = [p for p in _payments("7016764", "BRP") if p.benefit == "Supplemental Benefit"]
    assert payments[0].payment_date == dt.date(2027, 1, 1)
    assert Annuity.objects.filter(status=Annuity.Status.IN_PAY).count() == 5


@pytest.mark.django_db
def test_a_separated_brp_participant_not_yet_paid_starts_on_the_key_employee_date():
    convert()
    payments = [p for p in _payments("7016764", "BRP") if p.benefit == "Supplemental Benefit"]
    assert payments[0].payment_date == dt.date(2027, 1, 1)  # BRP 4.3: six months after the separation


@pytest.mark.django_db
def test_the_conversion_years_year_to_date_figures_are_in_the_books():
    convert()
    # 0974060 (EDCP and RRP): 2026 compensation 1,048,730.00, of which 688,730.00 above the 401(a)(17) limit
    record = PayrollRecord.objects.get(person__employee_number="0974060")
    assert (record.pay_date, record.plan_year, record.gross, record.component) == (
        CD,
        2026,
        Decimal("1048730.00"),
        "year_to_date",
    )
    rows = {d.participation.plan.code: d for d in PayrollDeferral.objects.filter(record=record)}
    assert rows["RRP"].plan_compensation == Decimal("688730.00")
    assert rows["EDCP"].plan_compensation == Decimal("1048730.00")
    contributions: dict[tuple[str, str], Decimal] = {}
    for line in (PACKAGE / "contributions.csv").read_text().splitlines()[1:]:
        emp, plan, year, _account, source, amount, _fica = line.split(",")
        if emp == "0974060" and year == "2026":
            contributions[(plan, source)] = contributions.get((plan, source), Decimal(0)) + Decimal(amount)
    assert rows["RRP"].deferral == contributions.get(("RRP", "deferral"), Decimal(0))
    assert rows["RRP"].matching == contributions.get(("RRP", "matching"), Decimal(0))
    assert rows["EDCP"].deferral == contributions.get(("EDCP", "deferral"), Decimal(0))
    assert PayrollRecord.objects.count() == len(
        [ln for ln in (PACKAGE / "compensation.csv").read_text().splitlines()[1:] if ",2026," in ln]
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_a_year_of_plan_life_on_a_converted_package():
    """Scenario: the sample converted on 2026-11-30, then every production day to 2027-11-30 (a rise of 0.02% a
    Valuation Date in every fund): the units earn, the payments due are paid on their dates, nothing is paid twice."""
    convert()
    run_days(start=dt.date(2026, 12, 1), end=dt.date(2027, 11, 30))
    end = dt.date(2027, 11, 30)
    # crediting: an active participant's accounts grew by the funds' rise, with the same units
    for account in Account.objects.filter(participation__person__employee_number="0974060"):
        before = {v.fund_id: v for v in DailyValuation.objects.filter(account=account, valuation_date=CD)}
        after = {v.fund_id: v for v in DailyValuation.objects.filter(account=account, valuation_date=end)}
        assert before.keys() == after.keys()
        for fund_id, v in after.items():
            assert v.units >= before[fund_id].units and v.value > before[fund_id].value
    # the installment in progress: 3 of 8 on 2027-07-15, valued at the end of June over the 6 left (EDCP 5.8)
    third = ScheduledPayment.objects.get(
        participation__person__employee_number="1172979", account__kind="retirement_termination", number=3
    )
    assert third.payment_date == dt.date(2027, 7, 15) and third.status == S.PAID
    june = cal.last_valuation_date(dt.date(2027, 6, 30))
    value = sum(v.value for v in DailyValuation.objects.filter(account=third.account, valuation_date=june))
    assert third.amount == installment(value, 6)
    # the payments due on or before the conversion date and not made (RRP lump sums of 1216279) are paid once
    lumps = _payments("1216279", "RRP")
    assert lumps and all(p.status == S.PAID for p in lumps)
    for p in lumps:
        assert sum(v.value for v in DailyValuation.objects.filter(account=p.account, valuation_date=end)) == 0
    # the BRP: twelve more monthly payments of the fixed amount, December through November
    brp = [p for p in _payments("5434012", "BRP") if p.payment_date > CD and p.payment_date <= end]
    assert [p.number for p in brp] == list(range(37, 49))
    assert all(p.status == S.PAID and p.amount == Decimal("10302.91") for p in brp)


@pytest.mark.django_db
def test_an_override_the_prior_administrator_determined_is_taken_over_as_the_plans_lump_sum(tmp_path):
    """FORMAT.md payment_schedules.csv `override`: the package says the prior administrator paid a small balance
    (EDCP 5.7) and a change-in-control (EDCP 5.6) lump sum overriding the elections; these books begin after the
    separations, so they cannot make either test, and honor the determination (not a conflict with the records)."""
    package = tmp_path / "package"
    shutil.copytree(PACKAGE, package)
    schedules = package / "payment_schedules.csv"
    text = schedules.read_text()
    for old, new in (
        (
            "3603037,EDCP,retirement_termination,separation,2026-06-22,,installments,6,6,0,2027-07-15,,,2027-07-15,"
            "balance_divided_by_remaining,participant",
            "3603037,EDCP,retirement_termination,separation,2026-06-22,small_balance,lump_sum,,1,0,2026-07-15,,,"
            "2026-07-15,whole_balance,participant",
        ),
        (
            "7276367,EDCP,retirement_termination,separation,2026-07-27,,installments,9,9,0,2027-08-15,,,2027-08-15,"
            "balance_divided_by_remaining,participant",
            "7276367,EDCP,retirement_termination,separation,2026-07-27,change_in_control,lump_sum,,1,0,2026-08-15,,,"
            "2026-08-15,whole_balance,participant",
        ),
    ):
        assert old in text
        text = text.replace(old, new)
    schedules.write_text(text)
    out = io.StringIO()
    call_command("convert", str(package), "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["status"] == "applied", result["exceptions"]
    for employee, benefit, cite, day in (
        ("3603037", "Small balance", "EDCP 5.7", dt.date(2026, 7, 15)),
        ("7276367", "Change in control", "EDCP 5.6", dt.date(2026, 8, 15)),
    ):
        account = Account.objects.get(
            participation__person__employee_number=employee, kind="retirement_termination"
        )
        schedule = PaymentSchedule.objects.get(account=account, kind=PaymentSchedule.Kind.BENEFIT)
        assert (schedule.benefit, schedule.form, schedule.cite) == (benefit, "lump_sum", cite)
        assert (
            "determined by the prior administrator" in schedule.summary
            and "payment_schedules.csv" in schedule.summary
        )
        payments = list(ScheduledPayment.objects.filter(schedule=schedule).exclude(status=S.CANCELLED))
        assert [(p.kind, p.share, p.payment_date) for p in payments] == [("lump_sum", "all", day)]
    # the other accounts keep their elections: an override is the account's own, never the person's
    small = PaymentSchedule.objects.filter(account__participation__person__employee_number="3603037")
    assert [s.account.kind for s in small.filter(benefit="Small balance")] == ["retirement_termination"]
