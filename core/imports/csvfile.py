"""Reading an uploaded CSV file into numbered rows, and collecting every problem with its line number.

Line numbers are the file's own: the header is line 1, the first data row line 2 (a quoted value
spanning several lines counts from the line it starts on). Blank lines are ignored.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass, field
from decimal import Decimal

from core.money import money, parse_decimal


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str
    column: str = ""

    @property
    def message(self) -> str:
        return f"Line {self.line}: {self.reason}" if self.line else self.reason

    def as_json(self) -> dict:
        return {"line": self.line, "column": self.column, "reason": self.reason, "message": self.message}


@dataclass
class Problems:
    """Every problem found in a file; a file with any is refused whole."""

    items: list[Problem] = field(default_factory=list)
    # Issue 12: a file of 500,000 bad rows stored 678,573 errors; keep the first `keep` and count the rest.
    keep: int | None = None
    total: int = 0

    def add(self, line: int, reason: str, column: str = "") -> None:
        self.total += 1
        if self.keep is None or len(self.items) < self.keep:
            self.items.append(Problem(line, reason, column))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return self.total

    def sorted(self) -> list[Problem]:
        return sorted(self.items, key=lambda p: p.line)

    @property
    def not_kept(self) -> int:
        return self.total - len(self.items)


def _label(column: str) -> str:
    return column.replace("_", " ")


class Row:
    """One data row. The typed getters record a problem and return None when a value is unusable."""

    __slots__ = ("line", "values", "problems", "bad")

    def __init__(self, line: int, values: dict[str, str], problems: Problems):
        self.line = line
        self.values = values
        self.problems = problems
        self.bad = False

    def problem(self, reason: str, column: str = "") -> None:
        self.bad = True
        self.problems.add(self.line, reason, column)

    def text(self, column: str, *, required: bool = False, max_length: int | None = None) -> str:
        value = (self.values.get(column) or "").strip()
        if required and not value:
            self.problem(f"{_label(column)} is missing", column)
        elif max_length is not None and len(value) > max_length:
            self.problem(f"{_label(column)} is longer than {max_length} characters", column)
        return value

    def date(self, column: str, *, required: bool = False) -> dt.date | None:
        raw = self.text(column, required=required)
        if not raw:
            return None
        try:
            return dt.date.fromisoformat(raw) if len(raw) == 10 else _not_a_date()
        except ValueError:
            self.problem(
                f"{_label(column)} {raw!r} is not a date: write dates as YYYY-MM-DD, for example 2024-03-15",
                column,
            )
            return None

    def decimal(self, column: str, *, required: bool = False, places: int | None = None) -> Decimal | None:
        raw = self.text(column, required=required)
        if not raw:
            return None
        try:
            value = parse_decimal(raw, field=_label(column))
        except ValueError:
            self.problem(
                f"{_label(column)} {raw!r} is not a number (write it like 1234.56, without $ or commas)",
                column,
            )
            return None
        if abs(value) >= Decimal("1e15"):  # 1e400 would overflow quantize: refuse it as a row problem
            self.problem(f"{_label(column)} {raw} is too large", column)
            return None
        if places is not None and value != value.quantize(Decimal(1).scaleb(-places)):
            self.problem(f"{_label(column)} {raw} has more than {places} decimal places", column)
            return None
        return value

    def money(self, column: str, *, required: bool = False, allow_negative: bool = False) -> Decimal | None:
        value = self.decimal(column, required=required, places=2)
        if value is None:
            return None
        if value < 0 and not allow_negative:
            self.problem(f"{_label(column)} {value} is negative", column)
            return None
        if abs(value) >= Decimal("1e12"):
            self.problem(f"{_label(column)} {value} is too large", column)
            return None
        return money(value)

    def integer(
        self, column: str, *, required: bool = False, low: int | None = None, high: int | None = None
    ) -> int | None:
        raw = self.text(column, required=required)
        if not raw:
            return None
        if not raw.isdigit():
            self.problem(f"{_label(column)} {raw!r} is not a whole number", column)
            return None
        value = int(raw)
        if (low is not None and value < low) or (high is not None and value > high):
            self.problem(f"{_label(column)} {value} is outside {low} to {high}", column)
            return None
        return value


def _not_a_date() -> dt.date:
    raise ValueError


def _normalise(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def read_rows(
    content: bytes, *, required: tuple[str, ...], optional: tuple[str, ...], problems: Problems
) -> list[Row] | None:
    """The data rows of a CSV file, or None when the file cannot be read at all (problems say why)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[: exc.start].count(b"\n") + 1
        problems.add(line, 'the file is not UTF-8 text: save it as "CSV UTF-8" and upload it again')
        return None
    if not text.strip():
        problems.add(1, "the file is empty: it needs a header line naming the columns, then one line per row")
        return None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except csv.Error as exc:
        problems.add(1, f"the header line cannot be read as CSV ({exc})")
        return None
    columns = [_normalise(h) for h in header]
    known = set(required) | set(optional)
    expected = ", ".join(required + optional)
    ok = True
    for name in columns:
        if name and name not in known:
            problems.add(1, f"the header names an unknown column {name!r}; this import reads: {expected}")
            ok = False
    for name in {c for c in columns if columns.count(c) > 1 and c}:
        problems.add(1, f"the header names the column {name!r} twice")
        ok = False
    for name in required:
        if name not in columns:
            problems.add(1, f"the header has no {name!r} column; this import needs: {', '.join(required)}")
            ok = False
    if not ok:
        return None
    rows: list[Row] = []
    start = reader.line_num + 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.add(start, f"this line cannot be read as CSV ({exc})")
            return None
        line, start = start, reader.line_num + 1
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(columns):
            problems.add(
                line, f"this line has {len(values)} values but the header names {len(columns)} columns"
            )
            continue
        rows.append(Row(line, {c: v for c, v in zip(columns, values, strict=True) if c}, problems))
    return rows
