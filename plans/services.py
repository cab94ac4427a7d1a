"""Writes to the plan catalog: loading the shipped catalog (idempotent), and the committee-maintained
tables (dated figures, plan tables, market closures), each change audited; history from simple-history."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from core import valuation_calendar as cal
from core.audit import actor_label, audit_record
from core.errors import ApplicationError
from core.jobs import last_credited_date
from core.models import MarketClosure
from core.money import money
from plans.models import DatedFigure, Plan, PlanSection, PlanSetting, PlanTable, PlanVersion, Provision
from plans.provisions import SPECS, ProvisionError, validate_provision

if TYPE_CHECKING:
    from django.db import models

    from core.audit import Actor
    from core.models import MarketClosure


class CatalogError(ApplicationError):
    pass


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _section_sort_key(section: str) -> str:
    parts = re.findall(r"\d+|[A-Za-z]+", section)
    return ".".join(p.zfill(4) if p.isdigit() else p for p in parts)


def _update(obj: models.Model, **fields: object) -> bool:
    changed = False
    for name, value in fields.items():
        if getattr(obj, name) != value:
            setattr(obj, name, value)
            changed = True
    if changed:
        obj.save()
    return changed


def _load_plan(data: dict, directory: Path, stats: dict) -> Plan:
    for field in ("code", "name", "sponsor", "kind", "versions"):
        if field not in data:
            raise CatalogError(f"catalog entry is missing {field!r}")
    plan, created = Plan.objects.get_or_create(
        code=data["code"],
        defaults={
            "name": data["name"],
            "sponsor": data["sponsor"],
            "kind": data["kind"],
            "description": data.get("description", "").strip(),
        },
    )
    if not created and _update(
        plan,
        name=data["name"],
        sponsor=data["sponsor"],
        kind=data["kind"],
        description=data.get("description", "").strip(),
    ):
        stats["changed"] += 1
    stats["created"] += int(created)

    for t in data.get("tables", []):
        table, t_created = PlanTable.objects.get_or_create(
            plan=plan,
            code=t["code"],
            effective_date=t["effective_date"],
            defaults={
                "rows": _jsonable(t["rows"]),
                "citation": t["citation"],
                "description": t.get("description", "").strip(),
            },
        )
        stats["created"] += int(t_created)

    inherited: dict[str, dict] = {}
    for v in sorted(data["versions"], key=lambda v: v["effective_date"]):
        version, v_created = PlanVersion.objects.get_or_create(
            plan=plan,
            effective_date=v["effective_date"],
            defaults={"title": v["title"], "source_document": v.get("source_document", "")},
        )
        stats["created"] += int(v_created)
        if not v_created and _update(version, title=v["title"], source_document=v.get("source_document", "")):
            stats["changed"] += 1
        merged = dict(inherited)
        for key, entry in (v.get("provisions") or {}).items():
            if not isinstance(entry, dict) or "value" not in entry or "cite" not in entry:
                raise CatalogError(f"{plan.code} {v['effective_date']} provision {key}: needs value and cite")
            merged[key] = entry
        for key, entry in merged.items():
            value = _jsonable(entry["value"])
            try:
                validate_provision(key, value)
            except ProvisionError as exc:
                raise CatalogError(f"{plan.code} {v['effective_date']}: {exc}")
            prov, p_created = Provision.objects.get_or_create(
                version=version,
                key=key,
                defaults={
                    "value": value,
                    "citation": entry["cite"],
                    "label": SPECS[key].label,
                    "reading": entry.get("reading", "").strip(),
                },
            )
            stats["created"] += int(p_created)
            if not p_created and _update(
                prov,
                value=value,
                citation=entry["cite"],
                label=SPECS[key].label,
                reading=entry.get("reading", "").strip(),
            ):
                stats["changed"] += 1
        inherited = merged
        _load_sections(version, directory, stats)
    return plan


def _load_sections(version: PlanVersion, directory: Path, stats: dict) -> None:
    path = directory / "sections" / f"{version.plan.code}_{version.effective_date.isoformat()}.yaml"
    if not path.exists():
        return
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data.get("incomplete") and not version.notes:
        _update(version, notes=data["incomplete"])
    seen = set()
    for entry in data.get("sections", []):
        section = str(entry["section"]).strip()
        if section in seen:
            raise CatalogError(f"{path.name}: section {section} appears twice")
        seen.add(section)
        fields = {
            "title": (entry.get("title") or "").strip(),
            "text": (entry.get("text") or "").strip(),
            "original_text": (entry.get("text_zh") or "").strip(),
            "note": (entry.get("note") or "").strip(),
            "sort_key": _section_sort_key(section),
        }
        obj, created = PlanSection.objects.get_or_create(version=version, section=section, defaults=fields)
        stats["created"] += int(created)
        if not created and _update(obj, **fields):
            stats["changed"] += 1


def _load_figures(directory: Path, stats: dict) -> None:
    path = directory / "figures.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    columns = data["columns"]
    for year, values in data["rows"].items():
        for code, amount in zip(columns, values, strict=True):
            fig, created = DatedFigure.objects.get_or_create(
                code=code, year=int(year), defaults={"amount": Decimal(amount), "source": data["source"]}
            )
            stats["created"] += int(created)


def catalog_plan_files(*, directory: Path | None = None) -> list[Path]:
    """The plan files of the shipped catalog (every `*.yaml` but the dated figures), in load order."""
    directory = Path(directory or settings.PLAN_CATALOG_DIR)
    return [path for path in sorted(directory.glob("*.yaml")) if path.name != "figures.yaml"]


def catalog_codes(*, directory: Path | None = None) -> list[str]:
    """The codes of the plans of the shipped catalog, read from its files (no database needed)."""
    return [
        str(yaml.safe_load(path.read_text(encoding="utf-8"))["code"])
        for path in catalog_plan_files(directory=directory)
    ]


@transaction.atomic
def catalog_load(*, directory: Path | None = None) -> dict:
    """Load (or refresh) the shipped catalog. Running it twice changes nothing the second time."""
    directory = Path(directory or settings.PLAN_CATALOG_DIR)
    stats: dict[str, Any] = {"created": 0, "changed": 0, "plans": []}
    _load_figures(directory, stats)
    for path in catalog_plan_files(directory=directory):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        plan = _load_plan(data, directory, stats)
        stats["plans"].append(plan.code)
    return stats


# --- committee-maintained tables: dated figures, plan tables, market closures ------------------


class TableError(ApplicationError):
    """A change to a committee-maintained table the books refuse; the message says why."""


def _changes(obj: models.Model, fields: dict) -> dict:
    return {
        name: [str(getattr(obj, name)), str(value)]
        for name, value in fields.items()
        if getattr(obj, name) != value
    }


@transaction.atomic
def figure_set(
    *, code: str, year: int, amount: Decimal, source: str, actor: Actor, now: dt.datetime, reason: str = ""
) -> DatedFigure:
    """Record (or correct) an IRS dollar figure for a year. Pay already processed keeps the figure it used."""
    known = set(DatedFigure.objects.values_list("code", flat=True).distinct())
    if code not in known:
        raise TableError(f"{code!r} is not a dated figure the plans use ({', '.join(sorted(known))})")
    if not 1990 <= year <= 2100:
        raise TableError(f"year {year} is outside 1990-2100")
    if amount <= 0 or money(amount) != amount:
        raise TableError(f"the {code} figure must be a positive amount in dollars and cents, not {amount}")
    fields = {"amount": money(amount), "source": source.strip()}
    figure = DatedFigure.objects.select_for_update().filter(code=code, year=year).first()
    if figure is None:
        figure = DatedFigure.objects.create(code=code, year=year, **fields)
        changes = {"amount": [None, str(fields["amount"])]}
    else:
        changes = _changes(figure, fields)
        if not changes:
            return figure
        _update(figure, **fields)
    audit_record(
        action="figure.set",
        actor=actor,
        at=now,
        obj=figure,
        reason=reason,
        data={"code": code, "year": year, "changes": changes},
    )
    return figure


def parse_table_rows(*, text: str) -> list[list[str]]:
    """'2, 100' lines to [["2", "100"]]: a key (a number, a plan year or 'default') and a percent."""
    rows, seen, problems = [], set(), []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            problems.append(f"line {number}: write 'key, value'")
            continue
        key, value = parts
        if key != "default":
            try:
                if not Decimal(key).is_finite():
                    raise ArithmeticError
            except ArithmeticError:
                problems.append(f"line {number}: key {key!r} is not a number or 'default'")
                continue
        try:
            if not Decimal(0) <= Decimal(value) <= Decimal(100):
                raise ArithmeticError
        except ArithmeticError:
            problems.append(f"line {number}: value {value!r} is not a percentage from 0 to 100")
            continue
        if key in seen:
            problems.append(f"line {number}: key {key} appears twice")
            continue
        seen.add(key)
        rows.append([key, value])
    if problems:
        raise TableError("; ".join(problems))
    if not rows:
        raise TableError("a table needs at least one row")
    return rows


@transaction.atomic
def table_set(
    *,
    plan: Plan,
    code: str,
    effective_date: dt.date,
    rows: list[list[str]],
    citation: str,
    description: str,
    actor: Actor,
    now: dt.datetime,
    reason: str = "",
) -> PlanTable:
    """Record a plan table in force from `effective_date` (a new dated version, or a correction of one)."""
    if not PlanTable.objects.filter(plan=plan, code=code).exists():
        raise TableError(f"{plan.code} has no table {code!r}: tables are declared in the plan catalog")
    if not citation.strip():
        raise TableError("a table needs the plan section it comes from")
    fields = {"rows": rows, "citation": citation.strip(), "description": description.strip()}
    table = (
        PlanTable.objects.select_for_update()
        .filter(plan=plan, code=code, effective_date=effective_date)
        .first()
    )
    if table is None:
        table = PlanTable.objects.create(plan=plan, code=code, effective_date=effective_date, **fields)
        changes = {"rows": [None, rows]}
    else:
        changes = _changes(table, fields)
        if not changes:
            return table
        _update(table, **fields)
    audit_record(
        action="plan_table.set",
        actor=actor,
        at=now,
        obj=table,
        reason=reason,
        data={
            "plan": plan.code,
            "code": code,
            "effective_date": effective_date.isoformat(),
            "changes": changes,
        },
    )
    return table


def _last_credited() -> dt.date | None:
    # Plans only asks which Valuation Dates are already history (the crediting jobs done).
    return last_credited_date()


@transaction.atomic
def market_closure_add(*, date: dt.date, reason: str, actor: Actor, now: dt.datetime) -> MarketClosure:
    """An ad hoc NYSE closure (EDCP 1.37, RRP 1.32): that day is no Valuation Date."""
    if not reason.strip():
        raise TableError("say why the exchange is closed")
    try:
        is_session = cal.is_valuation_date(date)
    except ValueError as exc:
        raise TableError(str(exc))
    if not is_session:
        raise TableError(f"{date} is already not a Valuation Date (the exchange is closed or it is listed)")
    last = _last_credited()
    if last is not None and date <= last:
        raise TableError(
            f"Valuation Dates through {last} are credited: a closure on {date} would rewrite the books"
        )
    closure = MarketClosure.objects.create(
        date=date, reason=reason.strip(), recorded_by=None if isinstance(actor, str) else actor
    )
    audit_record(
        action="market_closure.add",
        actor=actor,
        at=now,
        obj=closure,
        reason=reason,
        data={"date": date.isoformat()},
    )
    cal.forget_closures()
    transaction.on_commit(cal.forget_closures)
    return closure


@transaction.atomic
def market_closure_remove(
    *, closure: MarketClosure, actor: Actor, now: dt.datetime, reason: str = ""
) -> None:
    last = _last_credited()
    if last is not None and closure.date <= last:
        raise TableError(f"Valuation Dates through {last} are credited: the closure on {closure.date} stays")
    audit_record(
        action="market_closure.remove",
        actor=actor,
        at=now,
        obj=closure,
        reason=reason,
        data={"date": closure.date.isoformat(), "was": closure.reason},
    )
    closure.delete()
    cal.forget_closures()
    transaction.on_commit(cal.forget_closures)


# --- dated administrative settings of a plan (the committee contact) ------------------------------------------


@transaction.atomic
def committee_contact_set(
    *,
    plan: Plan,
    effective_date: dt.date,
    name: str,
    address: list[str],
    email: str,
    actor: Actor,
    now: dt.datetime,
    reason: str = "",
) -> PlanSetting:
    """Record where claims, appeals and paper forms are sent from `effective_date` (the Committee's setting; the
    plan names the Committee, not its address). The same date again is a correction, kept in the history."""

    lines = [line.strip() for line in address if line.strip()]
    problems = []
    if not name.strip():
        problems.append("the Committee's name is needed")
    if not lines:
        problems.append("a postal address of at least one line is needed")
    elif len(lines) > 6 or any(len(line) > 100 for line in lines):
        problems.append("an address is at most 6 lines of 100 characters")
    try:
        validate_email(email.strip())
    except ValidationError:
        problems.append(f"{email.strip()!r} is not an email address")
    if problems:
        raise TableError("; ".join(problems))
    value = {"name": name.strip(), "address": lines, "email": email.strip()}
    setting = (
        PlanSetting.objects.select_for_update()
        .filter(plan=plan, key="committee_contact", effective_date=effective_date)
        .first()
    )
    before = setting.value if setting is not None else None
    if setting is not None and setting.value == value:
        return setting
    if setting is None:
        setting = PlanSetting(plan=plan, key="committee_contact", effective_date=effective_date)
    setting.value, setting.reason = value, reason.strip()[:300]
    setting.recorded_by, setting.recorded_at = actor_label(actor), now
    setting.save()
    audit_record(
        action="plan_setting.set",
        actor=actor,
        at=now,
        obj=setting,
        reason=reason,
        data={
            "plan": plan.code,
            "key": "committee_contact",
            "effective_date": effective_date.isoformat(),
            "changes": [before, value],
        },
    )
    return setting
