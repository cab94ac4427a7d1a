"""Reads of payment schedules: what elections ask, the portal calendar, the staff queues and forecasts."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Sum

from books.models import Account
from core import memo
from core.dates import add_months, add_years
from core.money import ZERO, installment, money, percent_of
from participants.models import Participation
from participants.selectors import key_employee_status, termination_event
from payments.models import (
    Annuity,
    DomesticRelationsOrder,
    EmergencyWithdrawal,
    PaymentRun,
    PaymentSchedule,
    ScheduledPayment,
)
from payments.services.annuities import is_annuity_account
from payments.services.engine import ScheduleResult, compute_schedule, key_employee_date, payment_date_for
from payments.services.facts import load_facts
from payments.services.values import available_values, credited_through
from payments.services.withholding import WithholdingError, withholding_apply

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from participants.models import Person
    from payments.models import DomesticRelationsOrder, EmergencyWithdrawal

S = ScheduledPayment.Status
STARTED = (S.APPROVED, S.RELEASED, S.PAID)


def account_payments_started(
    *, participation: Participation, account_kind: str, specified_month: dt.date | None
) -> bool:
    """Has a benefit payment of this account been released or paid (EDCP 6.2: its schedule can no longer change)?
    The participant's accounts that have are read at once, and once within a core.memo run (issue 15)."""
    started = memo.remember(
        ("accounts_paying", participation.pk),
        lambda: set(
            ScheduledPayment.objects.filter(
                participation=participation,
                schedule__kind=PaymentSchedule.Kind.BENEFIT,
                status__in=STARTED,
            )
            .values_list("account__kind", "account__specified_month")
            .distinct()
        ),
    )
    return (account_kind, specified_month) in started


def payments_upcoming(*, start: dt.date, end: dt.date) -> QuerySet[ScheduledPayment]:
    return (
        ScheduledPayment.objects.filter(release_date__gte=start, release_date__lte=end)
        .exclude(status=S.CANCELLED)
        .select_related("participation__person", "participation__plan", "account", "run")
        .order_by("release_date", "participation__person__employee_number", "account_id", "number")
    )


def payments_held() -> QuerySet[ScheduledPayment]:
    """The staff work queue: every held payment, oldest Payment Date first, until its hold is resolved."""
    return (
        ScheduledPayment.objects.filter(status=S.HELD)
        .select_related("participation__person", "participation__plan", "account")
        .order_by("payment_date", "id")
    )


def person_calendar(*, person: Person) -> list[ScheduledPayment]:
    """Every scheduled and paid payment of one person (the portal's calendar), never anyone else's."""
    return list(
        ScheduledPayment.objects.filter(participation__person=person)
        .exclude(status=S.CANCELLED)
        # the account's own participation and plan too: its label reads the plan version (Account.label)
        .select_related(
            "participation__plan", "participation__person", "account__participation__plan", "schedule"
        )
        .order_by("payment_date", "account_id", "number")
    )


def benefit_parts(*, payments: list[ScheduledPayment]) -> dict[int, tuple[str, str]]:
    """BRP Appendix A: for a defined benefit with a Pre-2005 Supplemental Benefit, the part each payment belongs
    to (payment id -> (part, its section)): the Pre-2005 part is paid apart from the Post-2004 part (1.3(o))."""
    schedule_ids = {p.schedule_id for p in payments if p.share == ScheduledPayment.Share.DEFINED}
    if not schedule_ids:
        return {}
    split = {
        a.schedule_id: a
        for a in Annuity.objects.filter(schedule_id__in=schedule_ids)
        .exclude(pre_2005={})
        .select_related("participation__plan")
    }
    out: dict[int, tuple[str, str]] = {}
    for p in payments:
        annuity = split.get(p.schedule_id)
        if annuity is None:
            continue
        version = annuity.participation.plan.version_on(annuity.event_date or p.payment_date)
        rule = version.provision("db_pre_2005", None) or {}
        if p.benefit.startswith("Pre-2005"):
            out[p.id] = ("Pre-2005 part", annuity.pre_2005.get("cite", ""))
        else:
            out[p.id] = ("Post-2004 part", rule.get("post_2004_cite", ""))
    return out


