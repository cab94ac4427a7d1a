"""Reading a scenario file: every rule of FORMAT.md checked before anything runs (exit status 2)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from plans.services import catalog_codes


class ScenarioError(ValueError):
    """A malformed scenario: names the event index (or the section) and the field."""


FORMS = ("lump_sum", "installments", "lump_sum_and_installments")
ANNUITY_FORMS = (
    "qjsa",
    "single_life",
    "period_certain_60",
    "period_certain_120",
    "period_certain_180",
    "js_100",
    "js_75",
    "js_50",
    "lump_sum",
)
COMMON = ("on", "type", "participant", "note")


@dataclass
class Fund:
    code: str
    name: str
    default: bool
    prices: list[tuple[dt.date, Decimal]]


@dataclass
class Participant:
    pid: str
    birth_date: dt.date
    hire_date: dt.date
    married: bool = False
    eligible_on: dt.date | None = None
    key_employee_years: list[int] = field(default_factory=list)
    vesting_service_years: int = 0


@dataclass
class Event:
    index: int
    on: dt.date
    type: str
    participant: str | None
    data: dict[str, Any]


@dataclass
class Scenario:
    name: str
    plan: str
    plan_version: dt.date | None
    through: dt.date
    checkpoints: list[dt.date]
    funds: dict[str, Fund]
    limits: dict[str, dict[str, str]]
    participants: dict[str, Participant]
    events: list[Event]
    expect: dict[str, Any]
    source: str = ""

    @property
    def start(self) -> dt.date:
        days = [e.on for e in self.events] + list(self.checkpoints) + [self.through]
        return min(days)


def _date(value: Any, where: str) -> dt.date:
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: {value!r} is not a date string YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ScenarioError(f"{where}: {value!r} is not a date YYYY-MM-DD")


def _month(value: Any, where: str) -> dt.date:
    if not isinstance(value, str) or len(value) != 7:
        raise ScenarioError(f"{where}: {value!r} is not a month YYYY-MM")
    try:
        return dt.date.fromisoformat(value + "-01")
    except ValueError:
        raise ScenarioError(f"{where}: {value!r} is not a month YYYY-MM")


def _money(value: Any, where: str, *, positive: bool = False) -> Decimal:
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: {value!r} must be a decimal string")
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise ScenarioError(f"{where}: {value!r} is not a decimal number")
    if not d.is_finite() or (positive and d <= 0) or d < 0:
        raise ScenarioError(f"{where}: {value!r} must be {'positive' if positive else 'zero or more'}")
    return d


def _whole(value: Any, where: str, lo: int = 0, hi: int = 100) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{where}: {value!r} is not a whole number")
    if not lo <= value <= hi:
        raise ScenarioError(f"{where}: {value} is outside {lo}..{hi}")
    return value


def _account_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: {value!r} is not an account name")
    if value.startswith("specified_date:"):
        _month(value.split(":", 1)[1], where)
    return value


# --- field validators: fn(value, where, funds) raises ScenarioError ---------------------------------

Validator = Callable[[Any, str, dict[str, "Fund"]], object]


def whole(lo: int, hi: int) -> Validator:
    return lambda value, where, funds: _whole(value, where, lo, hi)


def money(*, positive: bool = False) -> Validator:
    return lambda value, where, funds: _money(value, where, positive=positive)


def date(value: Any, where: str, funds: dict) -> dt.date:
    return _date(value, where)


def month(value: Any, where: str, funds: dict) -> dt.date:
    return _month(value, where)


def account(value: Any, where: str, funds: dict) -> str:
    return _account_name(value, where)


def text(value: Any, where: str, funds: dict) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: missing")
    return value


def one_of(choices: tuple[str, ...], names: str | None = None) -> Validator:
    def check(value: Any, where: str, funds: dict) -> str:
        if value not in choices:
            raise ScenarioError(f"{where}: {value!r} is not {names or ', '.join(choices)}")
        return value

    return check


def percent(value: Any, where: str, funds: dict) -> Decimal:
    pct = _money(value, where)
    if pct > 100:
        raise ScenarioError(f"{where}: {pct} is over 100")
    return pct


def whole_percents(key: Validator | None = None, what: str = "components") -> Validator:
    """An object of `what` (checked by `key`) to whole percents."""

    def check(value: Any, where: str, funds: dict) -> None:
        if not isinstance(value, dict) or not value:
            raise ScenarioError(f"{where}: must map {what} to whole percents")
        for name, pct in value.items():
            if key is not None:
                key(name, where, funds)
            _whole(pct, f"{where}.{name}", 0, 100)

    return check


def boolean(value: Any, where: str, funds: dict) -> None:
    if not isinstance(value, bool):
        raise ScenarioError(f"{where}: {value!r} is not true or false")


def fund(value: Any, where: str, funds: dict) -> str:
    if value not in funds:
        raise ScenarioError(f"{where}: unknown fund {value!r}")
    return value


def period(value: Any, where: str, funds: dict) -> None:
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: must be {{start, end}}")
    _date(value.get("start"), f"{where}.start")
    _date(value.get("end"), f"{where}.end")


def table_rows(value: Any, where: str, funds: dict) -> None:
    """A committee-maintained table's rows: [[key, percent], ...]; a key is a number (years of service, a plan
    year) or "default", a percent a decimal string from 0 to 100."""
    if not isinstance(value, list) or not value:
        raise ScenarioError(f"{where}: must be a list of [key, value] rows")
    for j, row in enumerate(value):
        if not isinstance(row, list) or len(row) != 2:
            raise ScenarioError(f"{where}[{j}]: must be [key, value]")
        key, pct = row
        if isinstance(key, bool) or not (isinstance(key, int) or key == "default"):
            raise ScenarioError(f'{where}[{j}] key: {key!r} is not a whole number or "default"')
        percent(pct, f"{where}[{j}] value", funds)


@dataclass(frozen=True)
class EventSpec:
    """An event type of FORMAT.md: its fields, required first, each with its validator, and any rule across fields."""

    required: dict[str, Validator | None]
    optional: dict[str, Validator | None] = field(default_factory=dict)
    across: Callable[[dict, str], None] | None = None


def _one_of_percent_or_amount(raw: dict, where: str) -> None:
    if ("percent" in raw) == ("amount" in raw):
        raise ScenarioError(f"{where}: give exactly one of percent or amount")


def _some_change(raw: dict, where: str) -> None:
    if not any(k in raw for k in ("form", "installments", "new_month", "delay_years")):
        raise ScenarioError(f"{where}: a schedule change needs form/installments, new_month or delay_years")


PARTICIPANT = {"participant": None}  # checked against the scenario's participants
PLAN_YEAR = whole(1990, 2100)
EVENTS: dict[str, EventSpec] = {
    "deferral_election": EventSpec(
        {**PARTICIPANT, "plan_year": PLAN_YEAR, "percentages": whole_percents()},
        {"performance_period": period, "accounts": whole_percents(account, "accounts")},
    ),
    "distribution_election": EventSpec(
        {
            **PARTICIPANT,
            "account": account,
            "form": one_of(FORMS, "lump_sum, installments or lump_sum_and_installments"),
        },
        {
            "installments": whole(0, 100),
            "lump_sum_percent": whole(0, 100),
            "delay_years": whole(0, 600),
            "delay_months": whole(0, 600),
        },
    ),
    "investment_election": EventSpec(
        {**PARTICIPANT, "allocation": whole_percents(fund, "funds")},
        {"applies_to": one_of(("future", "existing", "both"), "future, existing or both")},
    ),
    "pay": EventSpec(
        {**PARTICIPANT, "component": text, "gross": money()},
        {"performance_period_end": date, "net_available": money()},
    ),
    "company_contribution": EventSpec(
        {
            **PARTICIPANT,
            "kind": one_of(("matching", "retirement"), "matching or retirement"),
            "amount": money(positive=True),
            "plan_year": PLAN_YEAR,
        }
    ),
    "retirement_contribution_declared": EventSpec({"plan_year": PLAN_YEAR, "percent": percent}),
    "separation": EventSpec(
        {
            **PARTICIPANT,
            "reason": one_of(
                ("resignation", "retirement", "involuntary"), "resignation, retirement or involuntary"
            ),
        }
    ),
    "death": EventSpec({**PARTICIPANT}),
    "disability": EventSpec({**PARTICIPANT}),
    "change_in_control": EventSpec({}),
    "schedule_change": EventSpec(
        {**PARTICIPANT, "account": account},
        {
            "form": one_of(FORMS, "a form"),
            "installments": whole(0, 100),
            "new_month": month,
            "delay_years": whole(0, 50),
            "lump_sum_percent": None,
        },
        across=_some_change,
    ),
    "emergency_request": EventSpec({**PARTICIPANT, "amount": money(positive=True)}, {"approved_on": date}),
    "domestic_relations_order": EventSpec(
        {**PARTICIPANT, "alternate_payee": text},
        {"percent": whole(1, 100), "amount": money(positive=True), "account": account, "lump_sum": boolean},
        across=_one_of_percent_or_amount,
    ),
    # BRP (a defined benefit): the qualified Pension Plan's figures for the participant, and the form of benefit.
    "pension_figures": EventSpec(
        {
            **PARTICIPANT,
            "unlimited_annual_benefit": money(),
            "payable_annual_benefit": money(),
            "benefit_service_years": money(),
            "normal_retirement_date": date,
        },
        {
            "imputed_annual_benefit": money(),
            "early_retirement_date": date,
            "early_adjustment_factor": money(positive=True),
            "spouse_name": None,
            "spouse_birth_date": date,
            "pre_2005_annual_benefit": money(),
        },
    ),
    "annuity_election": EventSpec(
        {**PARTICIPANT, "form": one_of(ANNUITY_FORMS)}, {"defer_years": whole(0, 50)}
    ),
    # BRP: the Spouse (or joint annuitant) dies.
    "survivor_death": EventSpec({**PARTICIPANT}, {}),
    # An extension of this project (FORMAT.md, "Extensions of this project"): the Committee records a new dated
    # version of a committee-maintained table of the scenario's plan (plans.services.table_set).
    "plan_table": EventSpec(
        {"table": text, "effective_date": date, "rows": table_rows},
        {"citation": text, "description": text, "reason": text},
    ),
}
# The fields of each event type, as earlier versions of this module published them.
EVENT_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    etype: {"required": tuple(spec.required), "optional": tuple(spec.optional)}
    for etype, spec in EVENTS.items()
}


def _check_event(i: int, raw: dict, participants: dict[str, Participant], funds: dict[str, Fund]) -> Event:
    where = f"event {i}"
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: not an object")
    etype = raw.get("type")
    if etype not in EVENTS:
        raise ScenarioError(f"{where} field type: unknown event type {etype!r}")
    on = _date(raw.get("on"), f"{where} field on")
    spec = EVENTS[etype]
    f = f"{where} ({etype}) field"
    allowed = set(spec.required) | set(spec.optional) | set(COMMON)
    for name in raw:
        if name not in allowed:
            raise ScenarioError(f"{f} {name}: not a field of this event type")
    for name in spec.required:
        if name not in raw:
            raise ScenarioError(f"{f} {name}: missing")
    pid = raw.get("participant")
    if "participant" in spec.required and pid not in participants:
        raise ScenarioError(f"{f} participant: unknown participant {pid!r}")
    for name, check in {**spec.required, **spec.optional}.items():
        if check is not None and name in raw:
            check(raw[name], f"{f} {name}", funds)
    if spec.across is not None:
        spec.across(raw, f)
    data = {k: v for k, v in raw.items() if k not in ("on", "type", "participant")}
    return Event(index=i, on=on, type=etype, participant=pid, data=data)


TOP_LEVEL = (
    "name",
    "plan",
    "plan_version",
    "through",
    "checkpoints",
    "funds",
    "limits",
    "participants",
    "events",
    "expect",
    "description",
    "notes",
)
TOP_LEVEL_REQUIRED = ("name", "plan", "through", "funds", "participants", "events")
PARTICIPANT_FIELDS = (
    "birth_date",
    "hire_date",
    "married",
    "eligible_on",
    "key_employee_years",
    "vesting_service_years",
    "name",
)


def _check_top_level(data: Any) -> None:
    if not isinstance(data, dict):
        raise ScenarioError("the scenario must be a JSON object")
    for name in TOP_LEVEL_REQUIRED:
        if name not in data:
            raise ScenarioError(f"top level field {name}: missing")
    for name in data:
        if name not in TOP_LEVEL:
            raise ScenarioError(f"top level field {name}: not a field of the format")
    plans = catalog_codes()  # a plan of the shipped catalog (FORMAT.md); plans are data, never code
    if data["plan"] not in plans:
        raise ScenarioError(f"top level field plan: {data['plan']!r} is not one of {', '.join(plans)}")
    for name, kind in (("funds", dict), ("participants", dict), ("events", list)):
        if not isinstance(data[name], kind):
            raise ScenarioError(
                f"top level field {name}: must be {'a list' if kind is list else 'an object'}"
            )
    if not isinstance(data.get("limits") or {}, dict):
        raise ScenarioError("top level field limits: must be an object")
    if not isinstance(data.get("expect") or {}, dict):
        raise ScenarioError("top level field expect: must be an object")


def _parse_fund(code: str, f: Any) -> Fund:
    where = f"fund {code}"
    if not isinstance(f, dict):
        raise ScenarioError(f"{where}: not an object")
    prices = []
    for j, pair in enumerate(f.get("prices") or []):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ScenarioError(f"{where} field prices[{j}]: must be [date, price]")
        prices.append(
            (
                _date(pair[0], f"{where} field prices[{j}] date"),
                _money(pair[1], f"{where} field prices[{j}] price", positive=True),
            )
        )
    if not prices:
        raise ScenarioError(f"{where} field prices: at least one price is needed")
    if len({d for d, _ in prices}) != len(prices):
        raise ScenarioError(f"{where} field prices: a date is listed twice")
    if not isinstance(f.get("default", False), bool):
        raise ScenarioError(f"{where} field default: must be true or false")
    return Fund(
        code=code, name=str(f.get("name") or code), default=bool(f.get("default")), prices=sorted(prices)
    )


def _parse_funds(raw: dict) -> dict[str, Fund]:
    if not raw:
        raise ScenarioError("top level field funds: at least one fund is needed")
    funds = {code: _parse_fund(code, f) for code, f in raw.items()}
    if sum(1 for f in funds.values() if f.default) != 1:
        raise ScenarioError(
            'top level field funds: exactly one fund must have "default": true (EDCP 7.5 / RRP 3.05(b))'
        )
    return funds


def _check_limits(limits: dict) -> None:
    for code, years in limits.items():
        if not isinstance(years, dict):
            raise ScenarioError(f"limits {code}: must map years to amounts")
        for year, amount in years.items():
            if not str(year).isdigit():
                raise ScenarioError(f"limits {code}: {year!r} is not a year")
            _money(amount, f"limits {code} {year}", positive=True)


def _parse_participant(pid: str, p: Any) -> Participant:
    where = f"participant {pid}"
    if not isinstance(p, dict):
        raise ScenarioError(f"{where}: not an object")
    for name in p:
        if name not in PARTICIPANT_FIELDS:
            raise ScenarioError(f"{where} field {name}: not a participant field")
    for name in ("birth_date", "hire_date"):
        if name not in p:
            raise ScenarioError(f"{where} field {name}: missing")
    birth = _date(p["birth_date"], f"{where} field birth_date")
    hire = _date(p["hire_date"], f"{where} field hire_date")
    if hire <= birth:
        raise ScenarioError(f"{where} field hire_date: {hire} is not after the birth date {birth}")
    years = p.get("key_employee_years", [])
    if not isinstance(years, list):
        raise ScenarioError(f"{where} field key_employee_years: must be a list of years")
    if not isinstance(p.get("married", False), bool):
        raise ScenarioError(f"{where} field married: must be true or false")
    return Participant(
        pid=pid,
        birth_date=birth,
        hire_date=hire,
        married=p.get("married", False),
        eligible_on=_date(p["eligible_on"], f"{where} field eligible_on") if p.get("eligible_on") else None,
        key_employee_years=[_whole(y, f"{where} field key_employee_years", 1990, 2100) for y in years],
        vesting_service_years=_whole(
            p.get("vesting_service_years", 0), f"{where} field vesting_service_years", 0, 80
        ),
    )


def _check_dates(through: dt.date, checkpoints: list[dt.date], events: list[Event]) -> None:
    for c in checkpoints:
        if c > through:
            raise ScenarioError(f"checkpoint {c} is after through {through}")
    for e in events:
        if e.on > through:
            raise ScenarioError(f"event {e.index} field on: {e.on} is after through {through}")


def parse_scenario(data: Any, source: str = "") -> Scenario:
    _check_top_level(data)
    through = _date(data["through"], "top level field through")
    plan_version = (
        _date(data["plan_version"], "top level field plan_version") if data.get("plan_version") else None
    )
    checkpoints = [_date(d, f"checkpoints[{i}]") for i, d in enumerate(data.get("checkpoints") or [])]
    funds = _parse_funds(data["funds"])
    limits = data.get("limits") or {}
    _check_limits(limits)
    participants = {pid: _parse_participant(pid, p) for pid, p in data["participants"].items()}
    events = [_check_event(i, raw, participants, funds) for i, raw in enumerate(data["events"])]
    _check_dates(through, checkpoints, events)
    return Scenario(
        name=str(data["name"]),
        plan=data["plan"],
        plan_version=plan_version,
        through=through,
        checkpoints=checkpoints,
        funds=funds,
        limits=limits,
        participants=participants,
        events=events,
        expect=data.get("expect") or {},
        source=source,
    )


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file")
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not valid JSON ({exc})")
    return parse_scenario(data, source=str(path))
