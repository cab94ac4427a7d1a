"""The payroll feed: each pay line becomes the deferrals and matching it carries (EDCP 7.1, RRP 3.03, 3.04)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from books.models import PayrollDeferral, PayrollRecord, Source
from books.services.accounts import BooksError, credit_create
from core.money import ZERO, money, percent_of, split_by_percent
from elections.selectors import allocation_of, cancellation_on, deferral_line_in_force
from participants.models import EmploymentEvent, Participation, Person
from participants.selectors import employment_status_from_events, employment_status_on
from plans.models import Plan
from plans.selectors import announced_percent, figure_for_year


def plan_year_of(pay_date: dt.date) -> int:
    return pay_date.year


def _ytd(participation: Participation, record: PayrollRecord, field: str) -> Decimal:
    """Year-to-date total of a PayrollDeferral field before this record (pay date, then record id)."""
    qs = PayrollDeferral.objects.filter(participation=participation, record__plan_year=record.plan_year).exclude(
        record=record)
    qs = qs.filter(record__pay_date__lt=record.pay_date) | qs.filter(record__pay_date=record.pay_date,
                                                                     record__id__lt=record.id)
    return qs.aggregate(t=Sum(field))["t"] or ZERO


def _deferral_for_plan(record: PayrollRecord, participation: Participation, *, actor: str,
                       limits: dict | None) -> PayrollDeferral | None:
    version = participation.plan.version_on(record.pay_date)
    components = version.provision("deferral_components", None)
    if not components:
        return None
    basis = version.provision("plan_compensation")
    if basis == "above_401a17":
        component = "plan_compensation"
        limit = figure_for_year("401(a)(17)", record.plan_year, limits)
        comp_before = _ytd(participation, record, "compensation")
        comp_after = comp_before + record.gross
        plan_comp = money(max(ZERO, comp_after - max(limit, comp_before)))
    else:
        component = record.component
        if version.component(component) is None:
            return None
        plan_comp = record.gross
    line = deferral_line_in_force(participation=participation, component=component, plan_year=record.plan_year,
                                  pay_date=record.pay_date, period_start=record.period_start,
                                  performance_period_end=record.performance_period_end)
    percent = line.percent if line else ZERO
    reason = ""
    cancelled = cancellation_on(participation=participation, day=record.pay_date)
    if cancelled and percent:
        reason = f"deferrals cancelled {cancelled.starts_on} to {cancelled.ends_on} ({cancelled.cite}): {cancelled.reason}"
        percent = ZERO
    deferral = percent_of(plan_comp, percent)
    reduced_by = ZERO
    cap = version.provision("net_pay_cap_percent", None)
    if cap is not None and record.net_available is not None:
        ceiling = percent_of(record.net_available, Decimal(cap))
        if deferral > ceiling:
            reduced_by = deferral - ceiling
            reason = (f"reduced from {deferral} to {ceiling}: a deferral may not exceed {cap}% of the cash pay left "
                      f"after taxes and deductions ({version.cite('net_pay_cap_percent')})")
            deferral = ceiling
    matching = _matching(version, participation, record, deferral, plan_comp)
    row = PayrollDeferral.objects.create(
        record=record, participation=participation, election=line.election if line else None,
        compensation=record.gross, plan_compensation=plan_comp, percent=percent, deferral=deferral,
        matching=matching, reduced_by=reduced_by, reason=reason,
    )
    key = f"pay:{record.pk}:{participation.pk}"
    if deferral:
        default_kind = version.provision("default_deferral_account")
        for account_name, amount in split_by_percent(deferral, allocation_of(line.election if line else None, default_kind)):
            credit_create(participation=participation, account_name=account_name, source=Source.DEFERRAL, amount=amount,
                          effective_date=record.pay_date, idempotency_key=f"{key}:deferral:{account_name}", actor=actor,
                          memo=f"{percent}% of {plan_comp} {component.replace('_', ' ')} paid {record.pay_date}",
                          cite=version.cite("deferral_components"))
    if matching:
        credit_create(participation=participation, account_name="matching", source=Source.MATCHING, amount=matching,
                      effective_date=record.pay_date, idempotency_key=f"{key}:matching", actor=actor,
                      memo=f"Matching on the deferral of {record.pay_date}", cite=version.cite("matching"))
    return row


def _matching(version, participation: Participation, record: PayrollRecord, deferral: Decimal,
              plan_comp: Decimal) -> Decimal:
    rule = version.provision("matching", None)
    if not rule or not deferral:
        return ZERO
    rate = Decimal(rule["rate"])
    cap_percent = Decimal(rule["cap_percent"])
    if rule["basis"] == "pay_period":
        # RRP 2017 3.04: 100% of the deferral for the pay period, at most 6% of its Plan Compensation.
        base = plan_comp if rule["cap_base"] == "plan_compensation" else record.gross
        return min(money(deferral * rate), percent_of(base, cap_percent))
    # RRP 2011 3.04: for the plan year, 50% of the announced percentage of deferrals, at most 5% of
    # Compensation; computed on year-to-date figures so each pay period trues up the year so far.
    announced = announced_percent(participation.plan, rule["announced_percent_table"], record.plan_year)
    deferrals = _ytd(participation, record, "deferral") + deferral
    comp_field = "plan_compensation" if rule["cap_base"] == "plan_compensation" else "compensation"
    comp = _ytd(participation, record, comp_field) + (plan_comp if comp_field == "plan_compensation" else record.gross)
    target = min(money(deferrals * rate * announced / 100), percent_of(comp, cap_percent))
    return max(ZERO, target - _ytd(participation, record, "matching"))


class PayrollError(ValueError):
    pass


@dataclass
class PayrollContext:
    """What a whole payroll file needs, read once instead of once per line (books.imports): each person's
    participations (their plans sharing one instance, versions and provisions loaded) and employment
    events. With a context, pay_record trusts its caller that the pay line is new (the import checks
    every line of the file against those recorded, under its lock; the database's unique constraint
    still stands behind it)."""

    participations: dict[int, list[Participation]] = field(default_factory=dict)
    events: dict[int, list[EmploymentEvent]] = field(default_factory=dict)

    @classmethod
    def for_people(cls, people) -> PayrollContext:
        ids = [p.pk for p in people]
        plans = {plan.pk: plan for plan in Plan.objects.prefetch_related("versions__provisions")}
        for plan in plans.values():
            plan._versions_cache = sorted(plan.versions.all(), key=lambda v: v.effective_date)
            for version in plan._versions_cache:
                version._provision_cache = {p.key: p for p in version.provisions.all()}
        context = cls({i: [] for i in ids}, {i: [] for i in ids})
        for participation in Participation.objects.filter(person_id__in=ids).order_by("plan__code", "id"):
            participation.plan = plans[participation.plan_id]
            context.participations[participation.person_id].append(participation)
        for event in EmploymentEvent.objects.filter(person_id__in=ids):
            context.events[event.person_id].append(event)
        return context


@transaction.atomic
def pay_record(*, person: Person, pay_date: dt.date, component: str, gross: Decimal, actor: str,
               plan_year: int | None = None, period_start: dt.date | None = None,
               performance_period_end: dt.date | None = None, net_available: Decimal | None = None,
               sequence: int = 1, batch=None, line_number: int | None = None,
               limits: dict | None = None, context: PayrollContext | None = None) -> tuple[PayrollRecord, bool]:
    """Record one pay line and credit what it defers, in every plan the person takes part in. Idempotent."""
    if context is None:
        existing = PayrollRecord.objects.filter(person=person, pay_date=pay_date, component=component,
                                                sequence=sequence).first()
        if existing:
            return existing, False
        status = employment_status_on(person, pay_date)
        participations = person.participations.select_related("plan").order_by("plan__code")
    else:
        status = employment_status_from_events(person, context.events[person.pk], pay_date)
        participations = context.participations[person.pk]
    if not status.employed:
        raise PayrollError(f"{person.employee_number} was not employed on {pay_date} ({status.reason})")
    if gross < 0:
        raise PayrollError(f"gross pay {gross} is negative")
    record = PayrollRecord.objects.create(
        person=person, pay_date=pay_date, component=component, gross=money(gross),
        plan_year=plan_year or plan_year_of(pay_date), period_start=period_start,
        performance_period_end=performance_period_end, net_available=net_available, sequence=sequence,
        batch=batch, line_number=line_number, recorded_at=timezone.now(), actor=actor,
    )
    for participation in participations:
        if participation.plan.kind != "account_balance":
            continue
        try:
            _deferral_for_plan(record, participation, actor=actor, limits=limits)
        except BooksError as exc:
            raise PayrollError(str(exc))
    return record, True
