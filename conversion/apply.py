"""Apply a checked package (FORMAT.md section 5, "What an applied package records").

Runs inside the caller's transaction: any failure rolls everything back. Low-volume records go through
the apps' services (Key Employee lists, the audit trail); the tables where volume lives (people,
participations, accounts, positions, the opening ledger entries and their valuation rows, prices) are
written set-based with bulk_create. Employment events are recorded without acting on them again
(FORMAT.md 5: no forfeiture, no schedule made anew), so they are inserted, not sent through the
event hooks that would react to them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from django.db import DatabaseError, IntegrityError

from books.models import (
    TAKEN_OVER_KEY_PREFIX,
    Account,
    DailyValuation,
    DefinedBenefitRecord,
    EntryKind,
    LedgerEntry,
    Position,
    Source,
)
from conversion import spec
from conversion.apply_history import apply_year_to_date
from conversion.apply_payments import PaymentMismatch, apply_db_benefits, apply_payment_schedules
from conversion.reader import normalise_header, read_rows
from conversion.validate import (
    Finding,
    Kept,
    Result,
    add_years,
    column_parser,
    key_employee_on,
    split_account,
)
from core.audit import audit_record
from core.bulk import analyze, column_values, insert_new, insert_values
from core.models import JobRun
from elections.models import (
    AnnuityElection,
    Channel,
    DeferralAllocation,
    DeferralElection,
    DeferralElectionLine,
    DistributionElection,
    InvestmentElection,
    InvestmentElectionLine,
    ScheduleChange,
    Status,
)
from participants.models import (
    Beneficiary,
    BeneficiaryDesignation,
    EmploymentEvent,
    KeyEmployeeList,
    Participation,
    Person,
    VestingServiceCredit,
)
from participants.services import key_employee_list_record
from plans.models import Fund, FundPrice, Plan

BATCH = 5000
LOOKUP_CHUNK = 10_000
EASTERN = ZoneInfo("America/New_York")  # the plans' clock (EDCP 3.2(b))


def _received(day: dt.date) -> dt.datetime:
    """An election or designation dated `day` by the prior recordkeeper: received at noon, Eastern."""
    return dt.datetime.combine(day, dt.time(12, 0), tzinfo=EASTERN)


ACTION = "conversion.apply"


class ApplyFailure(Exception):
    """A write the database refused: reported as conflicts_with_records on the row being written."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.message = message


def conflicts(*, result: Result, folder: Path) -> list[Finding]:
    """conflicts_with_records (FORMAT.md 4): the package against what the system already holds. The files are read
    again as streams (every row of a package without exceptions is good), a chunk of people at a time."""
    kept = result.kept
    assert kept is not None
    found: list[Finding] = []
    cd = result.conversion_date
    listed: dict[int, set[str]] = defaultdict(set)
    for chunk in _in_batches(_stream(folder, "participants.csv"), size=LOOKUP_CHUNK):
        people = {p.employee_number: p for p in _people_on_file([v["employee_number"] for _, v in chunk])}
        for line, v in chunk:
            for year in v["key_employee_years"] or ():
                listed[year].add(v["employee_number"])
            person = people.get(v["employee_number"])
            if person is not None and (
                person.first_name,
                person.last_name,
                person.birth_date,
                person.hire_date,
            ) != (v["first_name"], v["last_name"], v["birth_date"], v["hire_date"]):
                found.append(
                    Finding(
                        "participants.csv",
                        line,
                        "conflicts_with_records",
                        f"{v['employee_number']} is on file as {person.full_name}, born {person.birth_date}, "
                        f"hired {person.hire_date}",
                    )
                )
    for chunk in _in_batches(_stream(folder, "participations.csv"), size=LOOKUP_CHUNK):
        on_file = set(
            Participation.objects.filter(
                person__employee_number__in={v["employee_number"] for _, v in chunk}
            ).values_list("person__employee_number", "plan__code")
        )
        for line, v in chunk:
            if (v["employee_number"], v["plan"]) in on_file:
                found.append(
                    Finding(
                        "participations.csv",
                        line,
                        "conflicts_with_records",
                        f"{v['employee_number']} already participates in {v['plan']} on file",
                    )
                )
    funds = {(f.plan.code, f.code): f for f in Fund.objects.select_related("plan")}
    for line, v in _stream(folder, "funds.csv"):
        fund = funds.get((v["plan"], v["fund"]))
        if fund is not None and fund.is_default != (v["default_fund"] == "yes"):
            found.append(
                Finding(
                    "funds.csv",
                    line,
                    "conflicts_with_records",
                    f"{v['plan']} {v['fund']} is on the menu with default {'yes' if fund.is_default else 'no'}",
                )
            )
    found.extend(_price_conflicts(folder=folder, funds=funds))
    for year in range(kept.ke_from, kept.ke_to + 1):
        existing = KeyEmployeeList.objects.filter(identification_year=year).first()
        if existing is None:
            continue
        members = set(existing.members.values_list("employee_number", flat=True))
        if members != listed[year]:
            found.append(
                Finding(
                    "package.csv",
                    2,
                    "conflicts_with_records",
                    f"the Key Employee list of {year} is on file with other members",
                )
            )
    if cd is not None and DailyValuation.objects.filter(valuation_date__gt=cd).exists():
        found.append(
            Finding(
                "package.csv", 2, "conflicts_with_records", f"a Valuation Date after {cd} is already credited"
            )
        )
    return found


