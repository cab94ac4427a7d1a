"""Replays a scenario day by day through the real services and batch jobs (FORMAT.md)."""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction

from books.models import Account
from books.selectors import account_values
from core import valuation_calendar as cal
from core.dates import EASTERN
from core.jobs import tasks_held
from core.simulation import registry
from core.simulation.registry import Rejected
from operations.simulation.scenario import Scenario
from plans.models import pinned_version_date
from plans.selectors import figure_overrides

ACTOR = "simulator"
PLUGINS = (
    "plans.simulation",
    "participants.simulation",
    "books.simulation",
    "elections.simulation",
    "pensions.simulation",
    "payments.simulation",
    "taxes.simulation",
)


def load_plugins() -> None:
    for name in PLUGINS:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


@dataclass
class SimContext:
    scenario: Scenario
    plan: Any = None
    people: dict[str, Any] = field(default_factory=dict)
    participations: dict[str, Any] = field(default_factory=dict)
    funds: dict[str, Any] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    payments: list[dict] = field(default_factory=list)
    forfeitures: list[dict] = field(default_factory=list)
    balances: dict[str, dict] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    actor: str = ACTOR
    today: dt.date | None = None
    shortcut: bool = True  # the payment job looks only on the days work can fall due (payments.simulation)

    def moment(self, day: dt.date, hour: int = 12) -> dt.datetime:
        """A scenario event happens at noon Eastern on its date (dates carry no time)."""
        return dt.datetime(day.year, day.month, day.day, hour, tzinfo=EASTERN)

    def participant_id(self, person) -> str:
        for pid, p in self.people.items():
            if p.pk == person.pk:
                return pid
        return str(person.employee_number)


def _days(start: dt.date, end: dt.date):
    day = start
    while day <= end:
        yield day
        day += dt.timedelta(days=1)


def _record_balances(ctx: SimContext, day: dt.date) -> None:
    accounts = list(
        Account.objects.filter(participation__in=ctx.participations.values())
        .select_related("participation__person")
        .order_by("participation_id", "id")  # the result's key order: the same on every database
    )
    values = account_values(accounts=accounts, on=day)
    out: dict[str, dict[str, str]] = {pid: {} for pid in ctx.scenario.participants}
    for account in accounts:
        pid = ctx.participant_id(account.participation.person)
        out.setdefault(pid, {})[account.name] = str(values[account.id])
    ctx.balances[day.isoformat()] = out


def _apply_event(ctx: SimContext, event) -> dict:
    """One event through its app's handler: applied, or rejected with the rule it breaks (FORMAT.md)."""
    result: dict[str, Any] = {"index": event.index, "type": event.type}
    handler = registry.EVENT_HANDLERS.get(event.type)
    if handler is None:
        return {
            **result,
            "status": "rejected",
            "rule": "simulator",
            "message": f"{event.type} is not supported yet",
        }
    try:
        with transaction.atomic():
            outcome = handler(ctx, event) or {}
    except Rejected as exc:
        return {**result, "status": "rejected", "rule": exc.rule, "message": exc.message}
    return {**result, "status": "applied", **outcome}


def _end_of_day(ctx: SimContext, day: dt.date, checkpoints: set[dt.date]) -> None:
    if day.month == 12 and day.day == 31:
        for hook in registry.YEAR_END_HOOKS:
            hook(ctx, day)
    if day in checkpoints:
        _record_balances(ctx, day)


def run_scenario(scenario: Scenario, *, shortcut: bool = True) -> dict:
    """Run in the current database (the caller provides the sandbox); returns the result object.

    Each day: the day's events in file order, then the daily jobs (registry.daily: the production day of
    payments.services.day, whose payment job and crediting run as in production), then the year end and
    the checkpoints. `shortcut=False` makes the payment job look every day instead of only on the days
    work can fall due (the tests compare both: the shortcut must never skip a day).
    """
    load_plugins()
    ctx = SimContext(scenario=scenario, shortcut=shortcut)
    by_day: dict[dt.date, list] = {}
    for event in scenario.events:
        by_day.setdefault(event.on, []).append(event)
    checkpoints = set(scenario.checkpoints) | {scenario.through}
    results: dict[int, dict] = {}
    # The tasks the services queue (payment advice, election confirmations) are held, never sent: they would name
    # rows of this sandbox to the real broker's workers, which read the real books (core.jobs.tasks_held).
    with tasks_held(), figure_overrides(limits=scenario.limits), pinned_version_date(scenario.plan_version):
        for hook in registry.SETUP_HOOKS:
            hook(ctx)
        for day in _days(scenario.start, scenario.through):
            ctx.today = day
            for event in by_day.get(day, []):
                results[event.index] = _apply_event(ctx, event)
            for _, _, job in registry.DAILY_JOBS:
                job(ctx, day)
            _end_of_day(ctx, day, checkpoints)
    ctx.events = [results[i] for i in sorted(results)]
    out = {
        "name": scenario.name,
        "events": ctx.events,
        "payments": ctx.payments,
        "forfeitures": ctx.forfeitures,
        "balances": ctx.balances,
    }
    for reporter in registry.REPORTERS:
        out.update(reporter(ctx))
    return out


