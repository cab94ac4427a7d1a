"""Vesting (EDCP 4.2, RRP 3.06) and forfeiture of the unvested part at separation."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from books.models import Account, EntryKind, Forfeiture, Source
from books.selectors import account_value
from books.services.accounts import pending_create
from core.dates import years_between
from core.money import HUNDRED, ZERO, money
from participants.models import EmploymentEvent, Participation
from participants.selectors import change_in_control_between, termination_event, years_of_vesting_service
from plans.selectors import plan_table

if TYPE_CHECKING:
    from core.audit import Actor


def vesting_rule(*, participation: Participation, kind: str, on: dt.date) -> dict:
    version = participation.plan.version_on(on)
    for rule in version.provision("vesting"):
        if kind in rule["accounts"]:
            return rule
    return {"rule": "immediate", "cite": version.cite("vesting"), "accounts": [kind]}


def vested_percent(*, account: Account, on: dt.date) -> tuple[Decimal, str]:
    """(percent vested on `on`, the section that decides it)."""
    participation = account.participation
    person = participation.person
    rule = vesting_rule(participation=participation, kind=account.kind, on=on)
    cite = rule["cite"]
    if rule["rule"] == "immediate":
        return HUNDRED, cite
    ended = termination_event(person=person, on_or_before=on)
    employed_through = ended.effective_date if ended else on
    full_on = set(rule.get("full_on", []))
    if ended and ended.kind == EmploymentEvent.Kind.DEATH and "death_while_employed" in full_on:
        return HUNDRED, cite
    if "change_in_control" in full_on and change_in_control_between(
        start=person.hire_date, end=employed_through
    ):
        return HUNDRED, cite
    if "retirement" in full_on and ended and ended.kind == EmploymentEvent.Kind.SEPARATION:
        age = participation.plan.version_on(on).provision("retirement_age", None)
        if age and years_between(person.birth_date, ended.effective_date) >= age:
            return HUNDRED, cite
    since = rule.get("full_if_service_on_or_after")
    if since and employed_through >= dt.date.fromisoformat(since):
        return HUNDRED, cite
    years = years_of_vesting_service(person=person, on=employed_through)
    if rule["rule"] == "cliff":
        return (HUNDRED if years >= rule["cliff_years"] else ZERO), cite
    table = plan_table(plan=participation.plan, code=rule["schedule_table"], on=on)
    return min(HUNDRED, table.step_value(Decimal(years))), cite


def forfeit_unvested(*, participation: Participation, on: dt.date, actor: Actor) -> list[Forfeiture]:
    """At separation the unvested part of each account is forfeited (EDCP 4.2, RRP 3.06)."""
    version = participation.plan.version_on(on)
    if not version.provision("forfeit_unvested_at_separation", False):
        return []
    out = []
    for account in Account.objects.filter(participation=participation).order_by("id"):
        percent, cite = vested_percent(account=account, on=on)
        if percent >= HUNDRED:
            continue
        value = account_value(account=account, on=on)
        amount = value if percent == 0 else money(value * (HUNDRED - percent) / HUNDRED)
        if amount <= 0:
            continue
        pending, created = pending_create(
            account=account,
            kind=EntryKind.FORFEITURE,
            source=Source.FORFEITURE,
            amount=-amount,
            effective_date=on,
            idempotency_key=f"forfeiture:{account.pk}:{on.isoformat()}",
            actor=str(actor),
            memo=f"Unvested {HUNDRED - percent}% forfeited at separation",
            cite=cite,
            liquidate_all=percent == 0,
        )
        if created:
            out.append(
                Forfeiture.objects.create(
                    account=account, on=on, percent_vested=percent, amount=amount, pending=pending, cite=cite
                )
            )
    return out


def on_employment_event(*, event: EmploymentEvent, actor: Actor) -> None:
    if event.kind != EmploymentEvent.Kind.SEPARATION:
        return
    for participation in event.person.participations.select_related("plan"):
        forfeit_unvested(participation=participation, on=event.effective_date, actor=actor)
