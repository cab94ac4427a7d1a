"""The parallel run after a conversion: the prior recordkeeper's daily valuation against this system's.

For the weeks after a conversion the prior recordkeeper keeps valuing the accounts it handed over and sends, for
each Valuation Date, one row per position (employee, plan, account, fund, units, value; the file format is in
docs/parallel-run.md). This module reads such a file, refusing it whole when a row cannot be read (every bad row
named by its line, nothing stored), and compares it with the DailyValuation rows the crediting job wrote for the
same dates. A position is listed when its value differs by more than the tolerance the Committee sets (default one
cent), when its units differ at all (six decimals on both sides), or when one side has it and the other does not.
Each comparison is kept with its totals per day.

The accounts are named as in the conversion package (EDCP: retirement_termination, specified_date:YYYY-MM,
company_contribution; RRP: elective_deferral, matching, retirement_restoration), which is Account.name.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO

from django.db import transaction
from django.db.models import F

from books.models import (
    DailyValuation,
    ParallelRun,
    ParallelRunDay,
    ParallelRunDifference,
    ParallelRunTolerance,
)
from core import valuation_calendar as cal
from core.audit import Actor, actor_label, audit_record
from core.dates import date_in_range, parse_date
from core.errors import ApplicationError, InvalidInput
from core.models import JobRun
from core.money import ZERO, money, parse_decimal, parse_money
from plans.models import Plan

COLUMNS = ("valuation_date", "employee_number", "plan", "account", "fund", "units", "value")
DEFAULT_TOLERANCE = Decimal("0.01")
MAX_ERRORS_LISTED = 1000  # a file with more bad rows is refused naming the first thousand (and the count)

Key = tuple[str, str, str, str]  # employee, plan, account, fund


class ParallelFileError(ApplicationError):
    """A valuation file that cannot be read: `errors` names every bad row by its line; nothing was stored."""

    def __init__(self, errors: list[str], *, total: int | None = None) -> None:
        total = total if total is not None else len(errors)
        shown = "; ".join(errors[:20]) + (f"; and {total - 20} more" if total > 20 else "")
        super().__init__(f"the valuation file is refused, nothing was compared ({total} bad rows): {shown}")
        self.errors = errors
        self.total = total


@dataclass
class ValuationFile:
    """A read, checked valuation file: per Valuation Date, key -> (line, units, value)."""

    name: str
    sha256: str
    rows: int = 0
    days: dict[dt.date, dict[Key, tuple[int, Decimal, Decimal]]] = field(default_factory=dict)


def tolerance_in_force() -> Decimal:
    """The Committee's latest tolerance, else one cent."""
    row = ParallelRunTolerance.objects.order_by("-set_at", "-id").first()
    return row.amount if row is not None else DEFAULT_TOLERANCE


def tolerance_set(*, amount: Decimal, actor: Actor, at: dt.datetime, note: str = "") -> ParallelRunTolerance:
    """The Committee sets the tolerance of the parallel run (audited; the previous ones are kept)."""
    if amount < 0 or amount != money(amount):
        raise InvalidInput(f"the tolerance {amount} must be an amount of at least 0.00, in cents")
    row = ParallelRunTolerance.objects.create(amount=amount, set_by=actor_label(actor), set_at=at, note=note)
    audit_record(
        action="parallel_run.tolerance_set", actor=actor, at=at, obj=row, data={"amount": str(amount)}
    )
    return row