def person_schedules(*, person: Person) -> list[PaymentSchedule]:
    return list(
        PaymentSchedule.objects.filter(participation__person=person)
        .select_related("participation__plan", "account")
        .prefetch_related("payments")
        .order_by("participation__plan__code", "account_id", "kind", "id")
    )


def payment_estimates(*, payments: list[ScheduledPayment], on: dt.date) -> dict[int, Decimal]:
    """Gross amount of each payment: its valued amount, else an estimate from today's available value."""
    open_ = [p for p in payments if p.amount is None]
    values = (
        available_values(account_ids={p.account_id for p in open_}, on=on, credited=credited_through())
        if open_
        else {}
    )
    out: dict[int, Decimal] = {}
    left = dict(values)
    bases: dict[tuple, Decimal] = {}  # the payees' parts of one benefit share the value before any of them
    for p in sorted(payments, key=lambda x: (x.account_id, x.payment_date, x.number, x.id)):
        if p.amount is not None:
            out[p.id] = p.amount
            continue
        available = left.get(p.account_id, ZERO)
        if p.share in ScheduledPayment.PARTS:
            base = bases.setdefault((p.account_id, p.payment_date, p.trigger), available)
            amount = money(min(percent_of(base, p.percent or 0), available))
            left[p.account_id] = available - amount
            out[p.id] = amount
            continue
        if p.share == ScheduledPayment.Share.PERCENT:
            amount = percent_of(available, p.percent or 0)
        elif p.share == ScheduledPayment.Share.INSTALLMENT:
            amount = installment(available, p.of - p.number + 1)
        else:
            amount = available
        amount = money(min(amount, available))
        left[p.account_id] = available - amount
        out[p.id] = amount
    return out


@dataclass(frozen=True)
class PaymentFigures:
    """Gross, federal and state withholding and net of one payment: the run's figures once it is in a run, else
    estimates from the dated withholding tables on its release date (EDCP 8.3, RRP 4.03, BRP 10.1)."""

    gross: Decimal
    federal: Decimal | None
    state: Decimal | None
    net: Decimal | None
    estimate: bool
    basis: str = ""


FIGURES_FINAL = (S.IN_RUN, S.APPROVED, S.RELEASED, S.PAID)


def payment_figures(*, payments: list[ScheduledPayment], on: dt.date) -> dict[int, PaymentFigures]:
    """Each payment's gross, withholding and net as the payment job would compute them; writes nothing."""
    gross = payment_estimates(payments=payments, on=on)
    out: dict[int, PaymentFigures] = {}
    open_: list[ScheduledPayment] = []
    for p in payments:
        if p.status in FIGURES_FINAL and p.net_amount is not None:
            out[p.id] = PaymentFigures(
                gross=p.amount or ZERO,
                federal=p.federal_withholding,
                state=p.state_withholding,
                net=p.net_amount,
                estimate=False,
                basis=p.withholding_basis,
            )
        elif p.status != S.CANCELLED:
            # A copy: the estimate is computed in memory and never saved.
            twin = copy.copy(p)
            twin.amount = gross.get(p.id, ZERO)
            open_.append(twin)
    try:
        withholding_apply(payments=open_, exclude_ids={p.id for p in payments})
    except WithholdingError:
        open_ = [_gross_only(p) for p in open_]
    for twin in open_:
        out[twin.id] = PaymentFigures(
            gross=twin.amount or ZERO,
            federal=twin.federal_withholding,
            state=twin.state_withholding,
            net=twin.net_amount,
            estimate=True,
            basis=twin.withholding_basis or "",
        )
    return out


def _gross_only(p: ScheduledPayment) -> ScheduledPayment:
    """A payment whose withholding cannot be estimated (no rates in force): gross only."""
    p.federal_withholding = p.state_withholding = p.net_amount = None
    return p


@dataclass(frozen=True)
class KeyEmployeeWait:
    """A Key Employee's wait (EDCP 5.1(b)): if they separated on `separation`, the first payment date."""

    plan_name: str
    identification_year: int
    separation: dt.date
    standard: dt.date
    first_payment: dt.date
    rule: str
    cite: str


