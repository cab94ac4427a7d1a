"""Check a conversion package (../shared/conversion/FORMAT.md sections 1-4) without writing anything.

The files are read row by row (the csv module); what later checks need is kept in small per-key
records, and the two files where volume lives (positions.csv, contributions.csv) are streamed and
aggregated, never held whole. Each row gets at most one exception: the first failing check in the
order of its file's section (FORMAT.md 4.2).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import operator
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from conversion import spec
from conversion.reader import file_sha256, normalise_header, read_rows
from core import valuation_calendar
from plans.models import Plan
from plans.selectors import MissingFigure, announced_percent, figure_for_year, plan_table

CENT = Decimal("0.01")
ZERO = Decimal("0")
HUNDRED = Decimal("100")

_MONEY = re.compile(r"^\d+(\.\d{1,2})?$")
_DEC6 = re.compile(r"^\d+(\.\d{1,6})?$")
_DEC2 = re.compile(r"^\d+(\.\d{1,2})?$")
_INT = re.compile(r"^\d+$")
_YEAR = re.compile(r"^\d{4}$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_STATE = re.compile(r"^[A-Z]{2}$")
_POSTAL = re.compile(r"^\d{5}(-\d{4})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    code: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "code": self.code, "message": self.message}


@dataclass(slots=True)
class Row:
    line: int
    v: dict[str, Any]  # parsed values (None for blank)
    bad: bool = False  # raised an exception: present, but not believed (FORMAT.md 4.4)


@dataclass(frozen=True)
class Kept:
    """What the apply step needs of the checks once their parsed rows are let go: the plans of plans.csv and the
    Key Employee years the package covers (package.csv). Everything else the apply reads from the files again."""

    plans: tuple[str, ...]
    ke_from: int
    ke_to: int


def key_employee_on(years: frozenset[int] | None, day: dt.date, ke_from: int, ke_to: int) -> bool | None:
    """Key Employee on `day` given the person's key_employee_years (EDCP 1.20, RRP 1.14, BRP 1.3(i)): the list of
    the identification year ending the December 31 before the April 1 on or before `day`; None when the package
    does not cover that year."""
    year = day.year - 1 if (day.month, day.day) >= (4, 1) else day.year - 2
    if not ke_from <= year <= ke_to:
        return None
    return year in (years or ())


@dataclass
class Result:
    participants: int = 0
    positions: int = 0
    differences: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    package_id: str = ""
    conversion_date: dt.date | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    kept: Kept | None = None  # what the apply needs of the checks; it re-reads the files themselves

    def as_dict(self, *, status: str, with_findings: bool = True) -> dict[str, Any]:
        return {
            "participants": self.participants,
            "positions": self.positions,
            "control": {"matched": not self.differences, "differences": self.differences},
            "exceptions": [f.as_dict() for f in self.findings] if with_findings else [],
            "status": status,
        }


class _Unreadable(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _parse_date(raw: str) -> dt.date:
    m = _DATE.match(raw)
    if not m:
        raise ValueError(raw)
    return dt.date(int(m[1]), int(m[2]), int(m[3]))


_DATES: dict[str, dt.date] = {}
_YEARS: dict[str, int] = {}
_NUMBERS = {
    spec.MONEY: (_MONEY, "an amount with at most two decimals, no sign"),
    spec.DEC6: (_DEC6, "a decimal with at most six decimals, no sign"),
    spec.DEC2: (_DEC2, "a decimal with at most two decimals, no sign"),
}


def _date_of(text: str) -> dt.date:
    """Dates repeat across rows: one object per distinct date keeps a large package's rows small."""
    day = _DATES.get(text)
    if day is None:
        day = _parse_date(text)
        if len(_DATES) < 200_000:
            _DATES[text] = day
    return day


def parse_value(col: spec.Column, raw: str) -> Any:  # noqa: C901 - one branch per value kind of FORMAT.md 1
    """Read one field by its kind (FORMAT.md 1, "Values"); raise _Unreadable with the code to report."""
    text = raw.strip()
    if text == "":
        if col.required:
            raise _Unreadable("value_invalid", f"{col.name} is required and blank")
        return None
    kind = col.kind
    if kind == spec.TEXT:  # the commonest first; the kinds' branches are disjoint
        if col.max_length and len(text) > col.max_length:
            raise _Unreadable(
                "value_invalid", f"{col.name} {text[:30]!r}... is longer than {col.max_length} characters"
            )
        return sys.intern(text) if col.name in _INTERNED else text
    if kind == spec.DATE:
        try:
            return _date_of(text)
        except ValueError:
            raise _Unreadable("date_invalid", f"{col.name} {text!r} is not a date (YYYY-MM-DD)")
    if kind == spec.MONTH:
        m = _MONTH.match(text)
        if not m or not 1 <= int(m[2]) <= 12:
            raise _Unreadable("date_invalid", f"{col.name} {text!r} is not a month (YYYY-MM)")
        return dt.date(int(m[1]), int(m[2]), 1)
    if kind == spec.YEAR:
        if not _YEAR.match(text):
            raise _Unreadable("value_invalid", f"{col.name} {text!r} is not a four-digit year")
        return _YEARS.setdefault(text, int(text))  # one int object per year: they are on many kept rows
    if kind == spec.YEARS:
        years = []
        for part in text.split(";"):
            if not _YEAR.match(part.strip()):
                raise _Unreadable("value_invalid", f"{col.name} {text!r}: {part!r} is not a four-digit year")
            years.append(int(part))
        return frozenset(years)
    if kind in (spec.MONEY, spec.DEC6, spec.DEC2):
        pattern, what = _NUMBERS[kind]
        if not pattern.match(text):
            raise _Unreadable("value_invalid", f"{col.name} {text!r} is not {what}")
        try:
            return Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern admits only digits
            raise _Unreadable("value_invalid", f"{col.name} {text!r} is not a number")
    if kind in (spec.PERCENT, spec.INT):
        if not _INT.match(text):
            raise _Unreadable("value_invalid", f"{col.name} {text!r} is not a whole number")
        return int(text)
    if kind == spec.CODE:
        if text not in col.choices:
            raise _Unreadable("value_invalid", f"{col.name} {text!r} is not one of {', '.join(col.choices)}")
        return sys.intern(text)
    raise AssertionError(f"no value kind {kind!r}")  # pragma: no cover - spec.py uses only the kinds above


_CACHED_KINDS = frozenset({spec.DATE, spec.MONTH, spec.YEAR, spec.YEARS, spec.CODE, spec.INT, spec.PERCENT})
# distinct texts kept per column: dates, years, codes and small numbers repeat row after row
_CACHED_MAX = 20_000


class _Cached(dict):
    """A column's texts read so far and their values (the kinds whose values repeat: a look-up, not a parse, for
    most fields); a text seen the first time, or past _CACHED_MAX, is read by parse_value. Unreadable texts raise
    and are not kept."""

    __slots__ = ("col",)

    def __init__(self, col: spec.Column) -> None:
        super().__init__()
        self.col = col

    def __missing__(self, raw: str) -> Any:
        value = parse_value(self.col, raw)
        if len(self) < _CACHED_MAX:
            self[raw] = value
        return value


def column_parser(col: spec.Column) -> Callable[[str], Any]:
    """parse_value for one column, made once per file: the same value, or the same _Unreadable, for every text.
    The common case of each kind is read directly; anything else (blanks, padding, errors) goes to parse_value."""
    if col.kind in _CACHED_KINDS or col.name in _FEW_VALUES:
        return _Cached(col).__getitem__
    if col.kind in _NUMBERS:
        # as written, no padding: what parse_value would accept unstripped
        exact = _NUMBERS[col.kind][0].fullmatch

        def number(raw: str) -> Any:
            return Decimal(raw) if exact(raw) else parse_value(col, raw)

        return number
    if col.kind == spec.TEXT:
        limit = col.max_length or sys.maxsize
        intern = sys.intern if col.name in _INTERNED else None

        def text(raw: str) -> Any:
            value = raw.strip()
            if not value or len(value) > limit:
                return parse_value(col, raw)
            return intern(value) if intern else value

        return text
    return lambda raw: parse_value(col, raw)  # pragma: no cover - spec.py uses only the kinds above


_FIELD = (1 << 62) - 1


def _amount_code(value: Any) -> int | None:
    """An amount of at most two decimals as an int that gives it back with its decimals as written; 0: none;
    None: too many digits to pack."""
    if not isinstance(value, Decimal):
        return 0
    _, digits, exponent = value.as_tuple()
    if len(digits) > 18:
        return None
    assert isinstance(exponent, int) and -2 <= exponent <= 0  # the pattern of an amount (FORMAT.md 1)
    places = -exponent
    return (int(value.scaleb(places)) << 2 | places) + 1


def _amount_of(code: int) -> Decimal | None:
    if not code:
        return None
    code -= 1
    return Decimal(code >> 2).scaleb(-(code & 3))


def _packed(bad: bool, compensation: Any, excess: Any) -> Any:
    """(bad, compensation, excess_compensation) of a compensation.csv row as one int, a fifth of the memory of the
    tuple of Decimals it stands for (the conversion keeps one per participant and year); that tuple when an amount
    has too many digits to pack."""
    a, b = _amount_code(compensation), _amount_code(excess)
    if a is None or b is None:
        return (
            bool(bad),
            compensation if isinstance(compensation, Decimal) else None,
            excess if isinstance(excess, Decimal) else None,
        )
    return ((b << 62 | a) << 1) | bool(bad)


def _unpacked(packed: Any) -> tuple[bool, Decimal | None, Decimal | None]:
    if isinstance(packed, tuple):
        return packed
    return bool(packed & 1), _amount_of((packed >> 1) & _FIELD), _amount_of(packed >> 63)


def add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    last = (dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)).day
    return dt.date(year, month, min(day.day, last))


def add_years(day: dt.date, years: int) -> dt.date:
    return add_months(day, 12 * years)


def fifteenth_after(day: dt.date) -> dt.date:
    """The 15th of the month after `day` (EDCP 5.1(b), 5.3, 5.4)."""
    return add_months(day.replace(day=15), 1)


def first_of_seventh_month(day: dt.date) -> dt.date:
    """The 1st day of the 7th month after the month of `day` (EDCP 5.1(b) for a Key Employee)."""
    return add_months(day.replace(day=1), 7)


def first_after_six_month_anniversary(day: dt.date) -> dt.date:
    """The 1st day of the month after the six-month anniversary of `day` (RRP 4.01(b), BRP 4.3)."""
    return add_months(add_months(day, 6).replace(day=1), 1)


