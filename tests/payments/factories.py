"""Building small plan histories for payment tests: a scenario dict replayed by the real simulator.

A history that several tests only read from (then change in their own way) is replayed once for their class
(`replayed_once`) rather than once per test: the tests stay what they were, each in a savepoint of the class's
transaction, and the replay is the same real simulator run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction

from operations.simulation.runner import run_scenario
from operations.simulation.scenario import parse_scenario
from participants.models import Person


def scenario(
    *,
    events: list[dict],
    participants: dict | None = None,
    through: str = "2026-12-31",
    plan: str = "EDCP",
    prices: list | None = None,
    **extra,
) -> dict:
    people = participants or {"P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01"}}
    return {
        "name": "test",
        "plan": plan,
        "through": through,
        "funds": {
            "SV": {"name": "Stable Value", "default": True, "prices": prices or [["2010-01-04", "10.00"]]}
        },
        "participants": people,
        "events": events,
        **extra,
    }


def deferrals(
    pid: str = "P1",
    *,
    gross: str = "10000.00",
    percent: int = 50,
    pays: int = 6,
    accounts: dict | None = None,
    form: str = "lump_sum",
    installments: int | None = None,
    lump_sum_percent: int | None = None,
    plan_year: int = 2026,
) -> list[dict]:
    """An accepted deferral election for 2026, a distribution election, and `pays` semi-monthly pays from January."""
    events = [
        {
            "on": "2025-12-05",
            "type": "deferral_election",
            "participant": pid,
            "plan_year": plan_year,
            "percentages": {"base_salary": percent},
            "accounts": accounts or {"retirement_termination": 100},
        }
    ]
    for name in accounts or {"retirement_termination": 100}:
        e = {
            "on": "2025-12-05",
            "type": "distribution_election",
            "participant": pid,
            "account": name,
            "form": form,
        }
        if installments:
            e["installments"] = installments
        if lump_sum_percent:
            e["lump_sum_percent"] = lump_sum_percent
        events.append(e)
    days = [
        "2026-01-15",
        "2026-01-30",
        "2026-02-13",
        "2026-02-27",
        "2026-03-13",
        "2026-03-27",
        "2026-04-15",
        "2026-04-30",
        "2026-05-15",
        "2026-05-29",
        "2026-06-15",
        "2026-06-30",
    ]
    events += [
        {"on": d, "type": "pay", "participant": pid, "component": "base_salary", "gross": gross}
        for d in days[:pays]
    ]
    return events


def simulate(data: dict) -> dict:
    """Replay in the test's own transaction (rolled back with the test); the database is left to inspect."""
    return run_scenario(parse_scenario(data))


@contextlib.contextmanager
def replayed_once(django_db_blocker, build: Callable[[], object]) -> Iterator[None]:
    """State for a class of tests, built once in a transaction that is rolled back when the class ends.

    Use from a class-scoped autouse fixture. Each test of the class then runs in pytest-django's `db`
    transaction, which nests as a savepoint inside this one: what a test changes is undone before the next test,
    which sees the built state as the first one did. Not for transactional tests (they would flush the tables).
    """
    with django_db_blocker.unblock():
        people = Person.objects.count()
        with transaction.atomic():
            build()
            try:
                yield
            finally:
                assert connection.in_atomic_block, "a test ended the class's transaction"
                transaction.set_rollback(True)
        assert Person.objects.count() == people, "the class's state was not rolled back"


def totals(result: dict) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], object] = {}
    from decimal import Decimal

    for r in result["payments"]:
        key = (r["participant"], r["payment_date"])
        out[key] = out.get(key, Decimal(0)) + Decimal(r["amount"])
    return {k: f"{v:.2f}" for k, v in out.items()}


def staff_user(username: str, role: str):
    user = get_user_model().objects.create_user(username=username, password="a-long-test-password")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def advance(*, to: str, price: str = "10.00") -> None:
    """Carry a simulated history on after simulate() returned, day by day as the simulator does: the payment job,
    the two-person run of what is released that day, then the crediting of a Valuation Date at `price` (every fund)."""
    import datetime as dt
    from decimal import Decimal

    from books.services.crediting import last_credited_date
    from core import valuation_calendar as cal
    from payments.services.day import RunStaff, production_day_run
    from plans.models import Fund, FundPrice

    staff = RunStaff(
        preparer=_user("sim-preparer", "administrator"), approver=_user("sim-approver", "committee")
    )
    day, end = last_credited_date() + dt.timedelta(days=1), dt.date.fromisoformat(to)
    while day <= end:
        moment = dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC)
        valuation = cal.is_valuation_date(day)
        if valuation:
            for fund in Fund.objects.all():
                FundPrice.objects.get_or_create(
                    fund=fund, date=day, defaults={"price": Decimal(price), "loaded_at": moment}
                )
        result = production_day_run(
            as_of=day, at=lambda hour, moment=moment: moment, staff=staff, credit=valuation
        )
        assert result.crediting_refused is None, day
        day += dt.timedelta(days=1)


def _user(username: str, role: str):
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user
