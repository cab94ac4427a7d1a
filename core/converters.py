"""URL converters. A year in a URL is four digits from 1900 to 2199 (core.dates): year 0 or 99999999999 is a 404,
never a date computed from it (issue 12)."""

from __future__ import annotations

from core.dates import EARLIEST_DATE, LATEST_DATE


class YearConverter:
    regex = "[0-9]{4}"

    def to_python(self, value: str) -> int:
        year = int(value)
        if not EARLIEST_DATE.year <= year <= LATEST_DATE.year:
            raise ValueError(f"year {value} is out of range")  # Django answers 404
        return year

    def to_url(self, value: int) -> str:
        return f"{int(value):04d}"