@functools.lru_cache(maxsize=4096)  # a package names few distinct accounts, on most of its rows
def split_account(name: str) -> tuple[str, dt.date | None, bool]:
    """(kind, specified month, well formed): `specified_date:YYYY-MM` or a plain kind."""
    if name.startswith(spec.SPECIFIED_DATE + ":"):
        m = _MONTH.match(name.split(":", 1)[1])
        if not m or not 1 <= int(m[2]) <= 12:
            return spec.SPECIFIED_DATE, None, False
        return spec.SPECIFIED_DATE, dt.date(int(m[1]), int(m[2]), 1), True
    return name, None, True


def _label(values: dict[str, Any], columns: tuple[str, ...]) -> str:
    """The label a finding's message starts with: the row's key values, spaced. Made in the branch that reports the
    finding, not on every row of the large files (most rows have none)."""
    return " ".join(str(values[c]) for c in columns)


_POSITION_KEY = ("employee_number", "plan", "account", "fund")
_CONTRIBUTION_KEY = ("employee_number", "plan", "plan_year", "account", "source")


class Checker:
    """One run of the checks over one package folder."""

    def __init__(self, *, folder: Path) -> None:
        self.folder = folder
        self.result = Result()
        self.files: dict[str, list[Row]] = {}
        self.present: dict[str, bool] = {}
        self.malformed: set[str] = set()
        self.row_counts: dict[str, int] = defaultdict(int)
        # control sums: (file, measure, plan, account, fund, plan_year, source) -> total
        self.sums: dict[tuple[str, ...], Decimal] = defaultdict(Decimal)
        self.unreadable_groups: set[tuple[str, ...]] = set()
        self.catalog = {p.code: p for p in Plan.objects.all()}
        self.cd: dt.date | None = None
        self.ke_from = 0
        self.ke_to = -1
        self._versions: dict[tuple[str, int], Any] = {}
        self._provided: dict[tuple[str, str, dt.date | None], Any] = {}

    # -- reporting -------------------------------------------------------------------------------

    def report(self, file: str, line: int, code: str, message: str) -> None:
        self.result.findings.append(Finding(file, line, code, message))

    def flag(self, file: str, row: Row, code: str, message: str) -> bool:
        """Report the row's (first) exception; a row already in error gets no second one."""
        if row.bad:
            return False
        row.bad = True
        self.report(file, row.line, code, message)
        return True

    # -- reading ---------------------------------------------------------------------------------

    def _rows(self, fspec: spec.FileSpec) -> Iterator[Row]:  # noqa: C901 - the shared checks 1-3 in order
        """The file's rows with the shared checks 1-3 made (row_malformed, value/date_invalid, duplicate_row).

        Duplicates are reported and not yielded; rows whose key could not be read are yielded with
        `bad` set and no key.
        """
        name = fspec.name
        path = self.folder / name
        if not path.is_file():
            self.present[name] = False
            self.report(name, 0, "file_missing", f"{name} is not in the package")
            return
        self.result.hashes[name] = file_sha256(path=path)
        rows = read_rows(path=path)
        header_row = next(rows, None)
        if header_row is None or header_row.values is None:
            self.present[name] = False
            self.report(name, 1, "header_invalid", f"{name} has no readable header line")
            return
        header = [normalise_header(h) for h in header_row.values]
        expected = set(fspec.column_names)
        problems = []
        missing = [c for c in fspec.column_names if c not in header]
        unknown = [h for h in header if h not in expected]
        twice = sorted({h for h in header if header.count(h) > 1})
        if missing:
            problems.append("lacks " + ", ".join(missing))
        if unknown:
            problems.append("names unknown column(s) " + ", ".join(unknown))
        if twice:
            problems.append("names " + ", ".join(twice) + " twice")
        if problems:
            self.present[name] = False
            self.report(name, 1, "header_invalid", f"the header of {name} " + "; ".join(problems))
            return
        self.present[name] = True
        columns = {c.name: c for c in fspec.columns}
        ordered = [columns[h] for h in header]
        names = [c.name for c in ordered]
        # one parser per column, made once per file (not a look-up of the column's kind on every field)
        parsers = [column_parser(c) for c in ordered]
        width = len(header)
        # the keys seen, each packed into one int (32 bits per key column: the index of its value in `codes`); a
        # large file's keys held as tuples would be its largest holding
        seen: set[int] = set()
        codes: list[dict[Any, int]] = [{} for _ in fspec.key]
        packing = [(k, c, 32 * i) for i, (k, c) in enumerate(zip(fspec.key, codes, strict=True))]
        row_counts = self.row_counts
        for raw in rows:
            row_counts[name] += 1
            texts = raw.values
            if texts is None:
                self.malformed.add(name)
                self.report(name, raw.line, "row_malformed", f"line {raw.line} {raw.problem}")
                continue
            if len(texts) != width:
                self.malformed.add(name)
                self.report(
                    name,
                    raw.line,
                    "row_malformed",
                    f"line {raw.line} has {len(texts)} values, the header names {width}",
                )
                continue
            try:
                # every field readable (nearly every row): the parsers' values straight into the row's dict
                values: dict[str, Any] = dict(zip(names, map(operator.call, parsers, texts), strict=True))
                row = Row(line=raw.line, v=values)
            except _Unreadable:
                # a field is not readable: read the row again field by field to report its first exception
                values = {}
                row = Row(line=raw.line, v=values)
                for col, text in zip(ordered, texts, strict=True):
                    try:
                        values[col.name] = parse_value(col, text)
                    except _Unreadable as exc:
                        values[col.name] = _UNREADABLE
                        if not row.bad:
                            self.flag(name, row, self._blank_code(name, col, text, exc.code), exc.message)
                # a required field left blank is unreadable, so only a row with an unreadable field can lack its key
                if fspec.key and any(
                    values[k] is _UNREADABLE or (values[k] is None and columns[k].required) for k in fspec.key
                ):
                    row.v["__keyless__"] = True
                    row.bad = True
                    yield row
                    continue
            packed = 0
            for k, c, shift in packing:
                packed |= c.setdefault(values[k], len(c)) << shift
            if packed in seen:  # package.csv, with no key: one row only
                key = tuple(values[k] for k in fspec.key)
                self._unflag_if_needed(name, row)
                self.report(
                    name,
                    raw.line,
                    "duplicate_row",
                    f"{' '.join(str(k) for k in key if k != 'package')} repeats an earlier row of {name}"
                    if fspec.key
                    else "package.csv has a second data row; a package has exactly one",
                )
                row.v["__duplicate__"] = True
                continue
            seen.add(packed)
            yield row

    def _blank_code(self, name: str, col: spec.Column, text: str, code: str) -> str:
        # a required BRP figure left blank is brp_figures_incomplete (FORMAT.md pension_figures.csv)
        if name == "pension_figures.csv" and text.strip() == "" and col.name in _BRP_FIGURES:
            return "brp_figures_incomplete"
        return code

    def _unflag_if_needed(self, name: str, row: Row) -> None:
        """A duplicate row gets duplicate_row only: drop a value exception already raised on it."""
        if row.bad:
            last = self.result.findings[-1]
            if last.file == name and last.line == row.line:
                self.result.findings.pop()

    def load(self, name: str, refs: Callable[[Row], None] | None = None) -> list[Row]:
        rows = []
        for row in self._rows(spec.BY_NAME[name]):
            rows.append(row)
        self.files[name] = rows
        return rows

    # -- helpers ---------------------------------------------------------------------------------

    def version(self, plan: str, year: int) -> Any:
        key = (plan, year)
        if key not in self._versions:
            self._versions[key] = self.catalog[plan].version_on(dt.date(year, 1, 1))
        return self._versions[key]

    def in_force(self, plan: str) -> Any:
        """The plan version in force in the conversion year (the catalog: plans are data); the latest without one."""
        return self.version(plan, self.cd.year if self.cd is not None else dt.date.max.year)

    def provides(self, plan: str, key: str) -> Any:
        """The plan's provision `key` in the conversion year, or None when the plan has none (asked on many rows:
        looked up once per plan, key and conversion date)."""
        memo = (plan, key, self.cd)
        if memo not in self._provided:
            # a plan the catalog lacks has no provisions: its rows are `unknown_plan` already (FORMAT.md 4)
            self._provided[memo] = self.in_force(plan).provision(key, None) if plan in self.catalog else None
        return self._provided[memo]

    def distribution_rule(self, plan: str, kind: str, trigger: str) -> dict | None:
        """The catalog's rule that pays an account of `kind` on `trigger`, if the plan has one."""
        return next(
            (
                r
                for r in self.provides(plan, "distribution") or []
                if r["trigger"] == trigger and kind in r["accounts"]
            ),
            None,
        )

    def above_401a17(self, plan: str) -> bool:
        """Plan Compensation is the part above the Code 401(a)(17) limit (the catalog's `plan_compensation`)."""
        return self.provides(plan, "plan_compensation") == "above_401a17"

    def figure(self, code: str, year: int) -> Decimal:
        """A dated IRS figure of the catalog, read once per run."""
        if not hasattr(self, "_figures"):
            self._figures: dict[tuple[str, int], Decimal] = {}
        if (code, year) not in self._figures:
            self._figures[(code, year)] = figure_for_year(code=code, year=year)
        return self._figures[(code, year)]

    def table(self, plan: str, code: str) -> Any:
        """A committee table of the plan in force on the conversion date, read once per run."""
        assert self.cd is not None
        if not hasattr(self, "_tables"):
            self._tables: dict[tuple[str, str], Any] = {}
        if (plan, code) not in self._tables:
            self._tables[(plan, code)] = plan_table(plan=self.catalog[plan], code=code, on=self.cd)
        return self._tables[(plan, code)]

    def announced(self, plan: str, code: str, year: int) -> Decimal:
        """An announced percentage of the plan for a plan year, read once per run."""
        if not hasattr(self, "_announced"):
            self._announced: dict[tuple[str, str, int], Decimal | MissingFigure] = {}
        key = (plan, code, year)
        if key not in self._announced:
            try:
                self._announced[key] = announced_percent(plan=self.catalog[plan], code=code, year=year)
            except MissingFigure as exc:
                self._announced[key] = exc
        value = self._announced[key]
        if isinstance(value, MissingFigure):
            raise value
        return value

    def is_valuation_date(self, day: dt.date) -> bool:
        try:
            return valuation_calendar.is_valuation_date(day)
        except ValueError:
            return False

    def key_employee(self, emp: str, day: dt.date) -> bool | None:
        """Key Employee on `day` (EDCP 1.20, RRP 1.14, BRP 1.3(i)); None when the list is not covered."""
        year = day.year - 1 if (day.month, day.day) >= (4, 1) else day.year - 2
        if not self.ke_from <= year <= self.ke_to:
            return None
        person = self.people.get(emp)
        if person is None or person.v.get("key_employee_years") in (None, _UNREADABLE):
            return False if person is not None and person.v.get("key_employee_years") is None else None
        return year in person.v["key_employee_years"]

    def employed(self, p: Row) -> bool:
        """Employed at the conversion date (FORMAT.md 1): no death, and no separation or a later rehire."""
        v = p.v
        if v.get("death_date"):
            return False
        term = v.get("termination_date")
        return term is None or (v.get("rehire_date") is not None and v["rehire_date"] > term)

    def ref_checks(self, name: str, row: Row, *, participant: bool = True, plan: bool = True) -> None:
        """The shared reference checks (FORMAT.md 2, check 4), as far as the file has the columns."""
        if row.bad:
            return
        v = row.v
        if participant and "employee_number" in v and v["employee_number"] not in self.people:
            self.flag(name, row, "missing_participant", f"{v['employee_number']} is not in participants.csv")
            return
        if plan and "plan" in v:
            code = v["plan"]
            if code not in self.plan_rows or code not in self.catalog:
                self.flag(
                    name, row, "unknown_plan", f"plan {code} is not in plans.csv or not in the plan catalog"
                )
                return
            if (
                participant
                and "employee_number" in v
                and (v["employee_number"], code) not in self.participations
            ):
                self.flag(
                    name,
                    row,
                    "not_in_plan",
                    f"{v['employee_number']} has no participations.csv row for {code}",
                )
                return
            if "account" in v and not self.account_name_ok(name, row):
                return
            if "fund" in v and name != "funds.csv" and (code, v["fund"]) not in self.fund_rows:
                self.flag(
                    name, row, "unknown_fund", f"fund {v['fund']} is not on the {code} menu in funds.csv"
                )

    def account_name_ok(self, name: str, row: Row) -> bool:
        v = row.v
        kind, month, ok = split_account(v["account"])
        if not ok:
            self.flag(
                name, row, "unknown_account", f"{v['account']}: the Specified Date month is not YYYY-MM"
            )
            return False
        if (v["plan"], kind) not in spec.ACCOUNT_SOURCES:
            self.flag(name, row, "unknown_account", f"{v['plan']} has no account {v['account']}")
            return False
        return True

    # -- the run ---------------------------------------------------------------------------------

    def run(self) -> Result:
        self.check_package()
        self.check_plans()
        self.load("funds.csv")
        self.fund_rows = {
            (r.v["plan"], r.v["fund"]): r for r in self.files["funds.csv"] if "__keyless__" not in r.v
        }
        self.check_fund_prices()
        self.check_funds()
        self.people: dict[str, Row] = {}
        for row in self.load("participants.csv"):
            if "__keyless__" not in row.v:
                self.people[row.v["employee_number"]] = row
        self.result.participants = len(self.people)
        self.participations: dict[tuple[str, str], Row] = {}
        for row in self.load("participations.csv"):
            if "__keyless__" not in row.v:
                self.participations[(row.v["employee_number"], row.v["plan"])] = row
        self.check_participants()
        self.check_participations()
        # of a participant, the later checks read when they were employed, their vesting service and their events
        for row in self.people.values():
            row.v = {k: row.v[k] for k in _PERSON_KEPT}
        # the files other checks look into, held whole; deferral_elections.csv, distribution_elections.csv and
        # pension_figures.csv are streamed by their own checks (what others need of them kept by key)
        for name in (
            "accounts.csv",
            "deferral_allocations.csv",
            "schedule_changes.csv",
            "payment_schedules.csv",
        ):
            self.load(name)
        self.accounts = {
            (r.v["employee_number"], r.v["plan"], r.v["account"]): r
            for r in self.files["accounts.csv"]
            if "__keyless__" not in r.v
        }
        self.check_positions()
        self.check_accounts()
        self.check_deferral_elections()
        self.check_deferral_allocations()
        self.check_distribution_elections()
        self.check_schedule_changes()
        self.check_investment_elections()
        self.check_beneficiaries()
        self.check_payment_schedules()
        self.check_pension_figures()
        self.check_db_benefits()
        # compensation.csv and contributions.csv, the largest file, come last: the files held for the checks above
        # are let go first. No check of another file reads what these two keep, and each flags only its own
        # file's rows, so the order changes no exception.
        self._let_go()
        self.check_compensation()
        self.check_contributions()
        self.check_control()
        self.files.clear()
        self.result.findings.sort(key=lambda f: (f.file, f.line, f.code))
        self.result.kept = Kept(plans=tuple(self.plan_rows), ke_from=self.ke_from, ke_to=self.ke_to)
        return self.result

    def _let_go(self) -> None:
        """Drop what only the checks already made read: the rows of the files held whole (accounts.csv,
        deferral_allocations.csv, schedule_changes.csv, payment_schedules.csv) and what was kept of positions.csv,
        the elections, the schedule changes and the pension figures. Kept: the participants and participations,
        which the reference checks of every file read."""
        for name in (
            "accounts.csv",
            "deferral_allocations.csv",
            "schedule_changes.csv",
            "payment_schedules.csv",
        ):
            self.files.pop(name, None)
        self.accounts = {}
        for kept in (
            "position_sums",
            "accounts_with_bad_positions",
            "deferral_election_keys",
            "_elections",
            "figures_in_force",
            "_schedules_by_emp",  # built on first use by schedules_of
            "_changes",  # built on first use by changes_of
        ):
            self.__dict__.pop(kept, None)

    # -- package.csv, plans.csv ------------------------------------------------------------------

    def check_package(self) -> None:
        name = "package.csv"
        rows = self.load(name)
        if not rows:
            if self.present.get(name) and not self.row_counts[name]:
                self.report(name, 0, "value_invalid", "package.csv has no data row")
            return
        row = rows[0]
        v = row.v
        if isinstance(v.get("package_id"), str):
            self.result.package_id = v["package_id"]
        if row.bad:
            return
        cd = v["conversion_date"]
        if not self.is_valuation_date(cd):
            self.flag(
                name,
                row,
                "date_invalid",
                f"conversion_date {cd} is not a Valuation Date (EDCP 1.37, RRP 1.32)",
            )
        elif v["created_on"] < cd:
            self.flag(
                name, row, "date_invalid", f"created_on {v['created_on']} is before conversion_date {cd}"
            )
        elif v["format_version"] != "1.0":
            self.flag(name, row, "value_invalid", f"format_version {v['format_version']!r} is not 1.0")
        elif v["key_employee_years_from"] > v["key_employee_years_to"]:
            self.flag(
                name,
                row,
                "value_invalid",
                f"key_employee_years_from {v['key_employee_years_from']} is after key_employee_years_to "
                f"{v['key_employee_years_to']}",
            )
        if not row.bad:
            self.cd = cd
            self.result.conversion_date = cd
            self.ke_from = v["key_employee_years_from"]
            self.ke_to = v["key_employee_years_to"]

    def check_plans(self) -> None:
        name = "plans.csv"
        self.plan_rows: dict[str, Row] = {}
        for row in self.load(name):
            if "__keyless__" in row.v:
                continue
            code = row.v["plan"]
            self.plan_rows[code] = row
            if row.bad:
                continue
            plan = self.catalog.get(code)
            if plan is None:
                self.flag(name, row, "unknown_plan", f"plan {code} is not in the system's plan catalog")
            elif row.v["plan_kind"] != plan.kind:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"plan_kind {row.v['plan_kind']} of {code} is not the catalog's {plan.kind}",
                )

    def is_db(self, plan: str) -> bool:
        p = self.catalog.get(plan)
        return p is not None and p.kind == Plan.Kind.DEFINED_BENEFIT

    # -- funds.csv, fund_prices.csv ---------------------------------------------------------------

    def check_fund_prices(self) -> None:
        name = "fund_prices.csv"
        self.prices_on_cd: dict[tuple[str, str], Decimal] = {}
        self.prices: dict[tuple[str, str, dt.date], Decimal] = {}
        for row in self._rows(spec.BY_NAME[name]):
            if "__keyless__" in row.v:
                continue
            self.ref_checks(name, row, participant=False)
            if row.bad:
                continue
            v = row.v
            if not self.is_valuation_date(v["date"]):
                self.flag(
                    name,
                    row,
                    "date_invalid",
                    f"{v['plan']} {v['fund']} date {v['date']} is not a Valuation Date",
                )
            elif self.cd and v["date"] > self.cd:
                self.flag(
                    name,
                    row,
                    "date_invalid",
                    f"{v['plan']} {v['fund']} date {v['date']} is after the conversion date {self.cd}",
                )
            elif v["price"] <= 0:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{v['plan']} {v['fund']} price {v['price']} on {v['date']} is not more than zero",
                )
            else:
                self.prices[(v["plan"], v["fund"], v["date"])] = v["price"]
                if v["date"] == self.cd:
                    self.prices_on_cd[(v["plan"], v["fund"])] = v["price"]
        self.price_rows_seen = True

    def check_funds(self) -> None:
        name = "funds.csv"
        defaults: dict[str, Row] = {}
        first: dict[str, Row] = {}
        for row in self.files[name]:
            if "__keyless__" in row.v:
                continue
            self.ref_checks(name, row, participant=False)
            if row.bad:
                continue
            v = row.v
            first.setdefault(v["plan"], row)
            if self.is_db(v["plan"]):
                self.flag(
                    name, row, "value_invalid", f"{v['plan']} is a defined benefit plan: it has no funds"
                )
            elif v["default_fund"] == "yes" and v["plan"] in defaults:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{v['fund']} is a second default fund of {v['plan']} (after {defaults[v['plan']].v['fund']}; EDCP 7.5, RRP 3.05(b))",
                )
            elif (v["plan"], v["fund"]) not in self.prices_on_cd and self.present.get("fund_prices.csv"):
                self.flag(
                    name,
                    row,
                    "price_missing",
                    f"fund_prices.csv has no price of {v['plan']} {v['fund']} on {self.cd}",
                )
            if v["default_fund"] == "yes" and not self.is_db(v["plan"]):
                defaults.setdefault(v["plan"], row)
        for plan, row in first.items():
            if plan not in defaults and not self.is_db(plan):
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{plan} has no default fund (default_fund yes; EDCP 7.5, RRP 3.05(b))",
                )

    # -- participants.csv, participations.csv -------------------------------------------------------

    def check_participants(self) -> None:
        name = "participants.csv"
        has_participation = {emp for emp, _ in self.participations}
        for row in self.files[name]:
            if row.bad:
                continue
            v = row.v
            emp = v["employee_number"]
            message = self._participant_dates(v)
            if message:
                self.flag(name, row, "date_invalid", f"{emp}: {message}")
                continue
            message = self._participant_values(v)
            if message:
                self.flag(name, row, "value_invalid", f"{emp}: {message}")
                continue
            if emp not in has_participation and self.present.get("participations.csv"):
                self.flag(name, row, "participation_invalid", f"{emp} has no row in participations.csv")

    def _participant_dates(self, v: dict[str, Any]) -> str:
        if v["hire_date"] <= v["birth_date"]:
            return f"hire_date {v['hire_date']} is not after birth_date {v['birth_date']}"
        if v["rehire_date"] and (v["termination_date"] is None or v["rehire_date"] <= v["termination_date"]):
            return f"rehire_date {v['rehire_date']} is not after a termination_date"
        if v["termination_date"] and v["termination_date"] < v["hire_date"]:
            return f"termination_date {v['termination_date']} is before hire_date {v['hire_date']}"
        if v["death_date"] and v["death_date"] < v["birth_date"]:
            return f"death_date {v['death_date']} is before birth_date {v['birth_date']}"
        if self.cd:
            for col in (
                "birth_date",
                "hire_date",
                "rehire_date",
                "termination_date",
                "death_date",
                "disability_date",
            ):
                if v[col] and v[col] > self.cd:
                    return f"{col} {v[col]} is after the conversion date {self.cd}"
        return ""

    def _participant_values(self, v: dict[str, Any]) -> str:
        if v["termination_date"] and not v["termination_reason"]:
            return f"termination_date {v['termination_date']} has no termination_reason"
        if v["termination_reason"] and not v["termination_date"]:
            return f"termination_reason {v['termination_reason']} without a termination_date"
        if v["state"] and not _STATE.match(v["state"]):
            return f"state {v['state']!r} is not two capital letters"
        if v["postal_code"] and not _POSTAL.match(v["postal_code"]):
            return f"postal_code {v['postal_code']!r} is not 12345 or 12345-6789"
        if v["email"] and not _EMAIL.match(v["email"]):
            return f"email {v['email']!r} is not an email address"
        for year in sorted(v["key_employee_years"] or ()):
            if not self.ke_from <= year <= self.ke_to:
                return f"key_employee_years {year} is outside the covered years {self.ke_from}-{self.ke_to}"
        if not 0 <= v["vesting_service_years"] <= 80:
            return f"vesting_service_years {v['vesting_service_years']} is outside 0-80"
        if self.cd:
            expected = self._service_through(v)
            if expected is not None and v["vesting_service_through"] != expected:
                return f"vesting_service_through {v['vesting_service_through']} is not {expected}"
        return ""

    def _service_through(self, v: dict[str, Any]) -> int | None:
        assert self.cd is not None
        row = Row(0, v)
        if self.employed(row):
            return self.cd.year - 1
        ends = [d for d in (v["death_date"], v["termination_date"]) if d]
        if v["rehire_date"] and v["death_date"]:
            ends = [v["death_date"]]
        return min(ends).year - 1 if ends else None

    def check_participations(self) -> None:
        name = "participations.csv"
        for row in self.files[name]:
            if row.bad:
                continue
            self.ref_checks(name, row, participant=True, plan=False)
            if row.bad:
                continue
            v = row.v
            if v["plan"] not in self.plan_rows or v["plan"] not in self.catalog:
                self.flag(
                    name,
                    row,
                    "unknown_plan",
                    f"plan {v['plan']} is not in plans.csv or not in the plan catalog",
                )
                continue
            person = self.people[v["employee_number"]]
            if person.bad:
                continue
            message = self._participation_problem(v, person)
            if message:
                self.flag(
                    name, row, "participation_invalid", f"{v['employee_number']} {v['plan']}: {message}"
                )

    def _participation_problem(self, v: dict[str, Any], person: Row) -> str:
        p = person.v
        if v["entry_date"] < p["hire_date"]:
            return f"entry_date {v['entry_date']} is before hire_date {p['hire_date']}"
        if self.cd and v["entry_date"] > self.cd:
            return f"entry_date {v['entry_date']} is after the conversion date {self.cd}"
        if v["eligible_on"] and v["eligible_on"] > v["entry_date"]:
            return f"eligible_on {v['eligible_on']} is after entry_date {v['entry_date']}"
        frozen = self.catalog[v["plan"]].version_on(v["entry_date"]).provision("frozen_after", None)
        if frozen and v["entry_date"] > dt.date.fromisoformat(str(frozen)):
            return f"entry_date {v['entry_date']} is after the plan was frozen on {frozen} (BRP 2.1)"
        status = v["status"]
        if status in ("active", "inactive") and not self.employed(person):
            return f"status {status}, but the participant is not employed at the conversion date"
        if status == "separated" and (p["termination_date"] is None or p["death_date"]):
            return "status separated without a termination_date, or with a death_date"
        if status == "deceased" and not p["death_date"]:
            return "status deceased without a death_date"
        return ""

    # -- positions.csv, accounts.csv -------------------------------------------------------------------

    def check_positions(self) -> None:
        name = "positions.csv"
        self.position_sums: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
        self.accounts_with_bad_positions: set[tuple[str, str, str]] = set()
        count = 0
        for row in self._rows(spec.BY_NAME[name]):
            count += 1
            v = row.v
            if "__keyless__" in v:
                self._position_sums(v, readable=False)
                continue
            self._position_sums(v, readable=True)
            account = (v["employee_number"], v["plan"], v["account"])
            self.ref_checks(name, row)
            if not row.bad and account not in self.accounts:
                self.flag(name, row, "unknown_account", f"{' '.join(account)} has no row in accounts.csv")
            if not row.bad:
                self._position_values(name, row)
            if row.bad:
                self.accounts_with_bad_positions.add(account)
            else:
                self.position_sums[account] += v["market_value"]
        self.result.positions = count

    def _position_values(self, name: str, row: Row) -> None:
        v = row.v
        for col in ("units", "price", "market_value"):
            if v[col] <= 0:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{_label(v, _POSITION_KEY)}: {col} {v[col]} is not more than zero",
                )
                return
        fund_price = self.prices_on_cd.get((v["plan"], v["fund"]))
        if fund_price is not None and v["price"] != fund_price:
            self.flag(
                name,
                row,
                "price_mismatch",
                f"{_label(v, _POSITION_KEY)}: price {v['price']} is not the fund's price {fund_price} on {self.cd}",
            )
            return
        expected = cents(v["units"] * v["price"])
        if expected != v["market_value"]:
            self.flag(
                name,
                row,
                "units_price_value_mismatch",
                f"{_label(v, _POSITION_KEY)}: {v['units']} units x {v['price']} = {expected}, not {v['market_value']}",
            )

    def _position_sums(self, v: dict[str, Any], *, readable: bool) -> None:
        plan = v.get("plan") if isinstance(v.get("plan"), str) else None
        account = v.get("account") if isinstance(v.get("account"), str) else None
        fund = v.get("fund") if isinstance(v.get("fund"), str) else None
        kind = split_account(account)[0] if account else ""
        f = "positions.csv"
        groups = (
            ("units", (f, "units", plan or "", kind, fund or "", "", "")),
            ("market_value", (f, "market_value", plan or "", kind, fund or "", "", "")),
            ("market_value", (f, "market_value", plan or "", "", "", "", "")),
            ("market_value", (f, "market_value", "", "", "", "", "")),
        )
        for measure, key in groups:
            value = v.get(measure)
            if isinstance(value, Decimal) and plan is not None and (account is not None or key[3] == ""):
                self.sums[key] += value
            else:
                self.unreadable_groups.add(key)
                self.unreadable_groups.add((f, measure, "*"))

    def check_accounts(self) -> None:
        name = "accounts.csv"
        allocated: dict[tuple[str, str], set[str]] = defaultdict(set)
        for row in self.files.get("deferral_allocations.csv", []):
            if "__keyless__" not in row.v and str(row.v["account"]).startswith(spec.SPECIFIED_DATE + ":"):
                allocated[(row.v["employee_number"], row.v["plan"])].add(row.v["account"])
        specified: dict[tuple[str, str], set[str]] = defaultdict(set)
        for row in self.files[name]:
            v = row.v
            if "__keyless__" in v:
                for measure in ("value", "vested_value"):
                    self.unreadable_groups.add((name, measure, "*"))
                continue
            kind = split_account(v["account"])[0]
            for measure in ("value", "vested_value"):
                key = (name, measure, v["plan"], kind, "", "", "")
                if isinstance(v.get(measure), Decimal):
                    self.sums[key] += v[measure]
                else:
                    self.unreadable_groups.add(key)
            self.ref_checks(name, row)
            if row.bad:
                continue
            if kind == spec.SPECIFIED_DATE:
                owner = (v["employee_number"], v["plan"])
                specified[owner].add(v["account"])
                names = specified[owner] | allocated[owner]
                if len(names) > spec.MAX_SPECIFIED_DATE_ACCOUNTS:
                    self.flag(
                        name,
                        row,
                        "unknown_account",
                        f"{v['account']} would be a sixth Specified Date Account of {v['employee_number']} (EDCP 1.32: at most five)",
                    )
                    continue
            self._account_values(name, row)

    def _account_values(self, name: str, row: Row) -> None:
        v = row.v
        emp, plan, account = v["employee_number"], v["plan"], v["account"]
        label = f"{emp} {plan} {account}"
        if self.cd and v["opened_on"] > self.cd:
            self.flag(
                name, row, "date_invalid", f"{label}: opened_on {v['opened_on']} is after the conversion date"
            )
            return
        key = (emp, plan, account)
        if key not in self.accounts_with_bad_positions and self.present.get("positions.csv"):
            total = self.position_sums.get(key, ZERO)
            if total != v["value"]:
                self.flag(
                    name,
                    row,
                    "account_total_mismatch",
                    f"{label}: value {v['value']} is not the sum of its positions, {cents(total)}",
                )
                return
        if v["vested_percent"] > 100:
            self.flag(
                name, row, "value_invalid", f"{label}: vested_percent {v['vested_percent']} is above 100"
            )
            return
        vested = cents(v["value"] * v["vested_percent"] / HUNDRED)
        if vested != v["vested_value"]:
            self.flag(
                name,
                row,
                "account_total_mismatch",
                f"{label}: vested_value {v['vested_value']} is not {v['value']} x {v['vested_percent']}% = {vested}",
            )
            return
        person = self.people[emp]
        if person.bad or self.cd is None:
            return
        expected, cite = self._vesting(plan, account, person)
        if expected is not None and v["vested_percent"] != expected:
            self.flag(
                name,
                row,
                "vesting_mismatch",
                f"{label}: vested_percent {v['vested_percent']} is not {expected} ({cite})",
            )
            return
        if v["vested_percent"] < 100 and not self.employed(person):
            self.flag(
                name,
                row,
                "vesting_mismatch",
                f"{label}: {v['vested_percent']}% vested after separation: the unvested part is forfeited ({cite})",
            )
            return
        if (
            v["value"] > 0
            and self._triggered(plan, account, person)
            and self.present.get("payment_schedules.csv")
        ):
            if not any(
                (emp, plan, account) == (s.v["employee_number"], s.v["plan"], s.v["account"])
                for s in self.schedules_of(emp)
            ):
                self.flag(
                    name,
                    row,
                    "schedule_inconsistent_with_balance",
                    f"{label}: the event that pays it has happened, but payment_schedules.csv has no row for it",
                )

    def schedules_of(self, emp: str) -> list[Row]:
        if not hasattr(self, "_schedules_by_emp"):
            self._schedules_by_emp: dict[str, list[Row]] = defaultdict(list)
            for s in self.files.get("payment_schedules.csv", []):
                if "__keyless__" not in s.v:
                    self._schedules_by_emp[s.v["employee_number"]].append(s)
        return self._schedules_by_emp.get(emp, [])

    def _vesting(self, plan: str, account: str, person: Row) -> tuple[int | None, str]:
        p = person.v
        kind = split_account(account)[0]
        died_employed = bool(p["death_date"]) and (
            p["termination_date"] is None
            or (p["rehire_date"] is not None and p["rehire_date"] > p["termination_date"])
        )
        # the catalog's vesting rule of the account (EDCP 4.2, RRP 3.06): plans are data
        rule = next((r for r in self.provides(plan, "vesting") or [] if kind in r["accounts"]), None)
        if rule is None or rule["rule"] == "immediate":
            return 100, (rule or {}).get("cite") or self.in_force(plan).cite("vesting")
        cite, full_on = rule["cite"], rule.get("full_on", ())
        since = rule.get("full_if_service_on_or_after")
        end = p["death_date"] or p["termination_date"]
        if since and (self.employed(person) or (end and end >= dt.date.fromisoformat(since))):
            return 100, cite
        if died_employed and "death_while_employed" in full_on:
            return 100, cite
        age = self.provides(plan, "retirement_age")
        if "retirement" in full_on and age and p["termination_date"]:
            if add_years(p["birth_date"], int(age)) <= p["termination_date"]:
                return 100, cite
        if rule["rule"] == "cliff":
            return (100 if p["vesting_service_years"] >= int(rule["cliff_years"]) else 0), cite
        assert self.cd is not None
        percent = 0
        for years, value in self.table(plan, rule["schedule_table"]).rows:
            if p["vesting_service_years"] >= int(years):
                percent = int(Decimal(str(value)))
        return percent, cite

    def _triggered(self, plan: str, account: str, person: Row) -> bool:
        p = person.v
        kind, month, _ = split_account(account)
        if p["death_date"]:
            return True
        separated = not self.employed(person) and p["termination_date"] is not None
        if separated and self.distribution_rule(plan, kind, "separation"):
            return True
        if p["disability_date"] and self.distribution_rule(plan, kind, "disability"):
            return True
        if kind == spec.SPECIFIED_DATE and month is not None and self.cd:
            in_force = self.payment_month_in_force(p["employee_number"], plan, account, month)
            return in_force.replace(day=15) <= self.cd
        return False

    def payment_month_in_force(self, emp: str, plan: str, account: str, month: dt.date) -> dt.date:
        for change in self.changes_of(emp, plan, account):
            if change.v.get("new_payment_month"):
                month = change.v["new_payment_month"]
        return month

    def changes_of(self, emp: str, plan: str, account: str) -> list[Row]:
        if not hasattr(self, "_changes"):
            self._changes: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
            for r in self.files.get("schedule_changes.csv", []):
                if "__keyless__" not in r.v:
                    self._changes[(r.v["employee_number"], r.v["plan"], r.v["account"])].append(r)
            for rows in self._changes.values():
                rows.sort(key=lambda r: r.v["filed_on"])
        return [r for r in self._changes.get((emp, plan, account), []) if not r.bad]

    # -- contributions.csv, compensation.csv ------------------------------------------------------------

    def check_contributions(self) -> None:
        name = "contributions.csv"
        comp_years = self.compensation
        # (emp, plan, year) -> [first deferral row line, deferral total, matching (line, amount) | None, group bad]
        groups: dict[tuple[str, str, int], list[Any]] = {}
        for row in self._rows(spec.BY_NAME[name]):
            v = row.v
            if "__keyless__" in v:
                self.unreadable_groups.add((name, "amount", "*"))
                self.unreadable_groups.add((name, "fica_wages", "*"))
                continue
            plan, year_text, source = v["plan"], str(v["plan_year"]), v["source"]
            for measure in ("amount", "fica_wages"):
                key = (name, measure, plan, "", "", year_text, source)
                if isinstance(v.get(measure), Decimal):
                    self.sums[key] += v[measure]
                else:
                    self.unreadable_groups.add(key)
            gkey = (v["employee_number"], plan, v["plan_year"])
            group = groups.get(gkey)
            if group is None:
                group = groups[gkey] = [0, ZERO, None, False]
            self.ref_checks(name, row)
            if not row.bad:
                self._contribution_row(name, row)
            if row.bad:
                group[3] = True
                continue
            if v["source"] == "deferral":
                if not group[0]:
                    group[0] = row.line
                group[1] += v["amount"]
            elif v["source"] == "matching" and self.provides(v["plan"], "matching"):
                group[2] = (row.line, v["amount"])
        for (emp, plan, year), (line, deferred, matching, bad) in groups.items():
            if bad:
                continue
            self._contribution_group(name, emp, plan, year, line, deferred, matching, comp_years)

    def _contribution_row(self, name: str, row: Row) -> None:
        v = row.v
        kind = split_account(v["account"])[0]
        sources = spec.ACCOUNT_SOURCES.get((v["plan"], kind), ())
        if v["source"] not in sources:
            self.flag(
                name,
                row,
                "contribution_invalid_for_plan",
                f"{_label(v, _CONTRIBUTION_KEY)}: {v['source']} is not a source of {v['plan']} {kind} (EDCP 4.1, RRP 3.02-3.04)",
            )
            return
        participation = self.participations[(v["employee_number"], v["plan"])]
        if participation.bad:
            return
        entry_year = participation.v["entry_date"].year
        if v["plan_year"] < entry_year or (self.cd and v["plan_year"] > self.cd.year):
            self.flag(
                name,
                row,
                "contribution_invalid_for_plan",
                f"{_label(v, _CONTRIBUTION_KEY)}: plan year {v['plan_year']} is before the entry year {entry_year} or after the conversion year",
            )

    def _contribution_group(
        self,
        name: str,
        emp: str,
        plan: str,
        year: int,
        line: int,
        deferred: Decimal,
        matching: tuple[int, Decimal] | None,
        comp_years: dict[tuple[str, int], Any],
    ) -> None:
        if line:
            comp = comp_years.get((emp, year))
            if comp is None:
                self.report(
                    name,
                    line,
                    "contribution_invalid_for_plan",
                    f"{emp} {plan} {year}: deferrals but no compensation.csv row for {year}",
                )
                return
            bad, compensation, excess = _unpacked(comp)
            if bad:
                return
            above = self.above_401a17(plan)
            cap_col = "excess_compensation" if above else "compensation"
            cap = excess if above else compensation
            if cap is not None and deferred > cap:
                self.report(
                    name,
                    line,
                    "contribution_invalid_for_plan",
                    f"{emp} {plan} {year}: deferrals {deferred} exceed the year's {cap_col} {cap} (EDCP 1.12, RRP 1.21)",
                )
                return
        if matching is not None and matching[1] > deferred:
            self.report(
                name,
                matching[0],
                "contribution_invalid_for_plan",
                f"{emp} RRP {year}: matching {matching[1]} is larger than the year's deferrals {deferred} (RRP 3.04)",
            )

    def _kept_compactly(self, rows: Iterator[Row]) -> Iterator[Row]:
        """Stream compensation.csv; once a row is checked, keep only what contributions.csv needs of it."""
        for row in rows:
            yield row
            v = row.v
            if "__keyless__" not in v:
                self.compensation[(v["employee_number"], v["plan_year"])] = _packed(
                    row.bad, v.get("compensation"), v.get("excess_compensation")
                )

    def check_compensation(self) -> None:
        name = "compensation.csv"
        rrp_entry = {emp: r for (emp, plan), r in self.participations.items() if self.above_401a17(plan)}
        # (employee, plan year) -> (bad, compensation, excess_compensation), packed (_packed)
        self.compensation: dict[tuple[str, int], Any] = {}
        for row in self._kept_compactly(self._rows(spec.BY_NAME[name])):
            if row.bad:
                continue
            self.ref_checks(name, row, plan=False)
            if row.bad:
                continue
            v = row.v
            emp, year = v["employee_number"], v["plan_year"]
            label = f"{emp} {year}"
            if self.cd and year > self.cd.year:
                self.flag(
                    name,
                    row,
                    "contribution_invalid_for_plan",
                    f"{label}: plan year {year} is after the conversion year",
                )
                continue
            try:
                limit_402g = self.figure("402(g)(1)", year)
                limit_401a17 = self.figure("401(a)(17)", year)
            except MissingFigure as exc:
                self.flag(name, row, "contribution_invalid_for_plan", f"{label}: {exc}")
                continue
            participation = rrp_entry.get(emp)
            needs_excess = (
                participation is not None
                and not participation.bad
                and participation.v["entry_date"].year <= year
            )
            excess = v["excess_compensation"]
            if participation is not None and participation.bad:
                pass
            elif needs_excess and excess is None:
                self.flag(
                    name,
                    row,
                    "contribution_invalid_for_plan",
                    f"{label}: excess_compensation is blank, but {emp} is in the RRP in {year} (RRP 1.21)",
                )
                continue
            elif not needs_excess and excess is not None:
                self.flag(
                    name,
                    row,
                    "contribution_invalid_for_plan",
                    f"{label}: excess_compensation {excess} is given, but {emp} is not in the RRP in {year}",
                )
                continue
            elif excess is not None and excess != max(ZERO, v["compensation"] - limit_401a17):
                self.flag(
                    name,
                    row,
                    "contribution_invalid_for_plan",
                    f"{label}: excess_compensation {excess} is not {v['compensation']} less the 401(a)(17) limit {limit_401a17} (RRP 1.21)",
                )
                continue
            if v["rsp_elective_deferrals"] > limit_402g:
                self.flag(
                    name,
                    row,
                    "contribution_invalid_for_plan",
                    f"{label}: rsp_elective_deferrals {v['rsp_elective_deferrals']} exceed the 402(g)(1) limit {limit_402g}",
                )

    # -- elections --------------------------------------------------------------------------------------

    def check_deferral_elections(self) -> None:
        """Streamed; the elections' keys are kept for deferral_allocations.csv."""
        name = "deferral_elections.csv"
        self.deferral_election_keys: set[tuple[str, str, int]] = set()
        for row in self._rows(spec.BY_NAME[name]):
            if "__keyless__" not in row.v:
                self.deferral_election_keys.add((row.v["employee_number"], row.v["plan"], row.v["plan_year"]))
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            message = self._deferral_problem(row.v)
            if message:
                self.flag(
                    name,
                    row,
                    "election_invalid_for_plan",
                    f"{row.v['employee_number']} {row.v['plan']} {row.v['plan_year']} {row.v['component']}: {message}",
                )

    def _deferral_problem(self, v: dict[str, Any]) -> str:
        plan, year = v["plan"], v["plan_year"]
        if self.is_db(plan):
            return f"{plan} takes no deferrals"
        if self.cd and year not in (self.cd.year, self.cd.year + 1):
            return f"plan year {year} is neither the conversion year nor the next"
        version = self.version(plan, year)
        component = version.component(v["component"])
        if component is None:
            return (
                f"{v['component']} is not a pay component of {plan} ({version.cite('deferral_components')})"
            )
        cite = component.get("cite", "")
        if self.cd and v["filed_on"] > self.cd:
            return f"filed_on {v['filed_on']} is after the conversion date"
        try:
            top = (
                self.announced(plan, "announced_max_deferral_percent", year)
                if component["max_percent"] == "announced"
                else Decimal(component["max_percent"])
            )
        except MissingFigure:
            top = None
        if top is not None and v["percent"] > top:
            return f"{v['percent']}% is above the maximum {top}% ({cite})"
        kind = v["election_type"]
        if kind == "annual" and v["filed_on"] > dt.date(year - 1, 12, 31):
            return f"an annual election filed {v['filed_on']}, after December 31 before the plan year (EDCP 3.2(b), RRP 2.03(b))"
        if kind == "first_year":
            participation = self.participations[(v["employee_number"], plan)]
            eligible = None if participation.bad else participation.v["eligible_on"]
            if participation.bad:
                return ""
            if eligible is None or not eligible <= v["filed_on"] <= eligible + dt.timedelta(days=30):
                return f"a first-year election filed {v['filed_on']}, not within 30 days of eligibility {eligible} (EDCP 3.2(a), RRP 2.03(c))"
        if kind == "performance":
            start, end = v["performance_period_start"], v["performance_period_end"]
            if not component.get("performance_based") or start is None or end is None:
                return f"{v['component']} is not Performance-Based Compensation with a performance period (EDCP 3.2(c))"
            if end < add_months(start, 12) - dt.timedelta(days=1):
                return f"the performance period {start} to {end} is shorter than 12 months (EDCP 3.2(c))"
            if v["filed_on"] > add_months(end, -6):
                return f"filed {v['filed_on']}, later than six months before the period's end {end} (EDCP 3.2(c))"
        return ""

    def check_deferral_allocations(self) -> None:
        name = "deferral_allocations.csv"
        elections = self.deferral_election_keys
        groups: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
        for row in self.files[name]:
            if "__keyless__" in row.v:
                continue
            groups[(row.v["employee_number"], row.v["plan"], row.v["plan_year"])].append(row)
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            v = row.v
            label = f"{v['employee_number']} {v['plan']} {v['plan_year']} {v['account']}"
            kind, month, _ = split_account(v["account"])
            if not 1 <= v["percent"] <= 100:
                self.flag(name, row, "value_invalid", f"{label}: percent {v['percent']} is outside 1-100")
            elif (v["employee_number"], v["plan"], v["plan_year"]) not in elections:
                self.flag(
                    name,
                    row,
                    "election_invalid_for_plan",
                    f"{label}: no deferral election for {v['plan_year']} (EDCP 3.3)",
                )
            elif "deferral" not in spec.ACCOUNT_SOURCES.get((v["plan"], kind), ()):
                self.flag(
                    name, row, "election_invalid_for_plan", f"{label}: {kind} takes no deferrals (EDCP 3.3)"
                )
            elif (
                month is not None
                and self.payment_month_in_force(v["employee_number"], v["plan"], v["account"], month).year
                <= v["plan_year"]
            ):
                self.flag(
                    name,
                    row,
                    "election_invalid_for_plan",
                    f"{label}: the Specified Date Account pays in or before {v['plan_year']} (EDCP 5.2(a))",
                )
        for (emp, plan, year), rows in groups.items():
            if any(r.bad for r in rows):
                continue
            total = sum(r.v["percent"] for r in rows)
            if total != 100:
                self.report(
                    name,
                    rows[0].line,
                    "election_invalid_for_plan",
                    f"{emp} {plan} {year}: allocations add up to {total}%, not 100% (EDCP 3.3)",
                )

    def _form_problem(
        self, plan: str, account: str, form: str | None, installments: int | None, lump: int | None
    ) -> str:
        kind = split_account(account)[0]
        if form is None:
            return ""
        # the forms the catalog's rule for the account offers (EDCP 5.1(c), 5.2(c), 5.3; RRP 4.02): plans are data
        rule: dict[str, Any] = next(
            (
                r
                for r in self.provides(plan, "distribution") or []
                if kind in r["accounts"] and r["trigger"] in ("separation", "specified_date")
            ),
            {},
        )
        allowed: tuple[str, ...] = tuple(rule.get("forms", ("lump_sum",)))
        counts = rule.get("installments") or {}
        low, high = counts.get("min", 0), counts.get("max", 0)
        cite = counts.get("cite") or rule.get("cite") or self.in_force(plan).cite("distribution")
        if form not in allowed:
            return f"{form} is not a form offered for {account} ({cite})"
        if form == "lump_sum" and installments is not None:
            return f"installments {installments} given with a lump sum ({cite})"
        if form != "lump_sum" and (installments is None or not low <= installments <= high):
            return f"installments {installments} outside {low}-{high} ({cite})"
        if form == "lump_sum_and_installments" and (lump is None or not 1 <= lump <= 99):
            return f"lump_sum_percent {lump} missing or outside 1-99 ({cite})"
        if form != "lump_sum_and_installments" and lump is not None:
            return f"lump_sum_percent {lump} given with {form} ({cite})"
        return ""

    def check_distribution_elections(self) -> None:
        """Streamed; of each account's first election, what `election_in_force` reads is kept once it is checked."""
        name = "distribution_elections.csv"
        self._elections: dict[tuple[str, str, str], tuple[bool, str, int | None, int | None, int]] = {}
        for row in self._rows(spec.BY_NAME[name]):
            self._distribution_election(name, row)
            v = row.v
            if "__keyless__" not in v:
                self._elections.setdefault(
                    (v["employee_number"], v["plan"], v["account"]),
                    (row.bad, v["form"], v["installments"], v["lump_sum_percent"], v["delay_months"] or 0),
                )

    def _distribution_election(self, name: str, row: Row) -> None:
        if row.bad:
            return
        self.ref_checks(name, row)
        if row.bad:
            return
        v = row.v
        label = f"{v['employee_number']} {v['plan']} {v['account']}"
        message = self._form_problem(
            v["plan"], v["account"], v["form"], v["installments"], v["lump_sum_percent"]
        )
        if not message and v["delay_months"] is not None:
            rule = self.distribution_rule(v["plan"], split_account(v["account"])[0], "separation") or {}
            later = rule.get("later_start")
            if not later:
                message = f"delay_months given for {v['account']} (EDCP 5.1(b))"
            elif v["delay_months"] > 12 * later["max_years"]:
                message = (
                    f"delay_months {v['delay_months']} is above {12 * later['max_years']} ({later['cite']})"
                )
        if message:
            self.flag(name, row, "election_invalid_for_plan", f"{label}: {message}")

    def check_schedule_changes(self) -> None:
        name = "schedule_changes.csv"
        for row in self.files[name]:
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            v = row.v
            label = f"{v['employee_number']} {v['plan']} {v['account']} filed {v['filed_on']}"
            kind, month, _ = split_account(v["account"])
            message = ""
            if not self.provides(v["plan"], "schedule_change"):
                message = f"{v['plan']} has no schedule changes ({self.in_force(v['plan']).cite('schedule_change')})"
            elif kind == "retirement_termination" and (v["delay_years"] is None or v["delay_years"] < 5):
                message = f"delay_years {v['delay_years']} is not at least 5 (EDCP 6.3)"
            elif kind == spec.SPECIFIED_DATE and month is not None:
                before = month
                for change in self.changes_of(v["employee_number"], v["plan"], v["account"]):
                    if change is row:
                        break
                    if change.v.get("new_payment_month"):
                        before = change.v["new_payment_month"]
                new = v["new_payment_month"]
                if new is None:
                    message = "a Specified Date change without new_payment_month (EDCP 6.3)"
                elif (new.year * 12 + new.month) - (before.year * 12 + before.month) < 60:
                    message = f"new month {new:%Y-%m} is less than 60 months after {before:%Y-%m} (EDCP 6.3)"
                elif v["filed_on"] > add_months(before.replace(day=15), -12):
                    message = f"filed later than twelve months before {before.replace(day=15)} (EDCP 6.2)"
            if not message:
                message = self._form_problem(
                    v["plan"], v["account"], v["form"], v["installments"], v["lump_sum_percent"]
                )
            if message:
                self.flag(name, row, "election_invalid_for_plan", f"{label}: {message}")

    def check_investment_elections(self) -> None:
        name = "investment_elections.csv"
        groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
        for row in self._rows(spec.BY_NAME[name]):
            if "__keyless__" in row.v:
                continue
            groups[(row.v["employee_number"], row.v["plan"])].append(row)
            if row.bad:
                continue
            v = row.v
            if self.is_db(v["plan"]) and v["plan"] in self.plan_rows and v["employee_number"] in self.people:
                self.flag(
                    name,
                    row,
                    "election_invalid_for_plan",
                    f"{v['employee_number']} {v['plan']}: the plan has no investment menu",
                )
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            if not 1 <= v["percent"] <= 100:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{v['employee_number']} {v['plan']} {v['fund']}: percent {v['percent']} is outside 1-100",
                )
            elif self.cd and v["effective_on"] > self.cd:
                self.flag(
                    name,
                    row,
                    "date_invalid",
                    f"{v['employee_number']} {v['plan']} {v['fund']}: effective_on {v['effective_on']} is after the conversion date",
                )
        for (emp, plan), rows in groups.items():
            if any(r.bad for r in rows):
                continue
            total = sum(r.v["percent"] for r in rows)
            if total != 100:
                self.report(
                    name,
                    rows[0].line,
                    "election_invalid_for_plan",
                    f"{emp} {plan}: investment percentages add up to {total}%, not 100% (EDCP 7.4, RRP 3.05)",
                )

    def check_beneficiaries(self) -> None:
        name = "beneficiaries.csv"
        groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
        for row in self._rows(spec.BY_NAME[name]):
            if "__keyless__" in row.v:
                continue
            group = groups[(row.v["employee_number"], row.v["plan"])]
            group.append(row)
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            v = row.v
            first = group[0]
            if not 1 <= v["percent"] <= 100:
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{v['employee_number']} {v['plan']} {v['name']}: percent {v['percent']} is outside 1-100",
                )
            elif (
                first is not row
                and first.v.get("designation_date") not in (None, _UNREADABLE)
                and v["designation_date"] != first.v["designation_date"]
            ):
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"{v['employee_number']} {v['plan']} {v['name']}: designation_date {v['designation_date']} differs from {first.v['designation_date']} on the first row",
                )
        for (emp, plan), rows in groups.items():
            if any(r.bad for r in rows):
                continue
            tiers: dict[str, list[Row]] = defaultdict(list)
            for r in rows:
                tiers[r.v["tier"]].append(r)
            if tiers["contingent"] and not tiers["primary"]:
                self.report(
                    name,
                    tiers["contingent"][0].line,
                    "beneficiary_percent_not_100",
                    f"{emp} {plan}: contingent beneficiaries with no primary one",
                )
                continue
            for tier in ("primary", "contingent"):
                total = sum(r.v["percent"] for r in tiers[tier])
                if tiers[tier] and total != 100:
                    self.report(
                        name,
                        tiers[tier][0].line,
                        "beneficiary_percent_not_100",
                        f"{emp} {plan}: the {tier} beneficiaries' percentages add up to {total}, not 100",
                    )

    # -- payment_schedules.csv ---------------------------------------------------------------------------

    def election_in_force(
        self, emp: str, plan: str, account: str
    ) -> tuple[str, int | None, int | None, int, list[Row]]:
        """(form, installments, lump_sum_percent, delay_months, changes) of the account's election in force."""
        first = self._elections.get((emp, plan, account))  # kept by check_distribution_elections
        form, inst, lump, delay = "lump_sum", None, None, 0
        if first is not None and not first[0]:
            _, form, inst, lump, delay = first
        changes = self.changes_of(emp, plan, account)
        for c in changes:
            if c.v.get("form"):
                form, inst, lump = c.v["form"], c.v["installments"], c.v["lump_sum_percent"]
        return form, inst, lump, delay, changes

    def check_payment_schedules(self) -> None:
        name = "payment_schedules.csv"
        for row in self.files[name]:
            if row.bad:
                continue
            if self.is_db(row.v["plan"]) and row.v["plan"] in self.plan_rows:
                self.ref_checks(name, row, plan=False)
                self.flag(name, row, "unknown_account", f"{row.v['plan']} has no accounts")
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            person = self.people[row.v["employee_number"]]
            if person.bad or self.cd is None:
                continue
            message = self._schedule_problem(row.v, person.v)
            v = row.v
            label = f"{v['employee_number']} {v['plan']} {v['account']} {v['trigger']}"
            if message:
                self.flag(name, row, "schedule_inconsistent", f"{label}: {message}")
                continue
            account = self.accounts.get((v["employee_number"], v["plan"], v["account"]))
            if account is None or (not account.bad and account.v["value"] == 0):
                self.flag(
                    name,
                    row,
                    "schedule_inconsistent_with_balance",
                    f"{label}: payments remain, but the account has no balance in accounts.csv",
                )

    def _schedule_problem(self, v: dict[str, Any], p: dict[str, Any]) -> str:  # noqa: C901 - the ten checks in FORMAT.md order
        plan, account, trigger = v["plan"], v["account"], v["trigger"]
        kind, month, _ = split_account(account)
        emp = v["employee_number"]
        if self.distribution_rule(plan, kind, trigger) is None:
            return f"{plan} does not pay {account} on {trigger} ({self.in_force(plan).cite('distribution')})"
        in_force_month = self.payment_month_in_force(emp, plan, account, month) if month else None
        event = {
            "separation": p["termination_date"],
            "death": p["death_date"],
            "disability": p["disability_date"],
            "specified_date": in_force_month.replace(day=15) if in_force_month else None,
        }[trigger]
        if v["trigger_date"] != event:
            return f"trigger_date {v['trigger_date']} is not the participant's {trigger} date {event}"
        if (trigger == "death") != (v["payee"] == "beneficiaries"):
            return f"payee {v['payee']} does not fit a {trigger} (EDCP 5.4)"
        override = self.provides(plan, v["override"]) if v["override"] else None
        if v["override"] and not (override and trigger == "separation"):
            return (
                f"override {v['override']} on other than a separation of a plan that has it (EDCP 5.6, 5.7)"
            )
        if v["override"] == "small_balance" and kind not in (override or {}).get("accounts", ()):
            return f"small_balance override on an account it does not cover ({self.in_force(plan).cite('small_balance')})"
        form, inst, lump, delay, changes = self.election_in_force(emp, plan, account)
        if trigger == "death" or v["override"]:
            form, inst = "lump_sum", None
        if v["form"] != form or (form != "lump_sum" and v["installments"] != inst):
            return f"form {v['form']} {v['installments'] or ''} is not the election in force, {form} {inst or ''} (EDCP 5.1(c), 5.2(c))"
        count = {"lump_sum": 1, "installments": inst or 0, "lump_sum_and_installments": (inst or 0) + 1}[form]
        if v["payments_total"] != count or v["payments_made"] >= v["payments_total"]:
            return f"payments_total {v['payments_total']} and payments_made {v['payments_made']} do not fit {form} of {count} payments"
        expected = self._first_payment(plan, kind, trigger, event, emp, delay, changes, v["override"])
        if expected is not None and v["first_payment_date"] != expected:
            return f"first_payment_date {v['first_payment_date']} is not {expected} (EDCP 5.1(b), 5.2(b), 5.3, 5.4, RRP 4.01)"
        made = v["payments_made"]
        if made == 0 and (v["last_payment_date"] or v["last_payment_amount"] is not None):
            return "last payment columns given with no payment made"
        if made > 0 and (v["last_payment_date"] is None or v["last_payment_amount"] is None):
            return "last payment columns missing"
        if made > 0 and v["last_payment_date"] != add_years(v["first_payment_date"], made - 1):
            return f"last_payment_date {v['last_payment_date']} is not {add_years(v['first_payment_date'], made - 1)} (EDCP 5.8)"
        if v["next_payment_date"] != add_years(v["first_payment_date"], made):
            return f"next_payment_date {v['next_payment_date']} is not {add_years(v['first_payment_date'], made)} (EDCP 5.8)"
        basis = (
            "whole_balance"
            if form == "lump_sum"
            else "lump_sum_percent"
            if form == "lump_sum_and_installments" and made == 0
            else "balance_divided_by_remaining"
        )
        if v["amount_basis"] != basis:
            return f"amount_basis {v['amount_basis']} is not {basis} (EDCP 5.8)"
        return ""

    def _first_payment(
        self,
        plan: str,
        kind: str,
        trigger: str,
        event: dt.date,
        emp: str,
        delay: int,
        changes: list[Row],
        override: str | None,
    ) -> dt.date | None:
        rule = self.distribution_rule(plan, kind, trigger) or {}
        if rule.get("payment_date", {}).get("rule") == "event_date":  # the date of the event (RRP 4.01(a))
            if trigger == "separation" and rule.get("key_employee_delay"):
                key = self.key_employee(emp, event)
                if key is None:
                    return None
                return first_after_six_month_anniversary(event) if key else event
            return event
        if trigger == "death":
            return fifteenth_after(event)
        if trigger == "specified_date":
            return event
        base = fifteenth_after(event)
        if kind == "retirement_termination" and not override:
            base = add_months(base, delay)
            for change in changes:
                if change.v.get("delay_years") and change.v["filed_on"] <= add_months(base, -12):
                    base = add_years(base, change.v["delay_years"])
        key = self.key_employee(emp, event)
        if key is None:
            return None if base < first_of_seventh_month(event) else base
        return max(base, first_of_seventh_month(event)) if key else base

    # -- BRP ---------------------------------------------------------------------------------------------

    def check_pension_figures(self) -> None:  # noqa: C901 - the checks of pension_figures.csv in order
        name = "pension_figures.csv"
        self.figures_in_force: dict[str, Row] = {}
        have: set[tuple[str, str]] = set()
        for row in self._rows(spec.BY_NAME[name]):  # streamed: only the figures in force are kept
            if "__keyless__" in row.v:
                continue
            have.add((row.v["employee_number"], row.v["plan"]))
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            v = row.v
            label = f"{v['employee_number']} {v['plan']} {v['as_of']}"
            person = self.people[v["employee_number"]]
            message, code = "", "value_invalid"
            factor = v["early_adjustment_factor"]
            if not self.is_db(v["plan"]):
                message = f"{v['plan']} is not a defined benefit plan"
            elif factor is not None and not ZERO < factor <= 5:
                message = f"early_adjustment_factor {factor} is outside (0, 5] (BRP 3.3)"
            elif not ZERO <= v["benefit_service_years"] <= 80:
                message = f"benefit_service_years {v['benefit_service_years']} is outside 0-80"
            elif self.cd and v["as_of"] > self.cd:
                message, code = f"as_of {v['as_of']} is after the conversion date", "date_invalid"
            elif not person.bad and v["normal_retirement_date"] <= person.v["birth_date"]:
                message, code = (
                    f"normal_retirement_date {v['normal_retirement_date']} is not after birth_date",
                    "date_invalid",
                )
            elif v["early_retirement_date"] and v["early_retirement_date"] > v["normal_retirement_date"]:
                message, code = (
                    f"early_retirement_date {v['early_retirement_date']} is after normal_retirement_date",
                    "date_invalid",
                )
            elif v["spouse_birth_date"] and v["spouse_birth_date"] > v["as_of"]:
                message, code = f"spouse_birth_date {v['spouse_birth_date']} is after as_of", "date_invalid"
            if message:
                self.flag(name, row, code, f"{label}: {message}")
                continue
            current = self.figures_in_force.get(v["employee_number"])
            if current is None or current.v["as_of"] < v["as_of"]:
                self.figures_in_force[v["employee_number"]] = row
        for (emp, plan), row in self.participations.items():
            if self.is_db(plan) and not row.bad and (emp, plan) not in have and self.present.get(name):
                self.flag(
                    "participations.csv",
                    row,
                    "brp_figures_incomplete",
                    f"{emp} {plan}: no Pension Plan figures in pension_figures.csv (BRP 3.2)",
                )

    def check_db_benefits(self) -> None:
        name = "db_benefits.csv"
        for row in self._rows(spec.BY_NAME[name]):
            v = row.v
            if "__keyless__" in v:
                self.unreadable_groups.add((name, "monthly_in_pay", "*"))
                continue
            amount_col = (
                "survivor_monthly_amount" if v.get("status") == "survivor_in_pay" else "monthly_amount"
            )
            key = (name, "monthly_in_pay", v["plan"], "", "", "", "")
            if v.get("status") in ("in_pay", "beneficiary_in_pay", "survivor_in_pay"):
                if isinstance(v.get(amount_col), Decimal):
                    self.sums[key] += v[amount_col]
                elif v.get(amount_col) is _UNREADABLE:
                    self.unreadable_groups.add(key)
            elif v.get("status") is _UNREADABLE:
                self.unreadable_groups.add(key)
            else:
                self.sums[key] += 0
            if row.bad:
                continue
            self.ref_checks(name, row)
            if row.bad:
                continue
            person = self.people[v["employee_number"]]
            label = f"{v['employee_number']} {v['plan']}"
            if not self.is_db(v["plan"]):
                self.flag(name, row, "value_invalid", f"{label}: {v['plan']} is not a defined benefit plan")
                continue
            if v["form"] not in spec.DB_FORMS:
                self.flag(
                    name,
                    row,
                    "election_invalid_for_plan",
                    f"{label}: {v['form']} is not a form of the plan (BRP 4.2(c))",
                )
                continue
            figures = self.figures_in_force.get(v["employee_number"])
            joint = v["form"] == "qjsa" or v["form"].startswith("js_")
            if (
                joint
                and v["survivor_birth_date"] is None
                and (figures is None or figures.v["spouse_birth_date"] is None)
            ):
                self.flag(
                    name,
                    row,
                    "brp_figures_incomplete",
                    f"{label}: {v['form']} without the survivor's birth date (BRP 4.2(c))",
                )
                continue
            if person.bad:
                continue
            message = self._benefit_problem(v, person)
            if message:
                self.flag(name, row, "brp_benefit_inconsistent", f"{label}: {message}")

    def _benefit_problem(self, v: dict[str, Any], person: Row) -> str:  # noqa: C901 - the seven checks in FORMAT.md order
        p = person.v
        status, form, made = v["status"], v["form"], v["payments_made"]
        if status == "not_commenced" and p["death_date"]:
            return "not_commenced, but the participant has died"
        if status == "in_pay" and (p["termination_date"] is None or p["death_date"]):
            return "in_pay without a termination_date, or with a death_date"
        if status in ("survivor_in_pay", "beneficiary_in_pay") and not p["death_date"]:
            return f"{status} without a death_date"
        employed = self.employed(person)
        separation = None if employed else (p["termination_date"] or p["death_date"])
        bcd = v["benefit_commencement_date"]
        if employed and bcd is not None:
            return "benefit_commencement_date given while the participant is employed"
        expected_bcd = None
        if separation is not None:
            expected_bcd = add_years(add_months(separation.replace(day=1), 1), v["defer_years"] or 0)
            if bcd is not None and bcd != expected_bcd:
                return f"benefit_commencement_date {bcd} is not {expected_bcd} (BRP 1.3(b), 4.2(a))"
        if status != "not_commenced":
            if form == "lump_sum" or not (v["monthly_amount"] or ZERO) > 0 or made == 0:
                return "a benefit in pay needs a monthly form, a monthly_amount above 0 and payments made (BRP 3.4(c))"
            if bcd is None or v["next_payment_date"] != add_months(bcd, made):
                return f"next_payment_date {v['next_payment_date']} is not {made} months after {bcd}"
        else:
            if made != 0:
                return f"not_commenced with {made} payments made"
            if separation is not None:
                expected = expected_bcd
                key = self.key_employee(v["employee_number"], separation)
                if key and expected is not None:
                    expected = max(expected, first_after_six_month_anniversary(separation))
                if key is not None and v["next_payment_date"] != expected:
                    return f"next_payment_date {v['next_payment_date']} is not {expected} (BRP 4.3)"
            elif v["next_payment_date"] is not None:
                return "next_payment_date given while the participant is employed"
        survivor = {"qjsa": 50, "js_100": 100, "js_75": 75, "js_50": 50}.get(form)
        if v["survivor_percent"] != survivor:
            return f"survivor_percent {v['survivor_percent']} is not the form's {survivor}"
        if status == "survivor_in_pay" and (
            survivor is None or not (v["survivor_monthly_amount"] or ZERO) > 0
        ):
            return "survivor_in_pay without a survivor form or a survivor_monthly_amount above 0 (BRP 5.2)"
        certain = int(form.rsplit("_", 1)[1]) if form.startswith("period_certain_") else None
        if status == "beneficiary_in_pay" and certain is None:
            return "beneficiary_in_pay with a form that is not period certain"
        remaining = v["certain_months_remaining"]
        if certain is None and remaining is not None:
            return f"certain_months_remaining {remaining} given on {form}"
        if certain is not None and remaining != max(0, certain - made):
            return f"certain_months_remaining {remaining} is not {max(0, certain - made)}"
        if status == "beneficiary_in_pay" and remaining == 0:
            return "beneficiary_in_pay with no certain months remaining"
        return ""

    # -- control.csv -------------------------------------------------------------------------------------

    def check_control(self) -> None:  # noqa: C901 - the comparison rules of FORMAT.md section 3
        name = "control.csv"
        files_read = {f.name for f in spec.FILES if f.name != name and self.present.get(f.name)}
        computed: dict[tuple[str, ...], Decimal] = {}
        for fname in files_read:
            computed[(fname, "rows", "", "", "", "", "")] = Decimal(self.row_counts[fname])
        for key, total in self.sums.items():
            if key[0] in files_read and key[0] not in self.malformed:
                computed[key] = total
        rows = self.load(name)
        seen: set[tuple[str, ...]] = set()
        differences: list[tuple[tuple[str, ...], dict[str, str], int]] = []
        for row in rows:
            v = row.v
            if row.bad:
                continue
            group = tuple(
                v[c] or "" for c in ("file", "measure", "plan", "account", "fund", "plan_year", "source")
            )
            fname, measure = group[0], group[1]
            measures = ("rows",) + tuple(m for m in spec.MEASURES.get(fname, ()) if m != "rows")
            if fname not in spec.BY_NAME or fname == name:
                self.flag(name, row, "value_invalid", f"file {fname!r} is not a file of the package")
                continue
            if measure not in measures:
                self.flag(name, row, "value_invalid", f"measure {measure!r} is not a measure of {fname}")
                continue
            pattern = _INT if measure == "rows" else _DEC6 if measure == "units" else _MONEY
            if not pattern.match(v["total"]):
                self.flag(
                    name,
                    row,
                    "value_invalid",
                    f"total {v['total']!r} of {fname} {measure} is not a {'whole number' if measure == 'rows' else 'decimal'}",
                )
                continue
            seen.add(group)
            if fname not in files_read:
                continue
            if measure != "rows" and (
                fname in self.malformed
                or group in self.unreadable_groups
                or (fname, measure, "*") in self.unreadable_groups
                and group not in computed
            ):
                continue
            package = computed.get(group, ZERO)
            control = Decimal(v["total"])
            if package != control:
                differences.append(
                    (group, {"control": v["total"], "package": self._fmt(measure, package)}, row.line)
                )
        if self.present.get(name):
            for group, total in computed.items():
                if group not in seen and group not in self.unreadable_groups:
                    differences.append((group, {"control": "", "package": self._fmt(group[1], total)}, 0))
        differences.sort(key=lambda d: d[0])
        for group, figures, line in differences:
            fname, measure, plan, account, fund, year, source = group
            self.result.differences.append(
                {
                    "file": fname,
                    "measure": measure,
                    "plan": plan,
                    "account": account,
                    "fund": fund,
                    "plan_year": year,
                    "source": source,
                    **figures,
                }
            )
            what = " ".join(x for x in (plan, account, fund, year, source) if x) or "the package"
            code = "control_count_mismatch" if measure == "rows" else "control_total_mismatch"
            if figures["control"]:
                message = f"{fname} {measure} of {what}: the control says {figures['control']}, the file adds up to {figures['package']}"
            else:
                message = (
                    f"{fname} {measure} of {what}: no control row, the file adds up to {figures['package']}"
                )
            self.report(name, line, code, message)

    @staticmethod
    def _fmt(measure: str, value: Decimal) -> str:
        if measure == "rows":
            return str(int(value))
        if measure == "units":
            return f"{value.quantize(Decimal('0.000001')):f}"
        return f"{value.quantize(CENT):f}"


