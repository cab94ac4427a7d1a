"""Contribution and compensation history of the conversion year (FORMAT.md 5, "History").

What the books need of the history is the conversion year's year-to-date figures: the payroll of the rest of the
year computes from them the RRP Plan Compensation above the Code 401(a)(17) limit (RRP 1.21: it continues from the
year-to-date `compensation`), the year-to-date RRP matching true-up (RRP 3.04, 2011 terms) and the base of the
year's retirement restoration contribution declared after it ends (RRP 3.02). They are written, set-based, as one
pay line per participant dated the conversion date (component `year_to_date`) with one deferral row per account
plan: the same rows the payroll writes, so every reader of the year-to-date finds them.

The earlier years are not written, and need not be: no rule of the system reads them. FICA special timing is
derived from the books (taxes.services.fica): the amounts of the package's years were taken into account by the
prior recordkeeper's payroll feed, and rows for them here would send them to payroll a second time; the unvested
part of a converted company account is taken into account when it vests, from the books' value then. Vesting runs
on the recorded Years of Vesting Service, and the RSP 402(g) deferrals are read by no rule here.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from books.models import PayrollDeferral, PayrollRecord
from core.money import ZERO
from plans.models import Plan

Stream = Callable[[str], Iterator[tuple[int, dict[str, Any]]]]
COMPONENT = "year_to_date"


def apply_year_to_date(
    *,
    stream: Stream,
    people: dict[str, int],
    participations: dict[tuple[str, str], int],
    plans: dict[str, Plan],
    cd: dt.date,
    actor: str,
    now: dt.datetime,
    bulk: Callable[[Any, list[Any], str, int], list[Any]],
) -> int:
    """One year-to-date pay line per participant with compensation in the conversion year; returns the count.
    `people` and `participations` are the ids written, by employee number and (employee number, plan)."""
    year = cd.year
    # employee number -> (compensation, excess_compensation) of the conversion year
    compensation: dict[str, tuple[Decimal, Decimal | None]] = {
        v["employee_number"]: (v["compensation"], v["excess_compensation"])
        for _line, v in stream("compensation.csv")
        if v["plan_year"] == year
    }
    sums: dict[tuple[str, str, str], Decimal] = defaultdict(lambda: ZERO)
    for _line, v in stream("contributions.csv"):
        if v["plan_year"] == year:
            sums[(v["employee_number"], v["plan"], v["source"])] += v["amount"]
    emps = list(compensation)
    records = bulk(
        PayrollRecord,
        [
            PayrollRecord(
                person_id=people[emp],
                pay_date=cd,
                component=COMPONENT,
                gross=compensation[emp][0],
                plan_year=year,
                recorded_at=now,
                actor=actor,
            )
            for emp in emps
        ],
        "compensation.csv",
        2,
    )
    by_person = {emp: record.pk for emp, record in zip(emps, records, strict=True)}
    del records
    terms = {}
    for code, plan in plans.items():
        if plan.kind == plan.Kind.ACCOUNT_BALANCE:
            version = plan.version_on(cd)
            terms[code] = (
                version.provision("plan_compensation", None) == "above_401a17",
                bool(version.provision("matching", None)),
            )
    rows = []
    for (emp, code), participation_id in participations.items():
        record_id = by_person.get(emp)
        if record_id is None or code not in terms:
            continue
        above, matching = terms[code]
        comp, excess = compensation[emp]
        rows.append(
            PayrollDeferral(
                record_id=record_id,
                participation_id=participation_id,
                compensation=comp,
                plan_compensation=(excess or ZERO) if above else comp,
                percent=ZERO,
                deferral=sums[(emp, code, "deferral")],
                matching=sums[(emp, code, "matching")] if matching else ZERO,
                reason=f"year to date through {cd} from the prior recordkeeper (conversion)",
            )
        )
    bulk(PayrollDeferral, rows, "contributions.csv", 2)
    return len(by_person)
