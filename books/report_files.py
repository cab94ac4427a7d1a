"""The books' reports as CSV files (core.report_files): the plan liability (EDCP 10.1, RRP 8.02, BRP 8.1)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from books.liability import PlanLiability, plan_liabilities
from core.report_files import ReportFile, Rows, iso_date

LIABILITY_HEADER = [
    "as_of",
    "plan",
    "section",
    "line",
    "employee_number",
    "status",
    "accounts",
    "value",
    "vested",
    "unvested",
    "method",
    "note",
]


def liability_csv_rows(reports: list[PlanLiability], *, as_of: dt.date) -> Iterator[list[Any]]:
    """The liability report's rows, as they are written: each plan's account lines, then its benefit lines
    (books.liability)."""
    for r in reports:
        for a in r.accounts:
            yield (
                [
                    as_of,
                    r.plan.code,
                    r.cite,
                    a.label,
                    "",
                    "",
                    a.accounts,
                    f"{a.value:.2f}",
                    f"{a.vested:.2f}",
                    f"{a.unvested:.2f}",
                    "account values",
                    "",
                ]
            )
        for b in r.benefits:
            yield (
                [
                    as_of,
                    r.plan.code,
                    b.cite,
                    b.participation.person.full_name,
                    b.participation.person.employee_number,
                    b.status,
                    "",
                    "" if b.value is None else f"{b.value:.2f}",
                    "",
                    "",
                    b.method,
                    b.note,
                ]
            )


def _liability_rows(as_of: str) -> Rows:
    day = dt.date.fromisoformat(as_of)
    reports = plan_liabilities(as_of=day)
    total = sum(len(r.accounts) + len(r.benefits) for r in reports)
    return Rows(liability_csv_rows(reports, as_of=day), total=total)


LIABILITY = ReportFile(
    name="liability",
    label="Plan liability",
    header=LIABILITY_HEADER,
    rows=_liability_rows,
    filename=lambda as_of: f"plan-liability-{as_of}.csv",
    params=["as_of"],
    checks={"as_of": iso_date},
)

REPORTS = [LIABILITY]