def _check_events(expect: dict, result: dict) -> list[str]:
    """Events by index: the status, and the rule when the file gives one."""
    problems: list[str] = []
    by_index = {e["index"]: e for e in result["events"]}
    for exp in expect.get("events", []):
        got = by_index.get(exp["index"])
        if got is None:
            problems.append(f"event {exp['index']}: no result")
        elif got["status"] != exp["status"]:
            why = f" [{got.get('rule')}: {got.get('message')}]" if got.get("rule") else ""
            problems.append(
                f"event {exp['index']} ({got['type']}): status {got['status']!r}, expected {exp['status']!r}{why}"
            )
        elif "rule" in exp and got.get("rule") != exp["rule"]:
            problems.append(
                f"event {exp['index']} ({got['type']}): rule {got.get('rule')!r}, expected {exp['rule']!r}"
            )
    return problems


def _payment_totals(rows: list[dict]) -> dict[tuple[str, str], Decimal]:
    totals: dict[tuple[str, str], Decimal] = {}
    for r in rows:
        key = (r["participant"], r["payment_date"])
        totals[key] = totals.get(key, Decimal(0)) + Decimal(r["amount"])
    return totals


def _check_payments(expect: dict, result: dict) -> list[str]:
    """The total per participant and Payment Date: every expected date present, no unexpected payment."""
    if "payments" not in expect:
        return []
    problems: list[str] = []
    want, got = _payment_totals(expect["payments"]), _payment_totals(result["payments"])
    for key in sorted(set(want) | set(got)):
        if key not in got:
            problems.append(f"payment {key[0]} {key[1]}: missing, expected {want[key]}")
        elif key not in want:
            problems.append(f"payment {key[0]} {key[1]}: {got[key]} paid, none expected")
        elif want[key] != got[key]:
            problems.append(f"payment {key[0]} {key[1]}: {got[key]}, expected {want[key]}")
    return problems


def _check_paid_on(expect: dict, result: dict) -> list[str]:
    """FORMAT.md `paid_on`: the first Valuation Date on or after the Payment Date, for every payment made."""
    problems: list[str] = []
    for r in result["payments"]:
        due = cal.next_valuation_date(dt.date.fromisoformat(r["payment_date"]))
        if r["paid_on"] != due.isoformat():
            problems.append(
                f"payment {r['participant']} {r['account']} {r['payment_date']}: paid on {r['paid_on']}, "
                f"expected {due} (the first Valuation Date on or after the Payment Date)"
            )
    return problems


def _check_balances(expect: dict, result: dict) -> list[str]:
    """Each listed balance, to the cent; an account never opened counts as 0.00."""
    problems: list[str] = []
    for day, people in (expect.get("balances") or {}).items():
        got_day = result["balances"].get(day)
        if got_day is None:
            problems.append(f"balances {day}: not reported (add it to checkpoints)")
            continue
        for pid, accounts in people.items():
            for name, amount in accounts.items():
                have = Decimal(got_day.get(pid, {}).get(name, "0.00"))
                if have != Decimal(amount):
                    problems.append(f"balance {day} {pid} {name}: {have}, expected {amount}")
    return problems


def _check_fica(expect: dict, result: dict) -> list[str]:
    """FORMAT.md `fica`: the total per participant and date (every expected date present, none unexpected)."""
    if "fica" not in expect:
        return []
    problems: list[str] = []

    def totals(rows: list[dict]) -> dict[tuple[str, str], Decimal]:
        out: dict[tuple[str, str], Decimal] = {}
        for r in rows:
            key = (r["participant"], r["date"])
            out[key] = out.get(key, Decimal(0)) + Decimal(r["amount"])
        return out

    want, got = totals(expect["fica"]), totals(result.get("fica", []))
    for key in sorted(set(want) | set(got)):
        if key not in got:
            problems.append(f"fica {key[0]} {key[1]}: missing, expected {want[key]}")
        elif key not in want:
            if got[key] != 0:
                problems.append(f"fica {key[0]} {key[1]}: {got[key]} taken into account, none expected")
        elif want[key] != got[key]:
            problems.append(f"fica {key[0]} {key[1]}: {got[key]}, expected {want[key]}")
    return problems


def _check_tax_years(expect: dict, result: dict) -> list[str]:
    """FORMAT.md `tax_years`: each listed figure to the cent (a participant or year not reported counts as 0.00)."""
    problems: list[str] = []
    got_years = result.get("tax_years", {})
    for year, people in (expect.get("tax_years") or {}).items():
        for pid, figures in people.items():
            have = got_years.get(year, {}).get(pid, {})
            for name, amount in figures.items():
                value = Decimal(have.get(name, "0.00"))
                if value != Decimal(amount):
                    problems.append(f"tax_years {year} {pid} {name}: {value}, expected {amount}")
    return problems


# What --check compares (FORMAT.md, `expect`), in report order.
CHECKS: tuple[Callable[[dict, dict], list[str]], ...] = (
    _check_events,
    _check_payments,
    _check_paid_on,
    _check_balances,
    _check_fica,
    _check_tax_years,
)


def check_result(scenario: Scenario, result: dict) -> list[str]:
    """Differences between the result and the scenario's `expect` (FORMAT.md), one line each."""
    expect = scenario.expect or {}
    return [problem for check in CHECKS for problem in check(expect, result)]
