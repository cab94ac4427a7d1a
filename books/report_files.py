"""The books' reports as CSV files (core.report_files): the plan liability (EDCP 10.1, RRP 8.02, BRP 8.1)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from books.liability import BenefitLine, PlanLiability, plan_liabilities
from core.money import ZERO
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


# The page lists this many of a defined benefit plan's participant lines (by name), and as many of the lines not
# valued; every line is in the CSV the same run wrote.
LINES_SHOWN = 100


def _benefit_line(b: BenefitLine) -> dict[str, Any]:
    return {
        "participation": b.participation.pk,
        "name": b.participation.person.full_name,
        "employee_number": b.participation.person.employee_number,
        "status": b.status,
        "value": None if b.value is None else f"{b.value:.2f}",
        "method": b.method,
        "note": b.note,
    }


def liability_summary(reports: list[PlanLiability], *, as_of: dt.date) -> dict[str, Any]:
    """The liability page's figures (JSON values, amounts as strings), from the same answer as the CSV's rows:
    the report job keeps them with its run (core.report_files.Rows.summary) and the page shows them."""
    plans = []
    for r in reports:
        not_valued = r.not_valued
        plans.append(
            {
                "code": r.plan.code,
                "name": r.plan.name,
                "cite": r.cite,
                "reading": r.reading,
                "valued_on": r.valued_on.isoformat() if r.valued_on else None,
                "total": f"{r.total:.2f}",
                "vested": None if r.vested is None else f"{r.vested:.2f}",
                "accounts": [
                    {
                        "label": a.label,
                        "accounts": a.accounts,
                        "value": f"{a.value:.2f}",
                        "vested": f"{a.vested:.2f}",
                        "unvested": f"{a.unvested:.2f}",
                    }
                    for a in r.accounts
                ],
                "benefit_count": len(r.benefits),
                "benefits": [_benefit_line(b) for b in r.benefits[:LINES_SHOWN]],
                "not_valued_count": len(not_valued),
                "not_valued": [_benefit_line(b) for b in not_valued[:LINES_SHOWN]],
            }
        )
    return {
        "as_of": as_of.isoformat(),
        "total": f"{sum((r.total for r in reports), ZERO):.2f}",
        "plans": plans,
    }


def liability_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The kept figures read back for the page: amounts as Decimal, dates as dates."""

    def line(b: dict[str, Any]) -> dict[str, Any]:
        return {**b, "value": None if b["value"] is None else Decimal(b["value"])}

    plans = [
        {
            **p,
            "valued_on": dt.date.fromisoformat(p["valued_on"]) if p["valued_on"] else None,
            "total": Decimal(p["total"]),
            "vested": None if p["vested"] is None else Decimal(p["vested"]),
            "accounts": [
                {**a, **{k: Decimal(a[k]) for k in ("value", "vested", "unvested")}} for a in p["accounts"]
            ],
            "benefits": [line(b) for b in p["benefits"]],
            "not_valued": [line(b) for b in p["not_valued"]],
            "benefits_left_out": p["benefit_count"] - len(p["benefits"]),
            "not_valued_left_out": p["not_valued_count"] - len(p["not_valued"]),
        }
        for p in summary["plans"]
    ]
    return {
        "as_of": dt.date.fromisoformat(summary["as_of"]),
        "total": Decimal(summary["total"]),
        "plans": plans,
    }


def _liability_rows(as_of: str) -> Rows:
    day = dt.date.fromisoformat(as_of)
    reports = plan_liabilities(as_of=day)
    total = sum(len(r.accounts) + len(r.benefits) for r in reports)
    return Rows(
        liability_csv_rows(reports, as_of=day), total=total, summary=liability_summary(reports, as_of=day)
    )


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
