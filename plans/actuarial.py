"""Actuarial equivalence for the BRP (4.2(c)): annuity factors on a mortality table and interest basis.

Conventions (FACTS.md part 6): benefits are annual amounts paid monthly in advance (annuity-due,
1/12 each month); survival between integer ages follows the uniform distribution of deaths (UDD);
the life is aged by whole years at commencement (age last birthday) plus completed months; two lives
are independent. Interest is either one flat rate or the 417(e)(3) segment rates for the lookback month:
a payment due less than 5 years after the annuity starting date takes the first rate, from 5 up to 20 years
the second, from 20 years the third (RULES.md "BRP readings"; the boundaries are a parameter of the basis,
`segment_boundaries_years` of the `actuarial_basis` provision); each payment at time t (years) is discounted
by (1 + i(t))^-t.
The shipped default basis (the BRP `actuarial_basis` provision) is the IRS 417(e) unisex table of the
commencement year and the segment rates of the month before commencement; when the year or month
is not in the catalog, the latest earlier one is used and the quote says so.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Required, TypedDict

from django.conf import settings

from core import memo
from core.money import money

MONTHS = 12
MAX_AGE = 121
# Annuity factors are pure functions of (table, life, basis): kept per process, so a batch that asks for the
# same age and basis again (a conversion's benefits in pay, a liability run) computes each once.
FACTOR_CACHE = 8192


def _data_dir() -> Path:
    return Path(settings.PLAN_CATALOG_DIR) / "actuarial"


@dataclass(frozen=True)
class MortalityTable:
    name: str
    qx: tuple[float, ...]  # index = age; q = 1 at the last age

    def q(self, age: int) -> float:
        return 1.0 if age >= len(self.qx) else self.qx[age]

    def survival(self, age: int, months: int, start_month: int = 0) -> float:
        """t p x for a life aged `age` years and `start_month` months, over `months` months (UDD)."""
        p = 1.0
        position = start_month
        remaining = months
        a = age
        # survive to the end of the current year of age, then whole years, then the final fraction
        while remaining > 0:
            q = self.q(a)
            step = min(remaining, MONTHS - position)
            # UDD: probability of surviving from fraction s to s + step/12 within the year
            s0, s1 = position / MONTHS, (position + step) / MONTHS
            alive_start = 1.0 - s0 * q
            if alive_start <= 0:
                return 0.0
            p *= (1.0 - s1 * q) / alive_start
            remaining -= step
            position += step
            if position == MONTHS:
                position = 0
                a += 1
        return max(p, 0.0)


@functools.lru_cache(maxsize=16)
def mortality_table(year: int) -> tuple[MortalityTable, str]:
    """The IRS 417(e)(3) unisex table for a distribution year (else the latest earlier one, noted)."""
    available = sorted(int(p.stem.rsplit("_", 1)[1]) for p in _data_dir().glob("irs_417e_unisex_*.csv"))
    usable = [y for y in available if y <= year] or available[:1]
    chosen = usable[-1]
    note = "" if chosen == year else f"the {year} table is not in the catalog; the {chosen} table is used"
    rows: dict[int, float] = {}
    with open(_data_dir() / f"irs_417e_unisex_{chosen}.csv", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or line.startswith("age"):
                continue
            age, q = line.strip().split(",")[:2]
            rows[int(age)] = float(q)
    qx = tuple(rows.get(a, 1.0) for a in range(max(rows) + 1))
    return MortalityTable(f"IRS 417(e) unisex {chosen}", qx), note


DEFAULT_SEGMENT_BOUNDARIES = (5, 20)


@dataclass(frozen=True)
class InterestBasis:
    """A flat rate, or three segment rates (percent): the first for payments due less than `boundaries[0]` years
    after the annuity starting date, the second from `boundaries[0]` up to `boundaries[1]` years, the third from
    `boundaries[1]` years (IRC 430(h)(2)(B), "the 5-year period beginning on" the annuity starting date)."""

    segments: tuple[float, float, float]
    label: str
    boundaries: tuple[float, float] = DEFAULT_SEGMENT_BOUNDARIES

    @classmethod
    def flat(cls, percent: float) -> InterestBasis:
        return cls((percent, percent, percent), f"{percent}% flat")

    def rate(self, years: float) -> float:
        first, second = self.boundaries
        return self.segments[0] if years < first else self.segments[1] if years < second else self.segments[2]

    def discount(self, years: float) -> float:
        return (1.0 + self.rate(years) / 100.0) ** (-years)


@functools.lru_cache(maxsize=1)
def _segment_rows() -> dict[dt.date, tuple[float, float, float]]:
    out = {}
    with open(_data_dir() / "segment_rates_417e_2025_2026.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(line for line in fh if not line.startswith("#")):
            month = dt.datetime.strptime(row["month"], "%b-%y").replace(tzinfo=dt.UTC).date()
            out[month] = (
                float(row["first_segment"]),
                float(row["second_segment"]),
                float(row["third_segment"]),
            )
    return out


def segment_rates_for(
    commencement: dt.date,
    lookback_months: int = 1,
    boundaries: tuple[float, float] | list[float] = DEFAULT_SEGMENT_BOUNDARIES,
) -> tuple[InterestBasis, str]:
    """The segment rates of the month `lookback_months` before the commencement month, with the segment boundaries
    (years) of the basis."""
    first, second = (float(b) for b in boundaries)
    if not 0 < first < second:
        raise ValueError(f"segment boundaries {boundaries!r} must rise from more than 0 years")
    month = commencement.replace(day=1)
    for _ in range(lookback_months):
        month = (month - dt.timedelta(days=1)).replace(day=1)
    rows = _segment_rows()
    usable = [m for m in rows if m <= month] or sorted(rows)[:1]
    chosen = max(usable)
    note = (
        ""
        if chosen == month
        else f"segment rates for {month:%B %Y} are not in the catalog; {chosen:%B %Y} is used"
    )
    label = f"417(e)(3) segment rates of {chosen:%B %Y} (boundaries {first:g} and {second:g} years)"
    return InterestBasis(rows[chosen], label, (first, second)), note


@dataclass(frozen=True)
class Life:
    age: int
    months: int = 0

    @classmethod
    def on(cls, birth: dt.date, day: dt.date) -> Life:
        months = (day.year - birth.year) * 12 + (day.month - birth.month) - (1 if day.day < birth.day else 0)
        return cls(months // 12, months % 12)


def annuity_life(table: MortalityTable, life: Life, basis: InterestBasis) -> float:
    """ä(12) x: 1 a year paid monthly in advance for life (kept for the run inside core.memo.run_memo)."""
    return memo.remember(("annuity_life", table, life, basis), lambda: _annuity_life(table, life, basis))


@functools.lru_cache(maxsize=FACTOR_CACHE)
def _annuity_life(table: MortalityTable, life: Life, basis: InterestBasis) -> float:
    total = 0.0
    for m in range((MAX_AGE - life.age) * MONTHS):
        p = table.survival(life.age, m, life.months)
        if p <= 0:
            break
        total += basis.discount(m / MONTHS) * p / MONTHS
    return total


def annuity_joint(table: MortalityTable, x: Life, y: Life, basis: InterestBasis) -> float:
    """ä(12) xy: payable while both live (kept for the run inside core.memo.run_memo)."""
    return memo.remember(("annuity_joint", table, x, y, basis), lambda: _annuity_joint(table, x, y, basis))


@functools.lru_cache(maxsize=FACTOR_CACHE)
def _annuity_joint(table: MortalityTable, x: Life, y: Life, basis: InterestBasis) -> float:
    total = 0.0
    for m in range((MAX_AGE - min(x.age, y.age)) * MONTHS):
        p = table.survival(x.age, m, x.months) * table.survival(y.age, m, y.months)
        if p <= 0:
            break
        total += basis.discount(m / MONTHS) * p / MONTHS
    return total


def annuity_certain_and_life(
    table: MortalityTable, life: Life, basis: InterestBasis, certain_months: int
) -> float:
    """ä(12) for life with `certain_months` payments certain (kept for the run inside core.memo.run_memo)."""
    return memo.remember(
        ("annuity_certain_and_life", table, life, basis, certain_months),
        lambda: _annuity_certain_and_life(table, life, basis, certain_months),
    )


@functools.lru_cache(maxsize=FACTOR_CACHE)
def _annuity_certain_and_life(
    table: MortalityTable, life: Life, basis: InterestBasis, certain_months: int
) -> float:
    total = 0.0
    for m in range((MAX_AGE - life.age) * MONTHS):
        p = 1.0 if m < certain_months else table.survival(life.age, m, life.months)
        if p <= 0:
            break
        total += basis.discount(m / MONTHS) * p / MONTHS
    return total


@dataclass
class FormQuote:
    form: str
    annual: Decimal
    monthly: Decimal
    factor: float
    survivor_percent: int = 0
    certain_months: int = 0
    notes: list[str] = field(default_factory=list)


class FormDetail(TypedDict, total=False):
    label: Required[str]
    survivor: int  # the survivor's percentage of a joint and survivor annuity
    certain: int  # the payments certain of a period certain and continuous annuity


FORM_DETAILS: dict[str, FormDetail] = {
    "single_life": {"label": "Single Life Annuity"},
    "qjsa": {"label": "Qualified Joint and Survivor Annuity (50% to the Spouse)", "survivor": 50},
    "js_100": {"label": "Joint and 100% Survivor Annuity", "survivor": 100},
    "js_75": {"label": "Joint and 75% Survivor Annuity", "survivor": 75},
    "js_50": {"label": "Joint and 50% Survivor Annuity", "survivor": 50},
    "period_certain_60": {"label": "Period Certain and Continuous, 60 payments", "certain": 60},
    "period_certain_120": {"label": "Period Certain and Continuous, 120 payments", "certain": 120},
    "period_certain_180": {"label": "Period Certain and Continuous, 180 payments", "certain": 180},
    "lump_sum": {"label": "Single lump sum"},
}


def convert(
    *,
    single_life_annual: Decimal,
    form: str,
    table: MortalityTable,
    basis: InterestBasis,
    participant: Life,
    spouse: Life | None = None,
) -> FormQuote:
    """The benefit in `form` actuarially equivalent to a single life annuity (BRP 4.1, 4.2(c))."""

    if form not in FORM_DETAILS:
        raise ValueError(f"{form!r} is not a BRP form of benefit")
    a_x = annuity_life(table, participant, basis)
    detail = FORM_DETAILS[form]
    if form == "single_life":
        factor = a_x
    elif form == "lump_sum":
        value = money(single_life_annual * Decimal(str(a_x)))
        return FormQuote(form, value, value, a_x)
    elif "survivor" in detail:
        if spouse is None:
            raise ValueError(f"{detail['label']} needs the survivor's date of birth")
        f = detail["survivor"] / 100
        factor = a_x + f * (
            annuity_life(table, spouse, basis) - annuity_joint(table, participant, spouse, basis)
        )
    else:
        factor = annuity_certain_and_life(table, participant, basis, detail["certain"])
    annual = money(single_life_annual * Decimal(str(a_x / factor)))
    return FormQuote(
        form, annual, money(annual / 12), factor, detail.get("survivor", 0), detail.get("certain", 0)
    )