def _people_on_file(numbers: list[str]) -> list[Person]:
    """People already on file among `numbers`, asked in chunks (a query has at most 65,535 parameters)."""
    found: list[Person] = []
    for i in range(0, len(numbers), LOOKUP_CHUNK):
        found.extend(Person.objects.filter(employee_number__in=numbers[i : i + LOOKUP_CHUNK]))
    return found


def _price_conflicts(*, folder: Path, funds: dict[tuple[str, str], Fund]) -> list[Finding]:
    if not funds:
        return []
    held: dict[tuple[str, str, dt.date], Decimal] = {
        (plan, code, day): price
        for plan, code, day, price in FundPrice.objects.values_list(
            "fund__plan__code", "fund__code", "date", "price"
        )
    }
    found = []
    for line, v in _stream(folder, "fund_prices.csv"):
        key = (v["plan"], v["fund"], v["date"])
        if key in held and held[key] != v["price"]:
            found.append(
                Finding(
                    "fund_prices.csv",
                    line,
                    "conflicts_with_records",
                    f"{v['plan']} {v['fund']} {v['date']}: {held[key]} is on file, not {v['price']}",
                )
            )
    return found


def _stream(folder: Path, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Re-read a checked file (every row is known good): (line, parsed values), duplicates already refused."""
    fspec = spec.BY_NAME[name]
    columns = {c.name: c for c in fspec.columns}
    rows = read_rows(path=folder / name)
    header_row = next(rows)
    assert header_row.values is not None
    ordered = [columns[normalise_header(h)] for h in header_row.values]
    names = [c.name for c in ordered]
    parsers = [column_parser(c) for c in ordered]  # made once per file, as the checks read it
    for raw in rows:
        assert raw.values is not None
        yield raw.line, {n: parse(t) for n, parse, t in zip(names, parsers, raw.values, strict=True)}


POSITION_COLUMNS = ("account_id", "fund_id")
ENTRY_COLUMNS = (
    "position_id",
    "account_id",
    "units",
    "price",
    "amount",
    "idempotency_key",
    "kind",
    "source",
    "effective_date",
    "valuation_date",
    "actor",
    "posted_at",
    "memo",
)
VALUATION_COLUMNS = (
    "position_id",
    "account_id",
    "fund_id",
    "units",
    "price",
    "value",
    "flow",
    "valuation_date",
    "earnings",
)


@contextlib.contextmanager
def _refusal_reported(model: Any, file: str, line: int) -> Iterator[None]:
    """A refusal of the database while writing `model`'s rows is an ApplyFailure on the batch's first line."""
    try:
        yield
    except (IntegrityError, DatabaseError) as exc:
        raise ApplyFailure(
            file, line, f"the database refused {model._meta.verbose_name_plural}: {exc}"
        ) from exc


def _values(model: Any, columns: tuple[str, ...], rows: list[tuple], file: str, line: int) -> list[int]:
    """`core.bulk.insert_values` (plain tuples), as `_bulk` inserts instances."""
    with _refusal_reported(model, file, line):
        return insert_values(model=model, columns=columns, rows=rows)


def _bulk(model: Any, objs: list[Any], file: str, line: int) -> list[Any]:
    with _refusal_reported(model, file, line):
        return insert_new(objs=objs, model=model, batch_size=BATCH)


def apply_package(*, result: Result, folder: Path, actor: str, now: dt.datetime) -> None:
    """Write everything the package holds; the caller's transaction makes it all or nothing.

    The files are read again from disk, a batch at a time (the checks have let their rows go); what is held from
    one phase to the next is the ids of what was written, by the package's keys (`Ids`)."""
    kept = result.kept
    assert kept is not None
    cd = result.conversion_date
    assert cd is not None
    plans = {p.code: p for p in Plan.objects.filter(code__in=list(kept.plans))}
    funds = _apply_funds(folder=folder, plans=plans, result=result, now=now)
    people = _apply_people(folder=folder, now=now, actor=actor)
    _apply_key_employees(folder=folder, kept=kept, people=people, actor=actor, now=now)
    participations = _apply_participations(folder=folder, people=people, plans=plans)
    accounts = _apply_accounts(folder=folder, participations=participations)
    # The tables written so far were (nearly) empty when the transaction began, the statistics the planner still
    # has of them: the phases below look rows up in them by key (core.bulk.analyze says why this is needed).
    analyze(models=[Person, EmploymentEvent, VestingServiceCredit, KeyEmployeeList, Participation, Account])
    _apply_positions(
        folder=folder,
        accounts=accounts,
        funds=funds,
        cd=cd,
        package_id=result.package_id,
        actor=actor,
        now=now,
    )
    analyze(models=[Position, LedgerEntry, DailyValuation])
    _apply_elections(folder=folder, participations=participations, funds=funds, actor=actor)
    _apply_beneficiaries(folder=folder, people=people, plans=plans, actor=actor)
    _apply_brp(folder=folder, participations=participations, cd=cd, package_id=result.package_id, actor=actor)
    _mark_conversion_date_valued(cd=cd, package_id=result.package_id, now=now)
    # the payment take-overs read the elections, beneficiaries and pension figures just written
    analyze(
        models=[
            DeferralElection,
            DeferralElectionLine,
            DeferralAllocation,
            DistributionElection,
            ScheduleChange,
            InvestmentElection,
            InvestmentElectionLine,
            BeneficiaryDesignation,
            Beneficiary,
            DefinedBenefitRecord,
            AnnuityElection,
        ]
    )
    apply_year_to_date(
        stream=lambda name: _stream(folder, name),
        people=people,
        participations=participations,
        plans=plans,
        cd=cd,
        actor=actor,
        now=now,
        bulk=_bulk,
    )
    _apply_payments(
        folder=folder,
        kept=kept,
        accounts=accounts,
        participations=participations,
        plans=plans,
        cd=cd,
        package_id=result.package_id,
        now=now,
    )
    audit_record(
        action=ACTION,
        actor=actor,
        at=now,
        reason=f"conversion package {result.package_id}",
        data={
            "package_id": result.package_id,
            "conversion_date": cd.isoformat(),
            "files": dict(sorted(result.hashes.items())),
            "participants": result.participants,
            "positions": result.positions,
        },
    )


def _mark_conversion_date_valued(*, cd: dt.date, package_id: str, now: dt.datetime) -> None:
    """The books are valued at the close of the conversion date: its crediting counts as done, so the
    next Valuation Date's crediting earns on the opening units (FORMAT.md 5, "Opening balances")."""
    JobRun.objects.get_or_create(
        kind="crediting",
        key=cd.isoformat(),
        defaults={
            "status": JobRun.Status.DONE,
            "message": f"opening balances from conversion package {package_id}"[:500],
            "started_at": now,
            "heartbeat_at": now,
            "finished_at": now,
            "worker": "conversion",
        },
    )


def _apply_funds(
    *, folder: Path, plans: dict[str, Plan], result: Result, now: dt.datetime
) -> dict[tuple[str, str], Fund]:
    funds = {
        (f.plan.code, f.code): f for f in Fund.objects.select_related("plan").filter(plan__in=plans.values())
    }
    new = []
    for _line, v in _stream(folder, "funds.csv"):
        key = (v["plan"], v["fund"])
        if key not in funds:
            new.append(
                Fund(
                    plan=plans[v["plan"]],
                    code=v["fund"],
                    name=v["fund_name"],
                    is_default=v["default_fund"] == "yes",
                )
            )
    for fund in _bulk(Fund, new, "funds.csv", 2):
        funds[(fund.plan.code, fund.code)] = fund
    held = set(FundPrice.objects.filter(fund__in=list(funds.values())).values_list("fund_id", "date"))
    prices = []
    for _line, v in _stream(folder, "fund_prices.csv"):
        fund = funds[(v["plan"], v["fund"])]
        if (fund.pk, v["date"]) in held:
            continue  # the same value is on file (a different one is conflicts_with_records)
        prices.append(
            FundPrice(
                fund=fund,
                date=v["date"],
                price=v["price"],
                loaded_at=now,
                source=f"conversion {result.package_id}",
            )
        )
    _bulk(FundPrice, prices, "fund_prices.csv", 2)
    return funds


def _apply_people(*, folder: Path, now: dt.datetime, actor: str) -> dict[str, int]:
    """People, their employment events and Years of Vesting Service, a batch of participants.csv at a time; returns
    the person id of each employee number."""
    people: dict[str, int] = {}
    for batch in _in_batches(_stream(folder, "participants.csv")):
        on_file = {p.employee_number: p.pk for p in _people_on_file([v["employee_number"] for _, v in batch])}
        fields = ("first_name", "last_name", "birth_date", "hire_date", "marital_status", "email")
        address = ("address_line1", "address_line2", "city", "state", "postal_code")
        new = [
            Person(
                employee_number=v["employee_number"],
                **{f: v[f] or "" if f == "email" else v[f] for f in fields},
                **{f: v[f] or "" for f in address},
            )
            for _, v in batch
            if v["employee_number"] not in on_file
        ]
        for person in _bulk(Person, new, "participants.csv", 2):
            on_file[person.employee_number] = person.pk
        people.update(on_file)
        events = []
        credits = []
        for _, v in batch:
            person_id = on_file[v["employee_number"]]
            for kind, column, reason in (
                (EmploymentEvent.Kind.SEPARATION, "termination_date", v["termination_reason"] or ""),
                (EmploymentEvent.Kind.REHIRE, "rehire_date", ""),
                (EmploymentEvent.Kind.DEATH, "death_date", EmploymentEvent.Reason.DEATH),
                (EmploymentEvent.Kind.DISABILITY, "disability_date", ""),
            ):
                if v[column]:
                    events.append(
                        EmploymentEvent(
                            person_id=person_id,
                            kind=kind,
                            reason=reason,
                            effective_date=v[column],
                            recorded_at=now,
                            recorded_by=actor,
                            note="converted from the prior recordkeeper (FORMAT.md 5): recorded, not acted on",
                        )
                    )
            credits.append(
                VestingServiceCredit(
                    person_id=person_id,
                    through_year=v["vesting_service_through"],
                    years=v["vesting_service_years"],
                )
            )
        _bulk(EmploymentEvent, events, "participants.csv", 2)
        held = set(
            VestingServiceCredit.objects.filter(person_id__in=list(on_file.values())).values_list(
                "person_id", "through_year"
            )
        )
        _bulk(
            VestingServiceCredit,
            [c for c in credits if (c.person_id, c.through_year) not in held],
            "participants.csv",
            2,
        )
    return people


def _apply_key_employees(
    *, folder: Path, kept: Kept, people: dict[str, int], actor: str, now: dt.datetime
) -> None:
    """A Key Employee list for each covered identification year, possibly empty (EDCP 1.20, RRP 1.14, BRP 1.3(i))."""
    members: dict[int, list[int]] = defaultdict(list)
    for _line, v in _stream(folder, "participants.csv"):
        for year in v["key_employee_years"] or ():
            members[year].append(people[v["employee_number"]])
    for year in range(kept.ke_from, kept.ke_to + 1):
        key_employee_list_record(
            identification_year=year,
            people=list(Person.objects.filter(id__in=members[year])),
            actor=actor,
            note="recorded from the conversion package",
            now=now,
        )


def _apply_participations(
    *, folder: Path, people: dict[str, int], plans: dict[str, Plan]
) -> dict[tuple[str, str], int]:
    """Returns the participation id of each (employee number, plan)."""
    ids: dict[tuple[str, str], int] = {}
    for batch in _in_batches(_stream(folder, "participations.csv")):
        new = [
            Participation(
                person_id=people[v["employee_number"]],
                plan=plans[v["plan"]],
                eligible_on=v["eligible_on"],
                entered_on=v["entry_date"],
                eligible=v["status"] == "active",  # inactive: no longer eligible to defer (EDCP 2.2)
            )
            for _, v in batch
        ]
        made = _bulk(Participation, new, "participations.csv", 2)
        for (_, v), p in zip(batch, made, strict=True):
            ids[(v["employee_number"], v["plan"])] = p.pk
    return ids


def _apply_accounts(
    *, folder: Path, participations: dict[tuple[str, str], int]
) -> dict[tuple[str, str, str], int]:
    """Returns the account id of each (employee number, plan, account)."""
    ids: dict[tuple[str, str, str], int] = {}
    for batch in _in_batches(_stream(folder, "accounts.csv")):
        new = []
        for _, v in batch:
            kind, month, _ = split_account(v["account"])
            new.append(
                Account(
                    participation_id=participations[(v["employee_number"], v["plan"])],
                    kind=kind,
                    specified_month=month,
                    opened_on=v["opened_on"],
                )
            )
        made = _bulk(Account, new, "accounts.csv", 2)
        for (_, v), account in zip(batch, made, strict=True):
            ids[(v["employee_number"], v["plan"], v["account"])] = account.pk
    return ids


def _apply_positions(
    *,
    folder: Path,
    accounts: dict[tuple[str, str, str], int],
    funds: dict[tuple[str, str], Fund],
    cd: dt.date,
    package_id: str,
    actor: str,
    now: dt.datetime,
) -> None:
    """One opening entry per position at its conversion-date price, and its valuation row (FORMAT.md 5)."""
    batch: list[tuple[int, dict[str, Any]]] = []
    # The values every row of a table shares, as COPY takes them (core.bulk.column_values), after each row's own: the
    # rows go to the database as plain tuples (core.bulk.insert_values), 576,000 positions at 100,000 participants,
    # each with its opening entry and its valuation, with no model instance built for any of them.
    entry_common = tuple(
        column_values(
            model=LedgerEntry,
            values={
                "kind": EntryKind.ADJUSTMENT,
                "source": Source.ADJUSTMENT,
                "effective_date": cd,
                "valuation_date": cd,
                "actor": actor,
                "posted_at": now,
                "memo": f"opening balance converted from package {package_id}"[:300],
            },
        )
    )
    valuation_common = tuple(
        column_values(model=DailyValuation, values={"valuation_date": cd, "earnings": Decimal("0.00")})
    )

    def flush() -> None:
        if not batch:
            return
        line = batch[0][0]
        where = [
            (accounts[(v["employee_number"], v["plan"], v["account"])], funds[(v["plan"], v["fund"])].pk)
            for _, v in batch
        ]
        ids = _values(Position, POSITION_COLUMNS, where, "positions.csv", line)
        entries: list[tuple] = []
        valuations: list[tuple] = []
        for (_, v), position, (account, fund) in zip(batch, ids, where, strict=True):
            key = f"{TAKEN_OVER_KEY_PREFIX}{package_id}:{position}"[:220]
            entries.append((position, account, v["units"], v["price"], v["market_value"], key, *entry_common))
            valuations.append(
                (position, account, fund, v["units"], v["price"], v["market_value"], v["market_value"])
                + valuation_common
            )
        _values(LedgerEntry, ENTRY_COLUMNS, entries, "positions.csv", line)
        _values(DailyValuation, VALUATION_COLUMNS, valuations, "positions.csv", line)
        batch.clear()

    for line, v in _stream(folder, "positions.csv"):
        batch.append((line, v))
        if len(batch) >= BATCH:
            flush()
    flush()


def _election_fields(*, participation: int, filed_on: dt.date, actor: str, data: dict) -> dict[str, Any]:
    return {
        "participation_id": participation,
        "submitted_at": _received(filed_on),
        "status": Status.ACCEPTED,
        "channel": Channel.IMPORT,
        "actor": actor,
        "message": "accepted election received through the conversion (FORMAT.md 5)",
        "request_data": data,
    }


def _jsonable(v: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(x) if x is not None else None) for k, x in v.items()}


