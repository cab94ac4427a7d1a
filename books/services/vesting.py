"""Vesting (EDCP 4.2, RRP 3.06) and forfeiture of the unvested part at separation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from django.db.models import Q

from books.models import Account, EntryKind, Forfeiture, Source
from books.selectors import account_value
from books.services.accounts import pending_create
from core.dates import years_between
from core.money import HUNDRED, ZERO, money
from participants.models import ChangeInControl, EmploymentEvent, Participation, VestingServiceCredit
from plans.models import Plan
from plans.selectors import plan_table

if TYPE_CHECKING:
    from core.audit import Actor


def vesting_rule(*, participation: Participation, kind: str, on: dt.date) -> dict:
    return _rule(plan=participation.plan, kind=kind, on=on)


def _rule(*, plan: Plan, kind: str, on: dt.date) -> dict:
    version = plan.version_on(on)
    for rule in version.provision("vesting"):
        if kind in rule["accounts"]:
            return rule
    return {"rule": "immediate", "cite": version.cite("vesting"), "accounts": [kind]}


def vested_percent(*, account: Account, on: dt.date) -> tuple[Decimal, str]:
    """(percent vested on `on`, the section that decides it)."""
    return vested_percents(accounts=[account], on=on)[account.id]


_CHUNK = 5000  # ids per IN list: far below SQLite's variable limit, and PostgreSQL plans stay simple


class VestingSubject(NamedTuple):
    """What a vesting rule asks of an account and its owner: read as plain values, so a whole plan's accounts are
    read in one query without building an Account, a Participation and a Person for each."""

    account_id: int
    kind: str
    plan_id: int
    person_id: int
    hire_date: dt.date
    birth_date: dt.date


@dataclass(frozen=True)
class _PersonFacts:
    """What a vesting rule asks of a person on a date, read for many people at once."""

    ended: EmploymentEvent | None
    credits: tuple[tuple[int, int], ...]  # (through_year, years) of the RSP records, latest first


def vested_percents(*, accounts: Iterable[Account], on: dt.date) -> dict[int, tuple[Decimal, str]]:
    """account id -> (percent vested on `on`, the section that decides it), for many accounts in a handful of
    queries: termination events, service credits, changes in control and tables are read once for all of them
    (the statements value every account of a plan). One rule for one account or many: vested_percent() is this
    function on a list of one, and both are vested_percents_of() on the accounts' subjects."""
    plans: dict[int, Plan] = {}  # one instance a plan, so its versions and provisions are read once
    subjects = []
    for account in accounts:
        participation = account.participation
        plans.setdefault(participation.plan_id, participation.plan)
        person = participation.person
        subjects.append(
            VestingSubject(
                account.id,
                account.kind,
                participation.plan_id,
                person.pk,
                person.hire_date,
                person.birth_date,
            )
        )
    return vested_percents_of(subjects=subjects, plans=plans, on=on)


def plan_vesting_subjects(*, plan: Plan) -> list[VestingSubject]:
    """Every account of `plan` as a VestingSubject, in one query (the liability report; ordered by kind, id)."""
    rows = (
        Account.objects.filter(participation__plan=plan)
        .order_by("kind", "id")
        .values_list(
            "id",
            "kind",
            "participation__plan_id",
            "participation__person_id",
            "participation__person__hire_date",
            "participation__person__birth_date",
        )
    )
    return [VestingSubject(*row) for row in rows]


