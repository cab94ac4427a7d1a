"""The claims reports as CSV files (core.report_files): claims by status and plan, late decisions, average days.

The reports show the claims as they stand; a file's parameter is the day it was prepared (`on`), so a rerun the
same day returns the same file and the next day's is prepared afresh.
"""

from __future__ import annotations

from typing import Any

from claims.selectors import average_days_to_decision, claims_by_status_and_plan, late_decisions
from core.report_files import ReportFile, iso_date


def by_status_rows(on: str) -> list[list[Any]]:
    """One row per state and plan with a claim (the page's table, long form)."""
    table = claims_by_status_and_plan()
    return [
        [label, code, count]
        for label, counts, _total in table["rows"]
        for code, count in zip(table["plans"], counts, strict=True)
        if count
    ]


def late_rows(on: str) -> list[list[Any]]:
    return [
        [d.claim.number, d.claim.plan.code, d.get_level_display(), d.due_on, d.decided_on, d.days_late]
        for d in late_decisions().iterator(chunk_size=2000)
    ]


def average_rows(on: str) -> list[list[Any]]:
    return [
        [
            a["claim__plan__code"],
            a["level"],
            a["n"],
            "" if a["average"] is None else f"{a['average']:.1f}",
            a["late"],
        ]
        for a in average_days_to_decision()
    ]


REPORTS = [
    ReportFile(
        name="claims_by_status",
        label="Claims by status and plan",
        header=["state", "plan", "claims"],
        rows=by_status_rows,
        filename=lambda on: f"claims-by-status-{on}.csv",
        params=["on"],
        checks={"on": iso_date},
    ),
    ReportFile(
        name="claims_late",
        label="Claim decisions made late",
        header=["claim", "plan", "level", "due_on", "decided_on", "days_late"],
        rows=late_rows,
        filename=lambda on: f"claims-late-decisions-{on}.csv",
        params=["on"],
        checks={"on": iso_date},
    ),
    ReportFile(
        name="claims_average_days",
        label="Average days to a claim decision",
        header=["plan", "level", "decisions", "average_days", "late"],
        rows=average_rows,
        filename=lambda on: f"claims-average-days-{on}.csv",
        params=["on"],
        checks={"on": iso_date},
    ),
]
