"""The payments' reports as CSV files (core.report_files): the forecast of gross payments by month or by year."""

from __future__ import annotations

import datetime as dt
from typing import Any

from core.errors import ApplicationError
from core.report_files import ReportFile, iso_date
from payments import selectors


def forecast_csv_rows(data: dict[str, Any], *, by: str) -> list[list[Any]]:
    """The forecast's rows (payments.selectors.forecast): gross by year, or by month (YYYY-MM)."""
    if by == "year":
        return [[y, f"{v:.2f}"] for y, v in data["by_year"]]
    return [[m.strftime("%Y-%m"), f"{v:.2f}"] for m, v in data["by_month"]]


def _forecast_rows(start: str, by: str) -> list[list[Any]]:
    if by not in ("month", "year"):
        raise ApplicationError(f"A forecast is by month or by year, not {by!r}.")
    return forecast_csv_rows(selectors.forecast(start=dt.date.fromisoformat(start)), by=by)


def forecast_report(by: str) -> ReportFile:
    """The forecast file by month or by year (their header's first column differs)."""
    return FORECAST_BY_YEAR if by == "year" else FORECAST


FORECAST = ReportFile(
    name="forecast",
    label="Payment forecast by month",
    header=["month", "gross"],
    rows=lambda start: _forecast_rows(start, "month"),
    filename=lambda start: f"payments-forecast-by-month-{start}.csv",
    params=["start"],
    checks={"start": iso_date},
)
FORECAST_BY_YEAR = ReportFile(
    name="forecast_by_year",
    label="Payment forecast by year",
    header=["year", "gross"],
    rows=lambda start: _forecast_rows(start, "year"),
    filename=lambda start: f"payments-forecast-by-year-{start}.csv",
    params=["start"],
    checks={"start": iso_date},
)

REPORTS = [FORECAST, FORECAST_BY_YEAR]
