"""Writes to the plan catalog: loading the shipped catalog (idempotent), funds and prices."""
from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.db import transaction

from plans.models import DatedFigure, Plan, PlanSection, PlanTable, PlanVersion, Provision
from plans.provisions import SPECS, ProvisionError, validate_provision


class CatalogError(ValueError):
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


def _update(obj, **fields) -> bool:
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
        defaults={"name": data["name"], "sponsor": data["sponsor"], "kind": data["kind"],
                  "description": data.get("description", "").strip()},
    )
    if not created and _update(plan, name=data["name"], sponsor=data["sponsor"], kind=data["kind"],
                               description=data.get("description", "").strip()):
        stats["changed"] += 1
    stats["created"] += int(created)

    for t in data.get("tables", []):
        table, t_created = PlanTable.objects.get_or_create(
            plan=plan, code=t["code"], effective_date=t["effective_date"],
            defaults={"rows": _jsonable(t["rows"]), "citation": t["citation"],
                      "description": t.get("description", "").strip()},
        )
        stats["created"] += int(t_created)

    inherited: dict[str, dict] = {}
    for v in sorted(data["versions"], key=lambda v: v["effective_date"]):
        version, v_created = PlanVersion.objects.get_or_create(
            plan=plan, effective_date=v["effective_date"],
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
                version=version, key=key,
                defaults={"value": value, "citation": entry["cite"], "label": SPECS[key].label,
                          "reading": entry.get("reading", "").strip()},
            )
            stats["created"] += int(p_created)
            if not p_created and _update(prov, value=value, citation=entry["cite"], label=SPECS[key].label,
                                         reading=entry.get("reading", "").strip()):
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


@transaction.atomic
def catalog_load(*, directory: Path | None = None) -> dict:
    """Load (or refresh) the shipped catalog. Running it twice changes nothing the second time."""
    directory = Path(directory or settings.PLAN_CATALOG_DIR)
    stats = {"created": 0, "changed": 0, "plans": []}
    _load_figures(directory, stats)
    for path in sorted(directory.glob("*.yaml")):
        if path.name == "figures.yaml":
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        plan = _load_plan(data, directory, stats)
        stats["plans"].append(plan.code)
    return stats