def key_employee_waits(*, person: Person, on: dt.date) -> list[KeyEmployeeWait]:
    """For each plan with a Key Employee delay that lists this person as a Key Employee today: the date the
    schedule engine would use for a separation today, against the standard date (read-only)."""
    out: list[KeyEmployeeWait] = []
    if termination_event(person=person) is not None:
        return out  # separated (or dead): the calendar's own payment dates already carry the wait
    for participation in Participation.objects.filter(person=person).select_related("plan"):
        version = participation.plan.version_on(on)
        spec = version.provision("key_employee", None)
        if not spec:
            continue
        status = key_employee_status(
            person=person,
            on=on,
            effective_month=spec.get("effective_month", 4),
            effective_day=spec.get("effective_day", 1),
        )
        if not status.key:
            continue
        for rule in version.provision("distribution", []) or []:
            delay = rule.get("key_employee_delay")
            if rule.get("trigger") != "separation" or not delay:
                continue
            standard = payment_date_for(rule=rule["payment_date"], event=on)
            later = key_employee_date(rule=delay, separation=on)
            out.append(
                KeyEmployeeWait(
                    plan_name=participation.plan.name,
                    identification_year=status.identification_year,
                    separation=on,
                    standard=standard,
                    first_payment=max(standard, later),
                    rule=rule["name"],
                    cite=delay.get("cite", rule["cite"]),
                )
            )
            break
    return out


def forecast(*, start: dt.date, months: int = 12, years: int = 10) -> dict:
    """Scheduled payments by month (next `months`) and by year (next `years`), amounts valued or estimated."""
    end = max(add_months(start, months), add_years(start, years))
    payments = list(
        ScheduledPayment.objects.filter(payment_date__gte=start, payment_date__lt=end)
        .exclude(status__in=[S.CANCELLED, S.PAID])
        .only("id", "account_id", "payment_date", "number", "of", "share", "percent", "amount", "trigger")
    )
    amounts = payment_estimates(payments=payments, on=start)
    by_month = {add_months(start.replace(day=1), i): ZERO for i in range(months)}
    by_year = {start.year + i: ZERO for i in range(years)}
    for p in payments:
        month = p.payment_date.replace(day=1)
        if month in by_month:
            by_month[month] += amounts[p.id]
        if p.payment_date.year in by_year:
            by_year[p.payment_date.year] += amounts[p.id]
    return {"by_month": list(by_month.items()), "by_year": list(by_year.items()), "count": len(payments)}


# --- unforeseeable emergencies (EDCP 5.5) and domestic relations orders (5.9) --------------------------


def emergencies(*, status: str = "") -> QuerySet[EmergencyWithdrawal]:
    qs = EmergencyWithdrawal.objects.select_related("participation__person", "participation__plan")
    return qs.filter(status=status) if status else qs


def person_emergencies(*, person: Person) -> QuerySet[EmergencyWithdrawal]:
    """One participant's own requests (the portal), never anyone else's."""
    return emergencies().filter(participation__person=person)


def emergency_payments(*, emergency: EmergencyWithdrawal) -> list[ScheduledPayment]:
    return list(
        ScheduledPayment.objects.filter(schedule__emergency=emergency)
        .select_related("account", "run")
        .order_by("id")
    )


def emergency_participations(*, person: Person, on: dt.date) -> list[Participation]:
    """The person's plans that pay unforeseeable emergencies (a plan version with the `emergency` provision)."""
    out = []
    for participation in Participation.objects.filter(person=person).select_related("plan", "person"):
        if participation.plan.version_on(on).provision("emergency", None):
            out.append(participation)
    return out


def orders() -> QuerySet[DomesticRelationsOrder]:
    return DomesticRelationsOrder.objects.select_related("participation__person", "participation__plan")


def order_payments(*, order: DomesticRelationsOrder) -> list[ScheduledPayment]:
    return list(
        ScheduledPayment.objects.filter(schedule__dro=order).select_related("account", "run").order_by("id")
    )


