"""Date rules used by every plan: months "after" an event count from the month of the event."""

from __future__ import annotations

import calendar
import datetime as dt
import zoneinfo

from core.errors import InvalidInput

# The plans' business time zone: the December 31, 11:59 pm Eastern election deadline, the NYSE Valuation Dates
# and the scenario clock. A plan version may name another zone in its `time_zone` provision.
EASTERN_NAME = "America/New_York"
EASTERN = zoneinfo.ZoneInfo(EASTERN_NAME)


def add_months(day: dt.date, months: int) -> dt.date:
    """Same day of month `months` later, clipped to the month's last day (Feb 29 -> Feb 28)."""
    month_index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(month_index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


def add_years(day: dt.date, years: int) -> dt.date:
    return add_months(day, 12 * years)


def first_of_month(day: dt.date) -> dt.date:
    return day.replace(day=1)


def end_of_month(day: dt.date) -> dt.date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def end_of_previous_month(day: dt.date) -> dt.date:
    return first_of_month(day) - dt.timedelta(days=1)


def day_of_month_after(day: dt.date, day_of_month: int, months_after: int = 1) -> dt.date:
    """The `day_of_month` of the month `months_after` months after the month of `day`."""
    target = add_months(first_of_month(day), months_after)
    last = calendar.monthrange(target.year, target.month)[1]
    return target.replace(day=min(day_of_month, last))


def first_day_of_month_after_anniversary(day: dt.date, months: int) -> dt.date:
    """The 1st day of the month after the `months`-month anniversary of `day` (RRP 4.01(b), BRP 4.3)."""
    anniversary = add_months(day, months)
    return day_of_month_after(anniversary, 1, 1)


def parse_month(text: str) -> dt.date:
    """'YYYY-MM' to the first day of that month; InvalidInput (a ValueError) naming the text otherwise."""
    try:
        year, month = text.split("-")
        if len(year) != 4 or len(month) != 2:
            raise ValueError
        return dt.date(int(year), int(month), 1)
    except (ValueError, AttributeError):
        raise InvalidInput(f"{text!r} is not a month in the form YYYY-MM")


def parse_date(text: object, *, field: str = "date") -> dt.date:
    if isinstance(text, dt.date) and not isinstance(text, dt.datetime):
        return text
    try:
        return dt.date.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidInput(f"{field} {text!r} is not a date in the form YYYY-MM-DD")


# Issue 12: the dates and years this application reasons about. Input outside them (0001-01-01, 9999-12-31,
# year 99999999999) is refused at the edge with a 400 or a form error, before date arithmetic overflows.
EARLIEST_DATE = dt.date(1900, 1, 1)
LATEST_DATE = dt.date(2199, 12, 31)


def date_in_range(day: dt.date) -> bool:
    return EARLIEST_DATE <= day <= LATEST_DATE


def out_of_range_message(what: str, value: object) -> str:
    return f"{what} {value} is outside {EARLIEST_DATE:%Y-%m-%d} to {LATEST_DATE:%Y-%m-%d}"


def year_in_range(year: int) -> bool:
    return EARLIEST_DATE.year <= year <= LATEST_DATE.year


def years_between(start: dt.date, end: dt.date) -> int:
    """Whole years from start to end (age on a date)."""
    years = end.year - start.year
    if (end.month, end.day) < (start.month, start.day):
        years -= 1
    return years
