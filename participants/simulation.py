"""Simulator: the scenario's people, funds, prices and employment events."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core import valuation_calendar as cal
from core.simulation.registry import SETUP_HOOKS, YEAR_END_HOOKS, Rejected, handles
from participants.models import Person, VestingServiceCredit
from participants.selectors import employment_status_on
from participants.services import (
    ParticipantError,
    change_in_control_record,
    employment_event_record,
    key_employee_list_record,
    participation_enrol,
)
from plans.models import Fund, FundPrice, Plan


def setup(ctx) -> None:
    sc = ctx.scenario
    ctx.plan = Plan.objects.get(code=sc.plan)
    now = timezone.now()
    first = sc.start
    for code, f in sc.funds.items():
        fund = Fund.objects.create(plan=ctx.plan, code=code, name=f.name, is_default=f.default)
        ctx.funds[code] = fund
        rows, i, current = [], 0, None
        for day in cal.valuation_dates_between(first, sc.through):
            while i < len(f.prices) and f.prices[i][0] <= day:
                current = f.prices[i][1]
                i += 1
            if current is not None:
                rows.append(FundPrice(fund=fund, date=day, price=current, loaded_at=now, source="scenario"))
        FundPrice.objects.bulk_create(rows, batch_size=5000)
    for pid, p in sc.participants.items():
        person = Person.objects.create(
            employee_number=pid,
            first_name="Participant",
            last_name=pid,
            birth_date=p.birth_date,
            hire_date=p.hire_date,
            marital_status="married" if p.married else "single",
            address_line1="1 Scenario Way",
            city="Richmond",
            state="VA",
            postal_code="23230",
        )
        ctx.people[pid] = person
        ctx.participations[pid] = participation_enrol(
            person=person,
            plan=ctx.plan,
            entered_on=p.eligible_on or p.hire_date,
            eligible_on=p.eligible_on,
            actor=ctx.actor,
            now=ctx.moment(first),
        )
        VestingServiceCredit.objects.create(
            person=person, through_year=first.year - 1, years=p.vesting_service_years
        )
    for year in range(first.year - 2, sc.through.year + 1):
        members = [ctx.people[pid] for pid, p in sc.participants.items() if year in p.key_employee_years]
        key_employee_list_record(
            identification_year=year, people=members, actor=ctx.actor, now=ctx.moment(first)
        )


def year_end(ctx, day: dt.date) -> None:
    """FORMAT.md: one more Year of Vesting Service at the end of each simulated calendar year of employment."""
    for person in ctx.people.values():
        if not employment_status_on(person=person, day=day).employed:
            continue
        last = (
            VestingServiceCredit.objects.filter(person=person, through_year__lt=day.year)
            .order_by("-through_year")
            .first()
        )
        VestingServiceCredit.objects.update_or_create(
            person=person, through_year=day.year, defaults={"years": (last.years if last else 0) + 1}
        )


SETUP_HOOKS.insert(0, setup)
YEAR_END_HOOKS.append(year_end)


def _event(ctx, event, kind: str, reason: str = "") -> dict:
    try:
        employment_event_record(
            person=ctx.people[event.participant],
            kind=kind,
            effective_date=event.on,
            reason=reason,
            actor=ctx.actor,
            now=ctx.moment(event.on),
        )
    except ParticipantError as exc:
        raise Rejected("participant", str(exc))
    return {}


@handles("separation")
def separation(ctx, event) -> dict:
    return _event(ctx, event, "separation", event.data["reason"])


@handles("death")
def death(ctx, event) -> dict:
    return _event(ctx, event, "death", "death")


@handles("disability")
def disability(ctx, event) -> dict:
    return _event(ctx, event, "disability")


@handles("change_in_control")
def change_in_control(ctx, event) -> dict:
    try:
        change_in_control_record(effective_date=event.on, actor=ctx.actor, now=ctx.moment(event.on))
    except ParticipantError as exc:
        raise Rejected("EDCP 1.4", str(exc))
    return {}
