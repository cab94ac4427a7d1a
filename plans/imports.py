"""Fund price files: one price per fund and Valuation Date. A loaded price is never changed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from core import valuation_calendar as cal
from core.imports import Applied, Importer, Problems, Row
from core.models import ImportBatch
from plans.models import Fund, FundPrice

MAX_PRICE = Decimal("1e12")


@dataclass
class PreparedPrices:
    new: list[tuple[int, dt.date, Decimal]] = field(default_factory=list)
    skipped: int = 0


class PricesImport(Importer):
    kind = ImportBatch.Kind.PRICES
    required = ("fund", "date", "price")
    optional = ("plan",)
    help = (
        "One line per fund and Valuation Date: fund (the fund code), date (YYYY-MM-DD), price (the net asset "
        "value per unit, up to 6 decimal places). Add a plan column when the same fund code is on two plans' "
        "menus. A price already loaded is skipped if it is the same and refused if it differs."
    )
    sample = (
        {"fund": "SV", "date": "2026-03-02", "price": "12.345678"},
        {"fund": "SV", "date": "2026-03-03", "price": "12.351204"},
    )

    def sample_lines(self) -> tuple[dict[str, str], ...]:
        """The sample names a fund of the catalog and its plan (plans are data: no code names one)."""
        fund = Fund.objects.select_related("plan").order_by("-is_default", "plan__code", "code").first()
        if fund is None:
            return self.sample
        return tuple({**line, "fund": fund.code, "plan": fund.plan.code} for line in self.sample)

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> PreparedPrices:
        by_code: dict[str, list[Fund]] = {}
        for known in Fund.objects.select_related("plan"):
            by_code.setdefault(known.code.upper(), []).append(known)
        valuation: dict[dt.date, str | None] = {}
        parsed: list[tuple[Row, Fund, dt.date, Decimal]] = []
        for row in rows:
            fund = self._fund(row, by_code)
            day = row.date("date", required=True)
            if day is not None:
                if day not in valuation:
                    valuation[day] = _not_a_valuation_date(day)
                if why := valuation[day]:
                    row.problem(why, "date")
            value = row.decimal("price", required=True, places=6)
            if value is not None and value <= 0:
                row.problem(f"price must be more than zero, not {value}", "price")
            elif value is not None and value >= MAX_PRICE:
                row.problem(f"price {value} is too large", "price")
            if not row.bad and fund is not None and day is not None and value is not None:
                parsed.append((row, fund, day, value))
        prepared = PreparedPrices()
        if not parsed:
            return prepared
        days = [d for _, _, d, _ in parsed]
        existing = {
            (fund_id, day): value
            for fund_id, day, value in FundPrice.objects.filter(
                fund_id__in={f.pk for _, f, _, _ in parsed},
                date__gte=min(days),
                date__lte=max(days),
            ).values_list("fund_id", "date", "price")
        }
        first_line: dict[tuple[int, dt.date], int] = {}
        for row, fund, day, value in parsed:
            key = (fund.pk, day)
            if key in first_line:
                row.problem(
                    f"repeats the price of {fund.code} on {day} already given on line {first_line[key]}"
                )
                continue
            first_line[key] = row.line
            loaded = existing.get(key)
            if loaded is None:
                prepared.new.append((fund.pk, day, value))
            elif loaded == value:
                prepared.skipped += 1
            else:
                row.problem(
                    f"{fund.plan.code} fund {fund.code} already has a price of {loaded.normalize():f} on {day}; "
                    f"this file says {value.normalize():f}. A loaded price is never changed.",
                    "price",
                )
        return prepared

    def _fund(self, row: Row, by_code: dict[str, list[Fund]]) -> Fund | None:
        code = row.text("fund", required=True)
        plan_code = row.text("plan")
        if not code:
            return None
        candidates = by_code.get(code.upper(), [])
        if plan_code:
            candidates = [f for f in candidates if f.plan.code.upper() == plan_code.upper()]
        if not candidates:
            where = f" on the {plan_code} menu" if plan_code else ""
            row.problem(f"there is no fund {code!r}{where}", "fund")
            return None
        if len(candidates) > 1:
            plans = ", ".join(sorted(f.plan.code for f in candidates))
            row.problem(f"fund {code!r} is on more than one plan's menu ({plans}): add a plan column", "fund")
            return None
        return candidates[0]

    def apply(
        self, prepared: PreparedPrices, *, batch: ImportBatch, actor, now: dt.datetime, problems: Problems
    ) -> Applied:
        source = f"import #{batch.pk} {batch.file_name}"[:200]
        FundPrice.objects.bulk_create(
            (
                FundPrice(fund_id=fund_id, date=day, price=value, loaded_at=now, source=source)
                for fund_id, day, value in prepared.new
            ),
            batch_size=5000,
        )
        return Applied(applied=len(prepared.new), skipped=prepared.skipped)


def _not_a_valuation_date(day: dt.date) -> str | None:
    try:
        if cal.is_valuation_date(day):
            return None
    except ValueError as exc:
        return str(exc)
    return (
        f"{day} is not a Valuation Date (the New York Stock Exchange is closed that day), so it has no price"
    )
