"""The payments' reports as CSV files (core.report_files): the forecast of gross payments by month or by year."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from core.errors import ApplicationError
from core.report_files import ReportFile, Rows, iso_date
from payments import selectors


def forecast_csv_rows(data: dict[str, Any], *, by: str) -> list[list[Any]]:
    """The forecast's rows (payments.selectors.forecast): gross by year, or by month (YYYY-MM)."""
    if by == "year":
        return [[y, f"{v:.2f}"] for y, v in data["by_year"]]
    return [[m.strftime("%Y-%m"), f"{v:.2f}"] for m, v in data["by_month"]]


def forecast_summary(data: dict[str, Any]) -> dict[str, Any]:
    """The forecast page's figures (JSON values, amounts as strings), from the same answer as the CSV's rows:
    the report job keeps them with its run (core.report_files.Rows.summary) and the page shows them."""
    return {
        "by_month": [[m.isoformat(), f"{v:.2f}"] for m, v in data["by_month"]],
        "by_year": [[y, f"{v:.2f}"] for y, v in data["by_year"]],
        "count": data["count"],
    }


def forecast_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The kept figures read back for the page, in the shape of payments.selectors.forecast."""
    return {
        "by_month": [(dt.date.fromisoformat(m), Decimal(v)) for m, v in summary["by_month"]],
        "by_year": [(int(y), Decimal(v)) for y, v in summary["by_year"]],
        "count": summary["count"],
    }


def _forecast_rows(start: str, by: str) -> Rows:
    if by not in ("month", "year"):
        raise ApplicationError(f"A forecast is by month or by year, not {by!r}.")
    data = selectors.forecast(start=dt.date.fromisoformat(start))
    rows = forecast_csv_rows(data, by=by)
    return Rows(rows, total=len(rows), summary=forecast_summary(data))


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
