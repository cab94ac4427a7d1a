"""Reading a scenario file: every rule of FORMAT.md checked before anything runs (exit status 2)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from plans.services import catalog_codes


class ScenarioError(ValueError):
    """A malformed scenario: names the event index (or the section) and the field."""


EVENT_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    # type: {"required": (...), "optional": (...)}
    "deferral_election": {
        "required": ("participant", "plan_year", "percentages"),
        "optional": ("performance_period", "accounts"),
    },
    "distribution_election": {
        "required": ("participant", "account", "form"),
        "optional": ("installments", "lump_sum_percent", "delay_years", "delay_months"),
    },
    "investment_election": {"required": ("participant", "allocation"), "optional": ("applies_to",)},
    "pay": {
        "required": ("participant", "component", "gross"),
        "optional": ("performance_period_end", "net_available"),
    },
    "company_contribution": {"required": ("participant", "kind", "amount", "plan_year"), "optional": ()},
    "retirement_contribution_declared": {"required": ("plan_year", "percent"), "optional": ()},
    "separation": {"required": ("participant", "reason"), "optional": ()},
    "death": {"required": ("participant",), "optional": ()},
    "disability": {"required": ("participant",), "optional": ()},
    "change_in_control": {"required": (), "optional": ()},
    "schedule_change": {
        "required": ("participant", "account"),
        "optional": ("form", "installments", "new_month", "delay_years", "lump_sum_percent"),
    },
    "emergency_request": {"required": ("participant", "amount"), "optional": ("approved_on",)},
    "domestic_relations_order": {
        "required": ("participant", "alternate_payee"),
        "optional": ("percent", "amount", "account"),
    },
    # BRP (a defined benefit): the qualified Pension Plan's figures for the participant, and the form of benefit.
    "pension_figures": {
        "required": (
            "participant",
            "unlimited_annual_benefit",
            "payable_annual_benefit",
            "benefit_service_years",
            "normal_retirement_date",
        ),
        "optional": (
            "imputed_annual_benefit",
            "early_retirement_date",
            "early_adjustment_factor",
            "spouse_name",
            "spouse_birth_date",
        ),
    },
    "annuity_election": {"required": ("participant", "form"), "optional": ("defer_years",)},
}
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


def _check_event(i: int, raw: dict, participants: dict[str, Participant], funds: dict[str, Fund]) -> Event:
    where = f"event {i}"
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: not an object")
    etype = raw.get("type")
    if etype not in EVENT_FIELDS:
        raise ScenarioError(f"{where} field type: unknown event type {etype!r}")
    on = _date(raw.get("on"), f"{where} field on")
    spec = EVENT_FIELDS[etype]
    allowed = set(spec["required"]) | set(spec["optional"]) | set(COMMON)
    for name in raw:
        if name not in allowed:
            raise ScenarioError(f"{where} ({etype}) field {name}: not a field of this event type")
    for name in spec["required"]:
        if name not in raw:
            raise ScenarioError(f"{where} ({etype}) field {name}: missing")
    pid = raw.get("participant")
    if "participant" in spec["required"] and pid not in participants:
        raise ScenarioError(f"{where} ({etype}) field participant: unknown participant {pid!r}")
    f = f"{where} ({etype}) field"
    if etype == "deferral_election":
        _whole(raw["plan_year"], f"{f} plan_year", 1990, 2100)
        if not isinstance(raw["percentages"], dict) or not raw["percentages"]:
            raise ScenarioError(f"{f} percentages: must map components to whole percents")
        for comp, pct in raw["percentages"].items():
            _whole(pct, f"{f} percentages.{comp}", 0, 100)
        if "accounts" in raw:
            if not isinstance(raw["accounts"], dict) or not raw["accounts"]:
                raise ScenarioError(f"{f} accounts: must map accounts to whole percents")
            for acc, pct in raw["accounts"].items():
                _account_name(acc, f"{f} accounts")
                _whole(pct, f"{f} accounts.{acc}", 0, 100)
        if "performance_period" in raw:
            pp = raw["performance_period"]
            if not isinstance(pp, dict):
                raise ScenarioError(f"{f} performance_period: must be {{start, end}}")
            _date(pp.get("start"), f"{f} performance_period.start")
            _date(pp.get("end"), f"{f} performance_period.end")
    elif etype == "distribution_election":
        _account_name(raw["account"], f"{f} account")
        if raw["form"] not in ("lump_sum", "installments", "lump_sum_and_installments"):
            raise ScenarioError(
                f"{f} form: {raw['form']!r} is not lump_sum, installments or lump_sum_and_installments"
            )
        if "installments" in raw:
            _whole(raw["installments"], f"{f} installments", 0, 100)
        if "lump_sum_percent" in raw:
            _whole(raw["lump_sum_percent"], f"{f} lump_sum_percent", 0, 100)
        for k in ("delay_years", "delay_months"):
            if k in raw:
                _whole(raw[k], f"{f} {k}", 0, 600)
    elif etype == "investment_election":
        alloc = raw["allocation"]
        if not isinstance(alloc, dict) or not alloc:
            raise ScenarioError(f"{f} allocation: must map funds to whole percents")
        for code, pct in alloc.items():
            if code not in funds:
                raise ScenarioError(f"{f} allocation: unknown fund {code!r}")
            _whole(pct, f"{f} allocation.{code}", 0, 100)
        if raw.get("applies_to", "both") not in ("future", "existing", "both"):
            raise ScenarioError(f"{f} applies_to: {raw['applies_to']!r} is not future, existing or both")
    elif etype == "pay":
        if not isinstance(raw["component"], str) or not raw["component"]:
            raise ScenarioError(f"{f} component: missing")
        _money(raw["gross"], f"{f} gross")
        if "performance_period_end" in raw:
            _date(raw["performance_period_end"], f"{f} performance_period_end")
        if "net_available" in raw:
            _money(raw["net_available"], f"{f} net_available")
    elif etype == "company_contribution":
        if raw["kind"] not in ("matching", "retirement"):
            raise ScenarioError(f"{f} kind: {raw['kind']!r} is not matching or retirement")
        _money(raw["amount"], f"{f} amount", positive=True)
        _whole(raw["plan_year"], f"{f} plan_year", 1990, 2100)
    elif etype == "retirement_contribution_declared":
        _whole(raw["plan_year"], f"{f} plan_year", 1990, 2100)
        pct = _money(raw["percent"], f"{f} percent")
        if pct > 100:
            raise ScenarioError(f"{f} percent: {pct} is over 100")
    elif etype == "separation":
        if raw["reason"] not in ("resignation", "retirement", "involuntary"):
            raise ScenarioError(
                f"{f} reason: {raw['reason']!r} is not resignation, retirement or involuntary"
            )
    elif etype == "schedule_change":
        _account_name(raw["account"], f"{f} account")
        if "new_month" in raw:
            _month(raw["new_month"], f"{f} new_month")
        if "delay_years" in raw:
            _whole(raw["delay_years"], f"{f} delay_years", 0, 50)
        if "installments" in raw:
            _whole(raw["installments"], f"{f} installments", 0, 100)
        if "form" in raw and raw["form"] not in ("lump_sum", "installments", "lump_sum_and_installments"):
            raise ScenarioError(f"{f} form: {raw['form']!r} is not a form")
        if not any(k in raw for k in ("form", "installments", "new_month", "delay_years")):
            raise ScenarioError(f"{f}: a schedule change needs form/installments, new_month or delay_years")
    elif etype == "emergency_request":
        _money(raw["amount"], f"{f} amount", positive=True)
        if "approved_on" in raw:
            _date(raw["approved_on"], f"{f} approved_on")
    elif etype == "domestic_relations_order":
        if not isinstance(raw["alternate_payee"], str) or not raw["alternate_payee"]:
            raise ScenarioError(f"{f} alternate_payee: missing")
        if ("percent" in raw) == ("amount" in raw):
            raise ScenarioError(f"{f}: give exactly one of percent or amount")
        if "percent" in raw:
            _whole(raw["percent"], f"{f} percent", 1, 100)
        if "amount" in raw:
            _money(raw["amount"], f"{f} amount", positive=True)
        if "account" in raw:
            _account_name(raw["account"], f"{f} account")
    elif etype == "pension_figures":
        for name in ("unlimited_annual_benefit", "payable_annual_benefit", "imputed_annual_benefit"):
            if name in raw:
                _money(raw[name], f"{f} {name}")
        _money(raw["benefit_service_years"], f"{f} benefit_service_years")
        if "early_adjustment_factor" in raw:
            _money(raw["early_adjustment_factor"], f"{f} early_adjustment_factor", positive=True)
        for name in ("normal_retirement_date", "early_retirement_date", "spouse_birth_date"):
            if name in raw:
                _date(raw[name], f"{f} {name}")
    elif etype == "annuity_election":
        if raw["form"] not in ANNUITY_FORMS:
            raise ScenarioError(f"{f} form: {raw['form']!r} is not one of {', '.join(ANNUITY_FORMS)}")
        if "defer_years" in raw:
            _whole(raw["defer_years"], f"{f} defer_years", 0, 50)
    data = {k: v for k, v in raw.items() if k not in ("on", "type", "participant")}
    return Event(index=i, on=on, type=etype, participant=pid, data=data)


def parse_scenario(data: Any, source: str = "") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("the scenario must be a JSON object")
    for name in ("name", "plan", "through", "funds", "participants", "events"):
        if name not in data:
            raise ScenarioError(f"top level field {name}: missing")
    known = {
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
    }
    for name in data:
        if name not in known:
            raise ScenarioError(f"top level field {name}: not a field of the format")
    plans = catalog_codes()  # a plan of the shipped catalog (FORMAT.md); plans are data, never code
    if data["plan"] not in plans:
        raise ScenarioError(f"top level field plan: {data['plan']!r} is not one of {', '.join(plans)}")
    through = _date(data["through"], "top level field through")
    plan_version = (
        _date(data["plan_version"], "top level field plan_version") if data.get("plan_version") else None
    )
    checkpoints = [_date(d, f"checkpoints[{i}]") for i, d in enumerate(data.get("checkpoints") or [])]
    for c in checkpoints:
        if c > through:
            raise ScenarioError(f"checkpoint {c} is after through {through}")
    funds: dict[str, Fund] = {}
    if not isinstance(data["funds"], dict) or not data["funds"]:
        raise ScenarioError("top level field funds: at least one fund is needed")
    for code, f in data["funds"].items():
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
        funds[code] = Fund(
            code=code, name=str(f.get("name") or code), default=bool(f.get("default")), prices=sorted(prices)
        )
    if sum(1 for f in funds.values() if f.default) != 1:
        raise ScenarioError(
            'top level field funds: exactly one fund must have "default": true (EDCP 7.5 / RRP 3.05(b))'
        )
    limits = data.get("limits") or {}
    if not isinstance(limits, dict):
        raise ScenarioError("top level field limits: must be an object")
    for code, years in limits.items():
        if not isinstance(years, dict):
            raise ScenarioError(f"limits {code}: must map years to amounts")
        for year, amount in years.items():
            if not str(year).isdigit():
                raise ScenarioError(f"limits {code}: {year!r} is not a year")
            _money(amount, f"limits {code} {year}", positive=True)
    participants: dict[str, Participant] = {}
    if not isinstance(data["participants"], dict):
        raise ScenarioError("top level field participants: must be an object")
    p_fields = {
        "birth_date",
        "hire_date",
        "married",
        "eligible_on",
        "key_employee_years",
        "vesting_service_years",
        "name",
    }
    for pid, p in data["participants"].items():
        where = f"participant {pid}"
        if not isinstance(p, dict):
            raise ScenarioError(f"{where}: not an object")
        for name in p:
            if name not in p_fields:
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
        participants[pid] = Participant(
            pid=pid,
            birth_date=birth,
            hire_date=hire,
            married=bool(p.get("married", False)),
            eligible_on=_date(p["eligible_on"], f"{where} field eligible_on")
            if p.get("eligible_on")
            else None,
            key_employee_years=[_whole(y, f"{where} field key_employee_years", 1990, 2100) for y in years],
            vesting_service_years=_whole(
                p.get("vesting_service_years", 0), f"{where} field vesting_service_years", 0, 80
            ),
        )
        if not isinstance(p.get("married", False), bool):
            raise ScenarioError(f"{where} field married: must be true or false")
    if not isinstance(data["events"], list):
        raise ScenarioError("top level field events: must be a list")
    events = [_check_event(i, raw, participants, funds) for i, raw in enumerate(data["events"])]
    for e in events:
        if e.on > through:
            raise ScenarioError(f"event {e.index} field on: {e.on} is after through {through}")
    expect = data.get("expect") or {}
    if not isinstance(expect, dict):
        raise ScenarioError("top level field expect: must be an object")
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
        expect=expect,
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
