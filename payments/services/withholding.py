"""Withholding on benefit payments (EDCP 8.3, RRP 4.03, BRP 10.1), from dated committee-maintained rates.

NQDC benefits are supplemental wages paid through payroll: federal income tax at the flat
supplemental rate, and at the higher mandatory rate on the part of the year's supplemental wages
above the threshold ($1,000,000); a state rate per the payee's state (the "*" row for any other).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db.models import Sum
from django.utils import timezone

from core.audit import actor_label, audit_record
from core.errors import ApplicationError
from core.money import HUNDRED, ZERO, money
from payments.models import ScheduledPayment, WithholdingRate

if TYPE_CHECKING:
    from core.audit import Actor

K = WithholdingRate.Kind


class WithholdingError(ApplicationError):
    pass


@dataclass(frozen=True)
class Rates:
    supplemental: Decimal
    mandatory: Decimal
    threshold: Decimal
    state: dict[str, Decimal]
    state_default: Decimal

    def state_rate(self, code: str) -> Decimal:
        return self.state.get(code, self.state_default)


# Shipped defaults (IRS Pub. 15 supplemental wage rates; Virginia's supplemental rate); the migration
# 0002 records them as rows the Committee maintains; these apply only while the table is empty.
DEFAULT_RATES = [
    # kind, jurisdiction, rate, threshold, effective, source
    (
        K.FEDERAL_SUPPLEMENTAL,
        "",
        "25.0000",
        None,
        "2005-01-01",
        "IRS Pub. 15: optional flat rate on supplemental wages",
    ),
    (
        K.FEDERAL_MANDATORY,
        "",
        "35.0000",
        "1000000.00",
        "2005-01-01",
        "IRS Pub. 15: supplemental wages over $1 million",
    ),
    (
        K.FEDERAL_MANDATORY,
        "",
        "39.6000",
        "1000000.00",
        "2013-01-01",
        "IRS Pub. 15 (2013): supplemental wages over $1 million",
    ),
    (
        K.FEDERAL_SUPPLEMENTAL,
        "",
        "22.0000",
        None,
        "2018-01-01",
        "IRS Pub. 15 (2018, TCJA): flat rate on supplemental wages",
    ),
    (
        K.FEDERAL_MANDATORY,
        "",
        "37.0000",
        "1000000.00",
        "2018-01-01",
        "IRS Pub. 15 (2018, TCJA): supplemental wages over $1 million",
    ),
    (K.STATE, "VA", "5.7500", None, "2005-01-01", "Virginia supplemental wage rate (committee default)"),
    (K.STATE, "*", "0.0000", None, "2005-01-01", "Any other state: set by the Committee"),
]


def _default_rows() -> list[WithholdingRate]:
    return [
        WithholdingRate(
            kind=k,
            jurisdiction=j,
            rate=Decimal(r),
            threshold=Decimal(t) if t else None,
            effective_date=dt.date.fromisoformat(d),
            source=src,
            recorded_by="shipped default",
            recorded_at=dt.datetime(2005, 1, 1, tzinfo=dt.UTC),
        )
        for k, j, r, t, d, src in DEFAULT_RATES
    ]


def rates_on(*, day: dt.date) -> Rates:
    return _rates_in(rows=_rate_rows(through=day), day=day)


def _rate_rows(*, through: dt.date) -> list[WithholdingRate]:
    """Every rate effective on or before `through` (the built-in defaults while none is recorded): one read
    for all the release dates of a batch of payments."""
    rows = list(WithholdingRate.objects.filter(effective_date__lte=through))
    if not rows and not WithholdingRate.objects.exists():
        rows = [r for r in _default_rows() if r.effective_date <= through]
    return rows


def _rates_in(*, rows: list[WithholdingRate], day: dt.date) -> Rates:
    """The rates in force on `day`: for each kind and jurisdiction, the latest of `rows` effective by then."""
    rows = [r for r in rows if r.effective_date <= day]
    rows.sort(key=lambda r: (r.kind, r.jurisdiction, r.effective_date), reverse=True)
    latest: dict[tuple[str, str], WithholdingRate] = {}
    for r in rows:
        latest.setdefault((r.kind, r.jurisdiction), r)
    sup = latest.get((K.FEDERAL_SUPPLEMENTAL, ""))
    man = latest.get((K.FEDERAL_MANDATORY, ""))
    if sup is None or man is None:
        raise WithholdingError(
            f"no federal withholding rates are in force on {day}: the Committee must record them"
        )
    states = {j: r.rate for (k, j), r in latest.items() if k == K.STATE and j != "*"}
    default = latest.get((K.STATE, "*"))
    return Rates(
        supplemental=sup.rate,
        mandatory=man.rate,
        threshold=man.threshold or Decimal("1000000.00"),
        state=states,
        state_default=default.rate if default else ZERO,
    )


def withholding_rate_record(
    *,
    kind: str,
    rate: Decimal,
    effective_date: dt.date,
    actor: Actor,
    jurisdiction: str = "",
    threshold: Decimal | None = None,
    source: str = "",
    now: dt.datetime | None = None,
) -> WithholdingRate:
    if kind not in K.values:
        raise WithholdingError(f"unknown withholding kind {kind!r}")
    if not (ZERO <= rate <= HUNDRED):
        raise WithholdingError(f"a rate is a percent from 0 to 100, not {rate}")
    if kind == K.STATE and not jurisdiction:
        raise WithholdingError("a state rate needs its state code (or * for any other state)")
    if kind == K.FEDERAL_MANDATORY and (threshold is None or threshold <= 0):
        raise WithholdingError(
            "the mandatory federal rate needs the threshold of supplemental wages above which it applies"
        )
    now = now or timezone.now()
    row, _ = WithholdingRate.objects.update_or_create(
        kind=kind,
        jurisdiction=jurisdiction.upper() if kind == K.STATE else "",
        effective_date=effective_date,
        defaults={
            "rate": rate,
            "threshold": threshold,
            "source": source,
            "recorded_by": actor_label(actor),
            "recorded_at": now,
        },
    )
    audit_record(
        action="withholding.rate",
        actor=actor,
        at=now,
        obj=row,
        data={
            "kind": kind,
            "rate": str(rate),
            "jurisdiction": jurisdiction,
            "from": effective_date.isoformat(),
        },
    )
    return row


def withholding_apply(*, payments: list[ScheduledPayment], exclude_ids: set[int] | None = None) -> None:
    """Fill federal/state withholding and net on each payment (in memory), in release order per person.

    The year's supplemental wages so far are the gross of the person's other payments released or
    paid (or in a run) in the same calendar year.
    """
    if not payments:
        return
    people = {p.participation.person_id for p in payments}
    years = {p.release_date.year for p in payments}
    ids = {p.id for p in payments} | (exclude_ids or set())
    ytd: dict[tuple[int, int], Decimal] = defaultdict(lambda: ZERO)
    for row in (
        ScheduledPayment.objects.filter(
            participation__person_id__in=people,
            release_date__year__in=years,
            status__in=[
                ScheduledPayment.Status.IN_RUN,
                ScheduledPayment.Status.APPROVED,
                ScheduledPayment.Status.RELEASED,
                ScheduledPayment.Status.PAID,
            ],
            amount__isnull=False,
        )
        .exclude(id__in=ids)
        .values("participation__person_id", "release_date__year")
        .annotate(t=Sum("amount"))
    ):
        ytd[(row["participation__person_id"], row["release_date__year"])] += row["t"]
    rate_rows = _rate_rows(through=max(p.release_date for p in payments))
    rates_cache: dict[dt.date, Rates] = {}
    for p in sorted(payments, key=lambda x: (x.release_date, x.id or 0)):
        gross = p.amount or ZERO
        rates = rates_cache.get(p.release_date) or rates_cache.setdefault(
            p.release_date, _rates_in(rows=rate_rows, day=p.release_date)
        )
        key = (p.participation.person_id, p.release_date.year)
        before = ytd[key]
        under = max(ZERO, min(gross, rates.threshold - before))
        over = gross - under
        federal = money(under * rates.supplemental / HUNDRED) + money(over * rates.mandatory / HUNDRED)
        state_code = p.participation.person.state or ""
        state_rate = rates.state_rate(state_code)
        state = money(gross * state_rate / HUNDRED)
        p.federal_withholding, p.state_withholding, p.state = federal, state, state_code
        p.net_amount = gross - federal - state
        p.withholding_basis = (
            f"federal {rates.supplemental}% on {under:,.2f}"
            + (
                f" and {rates.mandatory}% on {over:,.2f} above {rates.threshold:,.2f} of the year's supplemental wages"
                if over
                else ""
            )
            + f"; state {state_code or '-'} {state_rate}%"
        )[:300]
        ytd[key] = before + gross