def vested_percents_of(
    *, subjects: Iterable[VestingSubject], plans: dict[int, Plan], on: dt.date, whole_plan: bool = False
) -> dict[int, tuple[Decimal, str]]:
    """account id -> (percent vested on `on`, its section) for the subjects (EDCP 4.2, RRP 3.06): the rule of each
    account kind read once a plan, and for the accounts whose rule is not immediate the people's termination
    events and service credits read at once. `plans` maps each subject's plan id to its Plan. With `whole_plan`
    (the subjects are every account of the one plan given) those facts are read by plan, not by a list of ids."""
    out: dict[int, tuple[Decimal, str]] = {}
    found: dict[tuple[int, str], dict] = {}
    waiting: list[tuple[VestingSubject, dict]] = []
    for subject in subjects:
        key = (subject.plan_id, subject.kind)
        if key not in found:
            found[key] = _rule(plan=plans[subject.plan_id], kind=subject.kind, on=on)
        rule = found[key]
        if rule["rule"] == "immediate":
            out[subject.account_id] = (HUNDRED, rule["cite"])
        else:
            waiting.append((subject, rule))
    if not waiting:
        return out
    if whole_plan:
        (plan,) = plans.values()
        facts = _person_facts(person_ids={s.person_id for s, _ in waiting}, on=on, plan=plan)
    else:
        facts = _person_facts(person_ids={s.person_id for s, _ in waiting}, on=on)
    changes = list(
        ChangeInControl.objects.filter(effective_date__lte=on).values_list("effective_date", flat=True)
    )
    tables: dict[tuple[int, str], Decimal | object] = {}
    for subject, rule in waiting:
        out[subject.account_id] = (
            _percent(subject, plans[subject.plan_id], rule, facts[subject.person_id], changes, tables, on),
            rule["cite"],
        )
    return out


def _person_facts(*, person_ids: set[int], on: dt.date, plan: Plan | None = None) -> dict[int, _PersonFacts]:
    """The facts of the people, read in chunks of ids; or, given `plan`, of the plan's people in one query each
    (a join, not an IN list of every person: the liability report of a plan of 100,000)."""
    ids = sorted(person_ids)
    ended: dict[int, EmploymentEvent] = {}
    credits: dict[int, list[tuple[int, int]]] = {i: [] for i in ids}
    if plan is not None:
        chunks = [Q(person__participations__plan=plan)]
    else:
        chunks = [Q(person_id__in=ids[start : start + _CHUNK]) for start in range(0, len(ids), _CHUNK)]
    for chunk in chunks:
        events = EmploymentEvent.objects.filter(
            chunk,
            kind__in=[EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH],
            effective_date__lte=on,
        ).order_by("person_id", "effective_date", "id")
        for event in events:
            ended.setdefault(event.person_id, event)  # the first separation or death (RRP 4.01)
        rows = (
            VestingServiceCredit.objects.filter(chunk, through_year__lt=on.year)
            .order_by("person_id", "-through_year")
            .values_list("person_id", "through_year", "years")
        )
        for person_id, through_year, years in rows:
            if person_id in credits:
                credits[person_id].append((through_year, years))
    return {i: _PersonFacts(ended=ended.get(i), credits=tuple(credits[i])) for i in ids}


def _service_years(hire_date: dt.date, facts: _PersonFacts, on: dt.date) -> int:
    """Whole Years of Vesting Service completed before `on`: the latest RSP figure for a year before `on`'s,
    else whole years since hire (participants.selectors.years_of_vesting_service, on preloaded records)."""
    for through_year, years in facts.credits:
        if through_year < on.year:
            return years
    return max(0, years_between(hire_date, on))


def _percent(
    subject: VestingSubject,
    plan: Plan,
    rule: dict,
    facts: _PersonFacts,
    changes: list[dt.date],
    tables: dict,
    on: dt.date,
) -> Decimal:
    ended = facts.ended
    employed_through = ended.effective_date if ended else on
    full_on = set(rule.get("full_on", []))
    if ended and ended.kind == EmploymentEvent.Kind.DEATH and "death_while_employed" in full_on:
        return HUNDRED
    if "change_in_control" in full_on and any(subject.hire_date <= d <= employed_through for d in changes):
        return HUNDRED
    if "retirement" in full_on and ended and ended.kind == EmploymentEvent.Kind.SEPARATION:
        age = plan.version_on(on).provision("retirement_age", None)
        if age and years_between(subject.birth_date, ended.effective_date) >= age:
            return HUNDRED
    since = rule.get("full_if_service_on_or_after")
    if since and employed_through >= dt.date.fromisoformat(since):
        return HUNDRED
    years = _service_years(subject.hire_date, facts, employed_through)
    if rule["rule"] == "cliff":
        return HUNDRED if years >= rule["cliff_years"] else ZERO
    key = (plan.id, rule["schedule_table"])
    if key not in tables:
        tables[key] = plan_table(plan=plan, code=rule["schedule_table"], on=on)
    return min(HUNDRED, tables[key].step_value(Decimal(years)))


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