_UNREADABLE: Any = object()
# text columns whose values repeat on many rows: one string object per distinct value
_INTERNED = frozenset(
    {"employee_number", "plan", "account", "fund", "component", "relationship", "state", "city"}
)
# of those, the ones with few distinct values (not employee_number: one per participant), read through _Cached
_FEW_VALUES = _INTERNED - {"employee_number"}
_PERSON_KEPT = (
    "employee_number",
    "birth_date",
    "rehire_date",
    "termination_date",
    "death_date",
    "disability_date",
    "key_employee_years",
    "vesting_service_years",
)
_BRP_FIGURES = {
    "unlimited_annual_benefit",
    "payable_annual_benefit",
    "benefit_service_years",
    "normal_retirement_date",
}


@contextlib.contextmanager
def collector_paused(*, collect_after: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector paused for a conversion's checks or apply, resumed as it was afterwards.

    Both make millions of short-lived rows and objects (a dict per row, model instances, COPY tuples) while holding
    large maps of keys and ids; the collector's passes over them found almost nothing to free and took about a
    sixth of the checks' CPU and a fifth of the apply's (20,000 participants: the apply 35.0 -> 27.1 CPU s).
    Reference counting still frees everything as soon as it is let go. The apply's model instances leave some
    cycles (about 35 MB at 20,000 participants, below the checks' peak): `collect_after` frees them at the end."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
        if collect_after:
            gc.collect()


def check_package(*, folder: Path) -> Result:
    """Every check of FORMAT.md sections 2-4 on the package in `folder`; writes nothing (the cyclic garbage
    collector paused meanwhile: `collector_paused`)."""
    with collector_paused():
        return Checker(folder=folder).run()
