"""The one way to write a CSV export: every text cell that a spreadsheet would read as a formula is escaped.

A cell beginning with =, +, -, @, a tab or a carriage return is prefixed with a single quote (the OWASP
"CSV injection" advice), so a beneficiary named "=HYPERLINK(...)" reaches the payroll file as text. Numbers
(int, Decimal) are written as they are: they are never formulas. A test refuses csv.writer anywhere else.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """One cell, escaped when it is text a spreadsheet would evaluate."""
    if value is None or isinstance(value, bool | int | Decimal):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class CsvWriter:
    """csv.writer with every cell passed through csv_cell."""

    def __init__(self, out, **kwargs) -> None:
        kwargs.setdefault("lineterminator", "\n")
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class CsvDictWriter:
    """csv.DictWriter with every value passed through csv_cell (the header is ours, never escaped)."""

    def __init__(self, out, fieldnames: list[str], **kwargs) -> None:
        self._writer = csv.DictWriter(out, fieldnames=fieldnames, **kwargs)

    def writeheader(self) -> None:
        self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]) -> None:
        self._writer.writerow({k: csv_cell(v) for k, v in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)