def _account_names() -> dict[str, tuple[set[str], set[str]]]:
    """plan code -> (account kinds of any version, fund codes), from the catalog: the plans are data."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for plan in Plan.objects.prefetch_related("versions", "funds"):
        kinds: set[str] = set()
        for version in plan.versions.all():
            kinds |= {spec["kind"] for spec in version.account_kinds()}
        out[plan.code] = (kinds, {f.code for f in plan.funds.all()})
    return out


def _check_account(name: str, kinds: set[str]) -> str | None:
    kind, _, month = name.partition(":")
    if kind not in kinds:
        return f"account {name!r} is not an account of the plan ({', '.join(sorted(kinds)) or 'none'})"
    if kind == "specified_date":
        try:
            day = dt.date.fromisoformat(f"{month}-01")
        except ValueError:
            return f"account {name!r}: a Specified Date Account is named specified_date:YYYY-MM"
        if len(month) != 7 or not date_in_range(day):
            return f"account {name!r}: a Specified Date Account is named specified_date:YYYY-MM"
    elif month:
        return f"account {name!r}: only a Specified Date Account carries a month"
    return None


def _read_row(
    row: dict[str, str], names: dict[str, tuple[set[str], set[str]]]
) -> tuple[dt.date, Key, Decimal, Decimal]:
    """One row, checked; InvalidInput naming the first value at fault."""
    day = parse_date(row["valuation_date"], field="valuation_date")
    try:
        open_day = cal.is_valuation_date(day)
    except ValueError as exc:  # outside the valuation calendar's years
        raise InvalidInput(f"valuation_date {day}: {exc}")
    if not open_day:
        raise InvalidInput(f"valuation_date {day} is not a Valuation Date (the NYSE is closed)")
    employee = row["employee_number"].strip()
    if not employee:
        raise InvalidInput("employee_number is blank")
    plan = row["plan"].strip()
    if plan not in names:
        raise InvalidInput(f"plan {plan!r} is not a plan of the catalog")
    kinds, funds = names[plan]
    account = row["account"].strip()
    problem = _check_account(account, kinds)
    if problem:
        raise InvalidInput(problem)
    fund = row["fund"].strip()
    if fund not in funds:
        raise InvalidInput(f"fund {fund!r} is not on the {plan} menu")
    units = parse_decimal(row["units"], field="units")
    if units != units.quantize(Decimal("0.000001")) or units < 0:
        raise InvalidInput(f"units {row['units']!r} must be at least 0 with at most six decimals")
    value = parse_money(row["value"], field="value")
    return day, (employee, plan, account, fund), units.quantize(Decimal("0.000001")), value


def valuation_file_read(*, stream: IO[bytes], name: str) -> ValuationFile:
    """Read and check a whole file; ParallelFileError naming every bad row (and nothing stored) if one is bad."""
    digest = hashlib.sha256()  # kept with the comparison: which file was compared
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    stream.seek(0)
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.DictReader(text)
    header = tuple(h.strip() for h in (reader.fieldnames or ()))
    if header != COLUMNS:
        raise ParallelFileError(
            [f"line 1: the columns must be {','.join(COLUMNS)} (found {','.join(header)})"]
        )
    names = _account_names()
    result = ValuationFile(name=name, sha256="")
    errors: list[str] = []
    bad = 0
    for row in reader:
        line = reader.line_num
        result.rows += 1
        try:
            if None in row or any(v is None for v in row.values()):
                raise InvalidInput(f"the row must have the {len(COLUMNS)} columns {','.join(COLUMNS)}")
            day, key, units, value = _read_row(row, names)
        except InvalidInput as exc:
            bad += 1
            if len(errors) < MAX_ERRORS_LISTED:
                errors.append(f"line {line}: {exc.message}")
            continue
        day_rows = result.days.setdefault(day, {})
        if key in day_rows:
            bad += 1
            if len(errors) < MAX_ERRORS_LISTED:
                errors.append(
                    f"line {line}: the position {'/'.join(key)} on {day} is also on line {day_rows[key][0]}"
                )
            continue
        day_rows[key] = (line, units, value)
    if bad:
        raise ParallelFileError(errors, total=bad)
    if not result.days:
        raise ParallelFileError(["the file has no rows"])
    result.sha256 = digest.hexdigest()
    return result


def _ours(day: dt.date) -> dict[Key, tuple[Decimal, Decimal]]:
    """This system's positions valued on `day` (one query): key -> (units, value); empty positions left out."""
    rows = (
        DailyValuation.objects.filter(valuation_date=day)
        .exclude(units=0, value=0)
        .annotate(
            employee=F("account__participation__person__employee_number"),
            plan_code=F("account__participation__plan__code"),
            kind=F("account__kind"),
            month=F("account__specified_month"),
            fund_code=F("fund__code"),
        )
        .values_list("employee", "plan_code", "kind", "month", "fund_code", "units", "value")
    )
    out: dict[Key, tuple[Decimal, Decimal]] = {}
    for employee, plan_code, kind, month, fund_code, units, value in rows.iterator(chunk_size=5000):
        account = f"{kind}:{month:%Y-%m}" if month else kind
        out[(employee, plan_code, account, fund_code)] = (units, value)
    return out