def run_totals_by_plan(*, run: PaymentRun) -> list[dict[str, Any]]:
    """A run's count, gross, withholding and net by plan (the approver's summary)."""
    rows = (
        run.payments.values("participation__plan__code", "participation__plan__name")
        .annotate(
            count=Count("id"),
            gross=Sum("amount"),
            federal=Sum("federal_withholding"),
            state=Sum("state_withholding"),
            net=Sum("net_amount"),
        )
        .order_by("participation__plan__code")
    )
    return [dict(row) for row in rows]


PENDING = (S.SCHEDULED, S.HELD, S.IN_RUN, S.APPROVED, S.RELEASED)


@dataclass(frozen=True)
class UnscheduledBalance:
    """An account with a balance and no payment scheduled, and why (issue 11: not a blank)."""

    plan_name: str
    account_label: str
    balance: Decimal
    why: str
    detail: str
    cite: str


def _form_words(form: str, installments: int | None) -> str:
    if form == "installments" and installments:
        return f"in {installments} annual installments"
    if form == "lump_sum_and_installments" and installments:
        return f"part as a lump sum, the rest in {installments} annual installments"
    return "as one lump sum"


def _why_unscheduled(
    result: ScheduleResult, schedule: PaymentSchedule | None, paid_before: bool
) -> tuple[str, str, str]:
    """(the sentence, the engine's own words, the section) for an account with a balance and nothing pending."""
    hold = (schedule.hold_reason if schedule else "") or result.hold_reason
    if hold:
        return f"On hold: {hold}", result.summary, result.cite
    if result.payments:
        if paid_before:
            return (
                "What is left after the final payment (earnings or a later credit) is paid as a residual lump "
                "sum as soon as it is credited, on the next Valuation Date.",
                result.summary,
                result.cite,
            )
        first = min(p.payment_date for p in result.payments)
        if result.trigger == "specified_date":
            why = f"Specified Date {first:%Y-%m}: the first payment is on {first:%B} {first.day}, {first.year}; it is being scheduled."
        else:
            why = f"The first payment is due on {first:%B} {first.day}, {first.year}; it is being scheduled."
        return why, result.summary, result.payments[0].cite or result.cite
    if result.benefit:
        return (
            f"Paid after you leave the company, {_form_words(result.form, result.installments)}, on the dates "
            f"of your election.",
            result.summary,
            result.cite,
        )
    return (
        "No payment date is set for this account yet: the plan has no payment rule for it in force today. "
        "Ask the plan administrator.",
        "",
        "",
    )


def unscheduled_balances(*, person: Person, on: dt.date) -> list[UnscheduledBalance]:
    """Every account of the person that holds a balance but has no payment pending, with the reason the schedule
    engine gives (read-only: the engine is run on the account's facts in memory, nothing is stored)."""
    accounts = [
        a
        for a in Account.objects.filter(participation__person=person)
        .select_related("participation__plan", "participation__person")
        .order_by("participation__plan__code", "kind", "specified_month", "id")
        if not is_annuity_account(account=a)
    ]
    if not accounts:
        return []
    ids = {a.id for a in accounts}
    pending = set(
        ScheduledPayment.objects.filter(account_id__in=ids, status__in=PENDING).values_list(
            "account_id", flat=True
        )
    )
    credited = credited_through()
    values = available_values(account_ids=ids - pending, on=on, credited=credited) if ids - pending else {}
    waiting = [a for a in accounts if a.id not in pending and values.get(a.id, ZERO) > ZERO]
    if not waiting:
        return []
    facts = load_facts(accounts=waiting, as_of=on, credited=credited)
    schedules = {
        s.account_id: s
        for s in PaymentSchedule.objects.filter(
            account_id__in=[a.id for a in waiting], kind=PaymentSchedule.Kind.BENEFIT
        )
    }
    paid = set(
        ScheduledPayment.objects.filter(account_id__in=[a.id for a in waiting], status=S.PAID).values_list(
            "account_id", flat=True
        )
    )
    out = []
    for a in waiting:
        result = compute_schedule(f=facts[a.id])
        why, detail, cite = _why_unscheduled(result, schedules.get(a.id), a.id in paid)
        out.append(
            UnscheduledBalance(
                plan_name=a.participation.plan.name,
                account_label=facts[a.id].label,
                balance=values[a.id],
                why=why,
                detail=detail,
                cite=cite,
            )
        )
    return out
