"""The elections' reports as CSV files (core.report_files): the deferral elections in force for payroll."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from core.errors import InvalidInput
from core.report_files import ReportFile, plan_year
from elections import selectors
from plans.models import Plan

EXPORT_COLUMNS = [
    "employee_number",
    "name",
    "plan",
    "plan_year",
    "component",
    "percent",
    "kind",
    "election_id",
    "election_plan_year",
    "irrevocable_at",
    "covers_pay_from",
    "performance_period_end",
    "cancelled_from",
    "cancelled_to",
]


def export_csv_rows(rows: Iterable[dict[str, Any]]) -> Iterator[list[Any]]:
    """The payroll export's rows (elections.selectors.payroll_export_rows) in the columns' order, as they come."""
    for row in rows:
        yield [row.get(column, "") for column in EXPORT_COLUMNS]


def _export_rows(plan_code: str, year: str) -> Iterator[list[Any]]:
    plan = Plan.objects.filter(code=plan_code).first()
    if plan is None or not year.isdigit():
        raise InvalidInput(f"No plan {plan_code!r} or no plan year {year!r} to export.")
    return export_csv_rows(selectors.payroll_export_rows(plan=plan, plan_year=int(year)))


ELECTIONS_EXPORT = ReportFile(
    name="elections_export",
    label="Elections in force for payroll",
    header=EXPORT_COLUMNS,
    rows=_export_rows,
    filename=lambda plan_code, year: f"{plan_code}-{year}-elections-in-force.csv",
    params=["plan_code", "year"],
    checks={"year": plan_year},
    lineterminator="\r\n",  # csv.DictWriter's, as the export has always been written
)

REPORTS = [ELECTIONS_EXPORT]