def _credited(days: Iterable[dt.date]) -> set[dt.date]:
    done = JobRun.objects.filter(
        kind="crediting", key__in=[d.isoformat() for d in days], status=JobRun.Status.DONE
    ).values_list("key", flat=True)
    return {dt.date.fromisoformat(k) for k in done}


def _compare_day(
    run: ParallelRun, day: dt.date, prior: dict[Key, tuple[int, Decimal, Decimal]], tolerance: Decimal
) -> tuple[ParallelRunDay, list[ParallelRunDifference]]:
    ours = _ours(day)
    total = ParallelRunDay(
        run=run,
        valuation_date=day,
        credited_here=True,
        prior_positions=len(prior),
        our_positions=len(ours),
        prior_value=money(sum((v for _, _, v in prior.values()), ZERO)),
        our_value=money(sum((v for _, v in ours.values()), ZERO)),
    )
    found: list[ParallelRunDifference] = []

    def listed(
        key: Key,
        kind: str,
        line: int | None,
        theirs: tuple[Decimal, Decimal] | None,
        mine: tuple[Decimal, Decimal] | None,
    ) -> None:
        employee, plan, account, fund = key
        found.append(
            ParallelRunDifference(
                run=run,
                valuation_date=day,
                line=line,
                kind=kind,
                employee_number=employee,
                plan_code=plan,
                account=account,
                fund_code=fund,
                prior_units=theirs[0] if theirs else None,
                prior_value=theirs[1] if theirs else None,
                our_units=mine[0] if mine else None,
                our_value=mine[1] if mine else None,
            )
        )

    for key, (line, units, value) in prior.items():
        mine = ours.get(key)
        if mine is None:
            listed(key, ParallelRunDifference.Kind.MISSING_HERE, line, (units, value), None)
        elif mine[0] != units or abs(mine[1] - value) > tolerance:
            listed(key, ParallelRunDifference.Kind.DIFFERS, line, (units, value), mine)
    for key, mine in ours.items():
        if key not in prior:
            listed(key, ParallelRunDifference.Kind.MISSING_THERE, None, None, mine)
    total.differences = len(found)
    return total, found


def parallel_run_compare(
    *, valuation: ValuationFile, actor: Actor, at: dt.datetime, tolerance: Decimal | None = None
) -> ParallelRun:
    """Compare a read valuation file with this system's Valuation Date results and keep the comparison.

    A date this system has not credited yet is kept as such, with the prior recordkeeper's totals and nothing
    compared (rerun the file once the crediting job has run)."""
    tolerance = tolerance_in_force() if tolerance is None else tolerance
    if tolerance < 0:
        raise InvalidInput("the tolerance must be at least 0.00")
    days = sorted(valuation.days)
    credited = _credited(days)
    with transaction.atomic():
        run = ParallelRun.objects.create(
            file_name=valuation.name[:255],
            sha256=valuation.sha256,
            rows=valuation.rows,
            first_date=days[0],
            last_date=days[-1],
            tolerance=tolerance,
            run_by=actor_label(actor),
            run_at=at,
        )
        totals: list[ParallelRunDay] = []
        count = 0
        for day in days:
            prior = valuation.days[day]
            if day not in credited:
                totals.append(
                    ParallelRunDay(
                        run=run,
                        valuation_date=day,
                        credited_here=False,
                        prior_positions=len(prior),
                        prior_value=money(sum((v for _, _, v in prior.values()), ZERO)),
                    )
                )
                continue
            total, found = _compare_day(run, day, prior, tolerance)
            totals.append(total)
            ParallelRunDifference.objects.bulk_create(found, batch_size=5000)
            count += len(found)
        ParallelRunDay.objects.bulk_create(totals)
        run.differences = count
        run.save(update_fields=["differences"])
        audit_record(
            action="parallel_run.compared",
            actor=actor,
            at=at,
            obj=run,
            data={
                "file": run.file_name,
                "sha256": run.sha256,
                "differences": count,
                "tolerance": str(tolerance),
            },
        )
    return run


__all__ = [
    "COLUMNS",
    "DEFAULT_TOLERANCE",
    "ParallelFileError",
    "ValuationFile",
    "parallel_run_compare",
    "tolerance_in_force",
    "tolerance_set",
    "valuation_file_read",
]
