"""Reads of the catalog: dated figures and tables."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING

from core import memo
from plans.models import DatedFigure, FundPrice, Plan, PlanSection, PlanSetting, PlanTable
from plans.provisions import SPECS

if TYPE_CHECKING:
    from plans.models import Fund, PlanVersion


class MissingFigure(LookupError):
    pass


_overrides: contextvars.ContextVar[dict | None] = contextvars.ContextVar("figure_overrides", default=None)


@contextlib.contextmanager
def figure_overrides(*, limits: dict | None) -> Iterator[None]:
    """Use these figures instead of the recorded ones (the simulator's `limits`)."""
    token = _overrides.set(limits or {})
    try:
        yield
    finally:
        _overrides.reset(token)


def figure_for_year(*, code: str, year: int, overrides: dict | None = None) -> Decimal:
    """A dated IRS figure (e.g. '401(a)(17)') for a year; overrides (the simulator's `limits`) win."""
    overrides = overrides or _overrides.get() or {}
    if overrides and code in overrides and str(year) in overrides[code]:
        return Decimal(str(overrides[code][str(year)]))
    amount = memo.remember(("figure_for_year", code, year), lambda: _recorded_figure(code, year))
    if amount is None:
        raise MissingFigure(
            f"no {code} figure is recorded for {year}: the Committee must add it before this can run"
        )
    return amount


def _recorded_figure(code: str, year: int) -> Decimal | None:
    figure = DatedFigure.objects.filter(code=code, year=year).first()
    return figure.amount if figure is not None else None


def plan_table(*, plan: Plan, code: str, on: dt.date) -> PlanTable:
    table = (
        PlanTable.objects.filter(plan=plan, code=code, effective_date__lte=on)
        .order_by("-effective_date")
        .first()
    )
    if table is None:
        table = PlanTable.objects.filter(plan=plan, code=code).order_by("effective_date").first()
    if table is None:
        raise MissingFigure(f"{plan.code} has no table {code!r}")
    return table


def announced_percent(*, plan: Plan, code: str, year: int) -> Decimal:
    table = plan_table(plan=plan, code=code, on=dt.date(year, 12, 31))
    value = table.exact_value(year)
    if value is None:
        value = table.exact_value("default")
    if value is None:
        raise MissingFigure(
            f"{plan.code}: the Committee has not announced {code} for {year} ({table.citation})"
        )
    return value


def provisions_in_order(*, version: PlanVersion) -> list:
    """A version's provisions in the order plans/provisions.py declares them (grouped by subject)."""
    order = {key: i for i, key in enumerate(SPECS)}
    return sorted(version.provisions.all(), key=lambda p: (order.get(p.key, len(order)), p.key))


def latest_prices(*, plan: Plan, on: dt.date) -> dict[int, FundPrice | None]:
    """fund id -> the last FundPrice on or before `on`."""
    out = {}
    for fund in plan.funds.all():
        out[fund.id] = FundPrice.objects.filter(fund=fund, date__lte=on).order_by("-date").first()
    return out


def price_series(*, fund: Fund, start: dt.date, end: dt.date) -> list[tuple[dt.date, Decimal]]:
    return list(
        FundPrice.objects.filter(fund=fund, date__gte=start, date__lte=end)
        .order_by("date")
        .values_list("date", "price")
    )


def figures_by_year() -> tuple[list[str], list[tuple[int, list]]]:
    """(codes, [(year, [figure or None per code])]), newest year first."""
    figures = list(DatedFigure.objects.all())
    codes = sorted({f.code for f in figures})
    by_year: dict[int, dict[str, DatedFigure]] = {}
    for f in figures:
        by_year.setdefault(f.year, {})[f.code] = f
    return codes, [(year, [row.get(c) for c in codes]) for year, row in sorted(by_year.items(), reverse=True)]


def beneficiary_definition(*, plan: Plan, as_of: dt.date) -> PlanSection | None:
    """The plan's definition of Beneficiary: who takes when no designated beneficiary survives."""
    version = plan.version_on(as_of)
    for v in sorted(plan.versions.all(), key=lambda x: (x.pk != version.pk, -x.effective_date.toordinal())):
        found = PlanSection.objects.filter(version=v, title__iexact="Beneficiary").first()
        if found is not None:
            return found
    return None


def setting_history(*, plan: Plan, key: str) -> list[PlanSetting]:
    """Every dated value of a plan setting, newest first (corrections are in each one's history)."""
    return list(PlanSetting.objects.filter(plan=plan, key=key).order_by("-effective_date", "-id"))


def committee_contact(*, plan: Plan, as_of: dt.date) -> dict | None:
    """Where claims, appeals and paper forms are sent on `as_of`: the Committee's dated setting in force then,
    else the catalog's provision (name, address lines, email)."""
    setting = (
        PlanSetting.objects.filter(plan=plan, key="committee_contact", effective_date__lte=as_of)
        .order_by("-effective_date", "-id")
        .first()
    )
    if setting is not None:
        return dict(setting.value)
    return plan.version_on(as_of).provision("committee_contact", None)