def _in_batches(items: Iterator[Any], size: int = BATCH) -> Iterator[list[Any]]:
    """`items` in lists of `size`: the model instances of one batch are all that is held at a time."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _apply_elections(
    *,
    folder: Path,
    participations: dict[tuple[str, str], int],
    funds: dict[tuple[str, str], Fund],
    actor: str,
) -> None:
    """Deferral, distribution, schedule-change and investment elections, as accepted elections (FORMAT.md 5)."""
    by_year = _apply_deferral_elections(folder=folder, participations=participations, actor=actor)
    for batch in _in_batches(iter(_stream(folder, "deferral_allocations.csv"))):
        allocations = []
        for line, v in batch:
            kind, month, _ = split_account(v["account"])
            target = by_year.get((v["employee_number"], v["plan"], v["plan_year"]))
            if target is None:
                raise ApplyFailure(
                    "deferral_allocations.csv", line, "no deferral election to attach the allocation to"
                )
            allocations.append(
                DeferralAllocation(
                    election_id=target, account_kind=kind, specified_month=month, percent=v["percent"]
                )
            )
        _bulk(DeferralAllocation, allocations, "deferral_allocations.csv", 2)
    for batch in _in_batches(iter(_stream(folder, "distribution_elections.csv"))):
        distribution = []
        for _line, v in batch:
            kind, month, _ = split_account(v["account"])
            distribution.append(
                DistributionElection(
                    account_kind=kind,
                    specified_month=month,
                    form=v["form"],
                    installments=v["installments"],
                    lump_sum_percent=v["lump_sum_percent"],
                    delay_months=v["delay_months"] or 0,
                    **_election_fields(
                        participation=participations[(v["employee_number"], v["plan"])],
                        filed_on=v["filed_on"],
                        actor=actor,
                        data=_jsonable(v),
                    ),
                )
            )
        _bulk(DistributionElection, distribution, "distribution_elections.csv", 2)
    for batch in _in_batches(iter(_stream(folder, "schedule_changes.csv"))):
        changes = []
        for _line, v in batch:
            kind, month, _ = split_account(v["account"])
            changes.append(
                ScheduleChange(
                    account_kind=kind,
                    specified_month=month,
                    new_month=v["new_payment_month"],
                    delay_years=v["delay_years"],
                    form=v["form"] or "",
                    installments=v["installments"],
                    takes_effect_on=add_years(v["filed_on"], 1),  # EDCP 6.2: no sooner than 12 months after
                    **_election_fields(
                        participation=participations[(v["employee_number"], v["plan"])],
                        filed_on=v["filed_on"],
                        actor=actor,
                        data=_jsonable(v),
                    ),
                )
            )
        _bulk(ScheduleChange, changes, "schedule_changes.csv", 2)
    _apply_investment_elections(folder=folder, participations=participations, funds=funds, actor=actor)


def _apply_deferral_elections(
    *, folder: Path, participations: dict[tuple[str, str], int], actor: str
) -> dict[tuple[str, str, int], int]:
    """Rows with the same person, plan, plan year, type and filing date make one election; returns the id of the
    election each (person, plan, plan year)'s allocations attach to: its first non-performance one, else its first."""
    grouped: dict[tuple[str, str, int, str, dt.date], list[dict[str, Any]]] = defaultdict(list)
    for _line, v in _stream(folder, "deferral_elections.csv"):
        grouped[(v["employee_number"], v["plan"], v["plan_year"], v["election_type"], v["filed_on"])].append(
            _jsonable(v)
        )
    by_year: dict[tuple[str, str, int], int] = {}
    for keys in _in_batches(iter(list(grouped))):
        elections = []
        for emp, plan, year, kind, filed_on in keys:
            first = grouped[(emp, plan, year, kind, filed_on)][0]
            irrevocable = (
                dt.datetime(
                    year - 1, 12, 31, 23, 59, tzinfo=EASTERN
                )  # the annual deadline (EDCP 3.2(b), RRP 2.03(b))
                if kind == DeferralElection.Kind.ANNUAL
                else _received(filed_on)
            )
            elections.append(
                DeferralElection(
                    plan_year=year,
                    kind=kind,
                    performance_period_start=_day(first["performance_period_start"]),
                    performance_period_end=_day(first["performance_period_end"]),
                    irrevocable_at=irrevocable,
                    **_election_fields(
                        participation=participations[(emp, plan)],
                        filed_on=filed_on,
                        actor=actor,
                        data={"rows": grouped[(emp, plan, year, kind, filed_on)]},
                    ),
                )
            )
        elections = _bulk(DeferralElection, elections, "deferral_elections.csv", 2)
        lines = []
        for election, key in zip(elections, keys, strict=True):
            emp, plan, year = key[0], key[1], key[2]
            if election.kind != DeferralElection.Kind.PERFORMANCE or (emp, plan, year) not in by_year:
                by_year.setdefault((emp, plan, year), election.pk)
            for r in grouped.pop(key):
                lines.append(
                    DeferralElectionLine(
                        election=election, component=r["component"], percent=int(r["percent"])
                    )
                )
        _bulk(DeferralElectionLine, lines, "deferral_elections.csv", 2)
    return by_year


def _day(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text is not None else None


def _apply_investment_elections(
    *,
    folder: Path,
    participations: dict[tuple[str, str], int],
    funds: dict[tuple[str, str], Fund],
    actor: str,
) -> None:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for _line, v in _stream(folder, "investment_elections.csv"):
        grouped[(v["employee_number"], v["plan"])].append(_jsonable(v))
    for keys in _in_batches(iter(list(grouped))):
        elections = _bulk(
            InvestmentElection,
            [
                InvestmentElection(
                    applies_to=InvestmentElection.AppliesTo.FUTURE,  # the conversion rebalances nothing (FORMAT.md 2)
                    effective_on=_day(grouped[key][0]["effective_on"]),
                    **_election_fields(
                        participation=participations[key],
                        filed_on=dt.date.fromisoformat(grouped[key][0]["effective_on"]),
                        actor=actor,
                        data={"rows": grouped[key]},
                    ),
                )
                for key in keys
            ],
            "investment_elections.csv",
            2,
        )
        lines = [
            InvestmentElectionLine(
                election=election, fund=funds[(r["plan"], r["fund"])], percent=int(r["percent"])
            )
            for election, key in zip(elections, keys, strict=True)
            for r in grouped.pop(key)
        ]
        _bulk(InvestmentElectionLine, lines, "investment_elections.csv", 2)


def _apply_beneficiaries(*, folder: Path, people: dict[str, int], plans: dict[str, Plan], actor: str) -> None:
    """Each designation as received on its designation_date (FORMAT.md 5)."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for _line, v in _stream(folder, "beneficiaries.csv"):
        grouped[(v["employee_number"], v["plan"])].append(
            {k: v[k] for k in ("designation_date", "tier", "name", "relationship", "percent")}
        )
    for keys in _in_batches(iter(list(grouped))):
        designations = _bulk(
            BeneficiaryDesignation,
            [
                BeneficiaryDesignation(
                    person_id=people[emp],
                    plan=plans[plan],
                    received_at=_received(grouped[(emp, plan)][0]["designation_date"]),
                    recorded_by=actor,
                )
                for emp, plan in keys
            ],
            "beneficiaries.csv",
            2,
        )
        _bulk(
            Beneficiary,
            [
                Beneficiary(
                    designation=designation,
                    tier=r["tier"],
                    name=r["name"],
                    relationship=r["relationship"],
                    percent=r["percent"],
                )
                for designation, key in zip(designations, keys, strict=True)
                for r in grouped.pop(key)
            ],
            "beneficiaries.csv",
            2,
        )


def _apply_brp(
    *,
    folder: Path,
    participations: dict[tuple[str, str], int],
    cd: dt.date,
    package_id: str,
    actor: str,
) -> None:
    """The Pension Plan figures (BRP 3.2-3.4), and the elected form of a benefit not commenced as its annuity
    election (BRP 4.2(c)). Benefits in pay are written with the payment schedules (conversion.apply_payments)."""
    figures = [
        DefinedBenefitRecord(
            participation_id=participations[(v["employee_number"], v["plan"])],
            as_of=v["as_of"],
            unlimited_annual_benefit=v["unlimited_annual_benefit"],
            imputed_annual_benefit=v["imputed_annual_benefit"] or Decimal("0.00"),
            payable_annual_benefit=v["payable_annual_benefit"],
            benefit_service_years=v["benefit_service_years"],
            early_retirement_date=v["early_retirement_date"],
            normal_retirement_date=v["normal_retirement_date"],
            early_adjustment_factor=v["early_adjustment_factor"] or Decimal("1"),
            pre_2005_annual_benefit=v["pre_2005_annual_benefit"] or Decimal("0.00"),
            spouse_name=v["spouse_name"] or "",
            spouse_birth_date=v["spouse_birth_date"],
            source=f"conversion package {package_id}"[:200],
        )
        for _line, v in _stream(folder, "pension_figures.csv")
    ]
    _bulk(DefinedBenefitRecord, figures, "pension_figures.csv", 2)
    elections = [
        AnnuityElection(
            form=v["form"],
            defer_years=v["defer_years"] or 0,
            is_change=bool(v["defer_years"]),
            **_election_fields(
                participation=participations[(v["employee_number"], v["plan"])],
                filed_on=v["elected_on"] or cd,
                actor=actor,
                data=_jsonable(v),
            ),
        )
        for _line, v in _stream(folder, "db_benefits.csv")
        if v["status"] == "not_commenced"
    ]
    _bulk(AnnuityElection, elections, "db_benefits.csv", 2)


def _apply_payments(
    *,
    folder: Path,
    kept: Kept,
    accounts: dict[tuple[str, str, str], int],
    participations: dict[tuple[str, str], int],
    plans: dict[str, Plan],
    cd: dt.date,
    package_id: str,
    now: dt.datetime,
) -> None:
    """Payments in progress and BRP benefits in pay continue here (FORMAT.md 5): conversion.apply_payments. It is
    given the accounts, participations and people its files name, read from what was just written."""
    benefits = {(v["employee_number"], v["plan"]) for _, v in _stream(folder, "db_benefits.csv")}
    try:
        apply_payment_schedules(
            stream=lambda name: _stream(folder, name),
            accounts=accounts,
            package_id=package_id,
            now=now,
            cd=cd,
        )
        emps = {emp for emp, _ in benefits}
        chosen = _written(Participation, {key: participations[key] for key in benefits}, "person")
        by_id = {plan.pk: plan for plan in plans.values()}
        for participation in chosen.values():
            participation.plan = by_id[participation.plan_id]  # one plan object: its versions are read once
        key_years: dict[str, frozenset[int] | None] = {}
        people: dict[str, dict[str, Any]] = {}
        for _line, v in _stream(folder, "participants.csv"):
            if v["employee_number"] in emps:
                people[v["employee_number"]] = v
                key_years[v["employee_number"]] = v["key_employee_years"]
        apply_db_benefits(
            stream=lambda name: _stream(folder, name),
            participations=chosen,
            people=people,
            key_employee=lambda emp, day: key_employee_on(key_years.get(emp), day, kept.ke_from, kept.ke_to),
            package_id=package_id,
            now=now,
            cd=cd,
        )
    except PaymentMismatch as exc:
        raise ApplyFailure(exc.file, exc.line, exc.message) from exc


def _written(model: Any, ids: dict[Any, int], *related: str) -> dict[Any, Any]:
    """The rows of `model` with the ids of `ids` (a package key -> id), by the same keys: read back a chunk at a time."""
    found: dict[int, Any] = {}
    wanted = list(ids.values())
    for i in range(0, len(wanted), LOOKUP_CHUNK):
        found.update(
            (o.pk, o)
            for o in model.objects.filter(id__in=wanted[i : i + LOOKUP_CHUNK]).select_related(*related)
        )
    return {key: found[pk] for key, pk in ids.items()}
