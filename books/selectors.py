"""Reads of the books: balances on a date, positions, history."""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.db.models import Max, Q, Sum

from books.models import Account, DailyValuation, EntryKind, PendingTransaction
from core import valuation_calendar as cal
from core.money import ZERO, money


def _last_valued_on_or_before(day: dt.date) -> dt.date | None:
    """The last Valuation Date on or before `day` that has been credited (an uncredited day has no positions yet)."""
    from books.services.crediting import last_credited_date

    try:
        last = cal.last_valuation_date(day)
    except ValueError:
        return None
    credited = last_credited_date()
    return None if credited is None else min(last, credited)


def account_values(accounts: list[Account] | None = None, *, on: dt.date, participation_ids: list[int] | None = None
                   ) -> dict[int, Decimal]:
    """account id -> whole value (vested and unvested) at the end of `on`.

    The positions at the last Valuation Date on or before `on`, plus credits effective by `on` that
    are still waiting for their Valuation Date (money received, not yet invested).
    """
    if accounts is not None:
        ids = [a.id for a in accounts]
    else:
        ids = list(Account.objects.filter(participation_id__in=participation_ids or []).values_list("id", flat=True))
    out: dict[int, Decimal] = defaultdict(lambda: ZERO)
    for i in ids:
        out[i] = ZERO
    last = _last_valued_on_or_before(on)
    if last is not None:
        latest = (DailyValuation.objects.filter(account_id__in=ids, valuation_date__lte=last)
                  .values("position_id").annotate(d=Max("valuation_date")))
        wanted = Q()
        any_rows = False
        for row in latest:
            if row["d"] == last:
                wanted |= Q(position_id=row["position_id"], valuation_date=last)
                any_rows = True
        if any_rows:
            for acc, value in DailyValuation.objects.filter(wanted).values_list("account_id", "value"):
                out[acc] += value
    waiting = (PendingTransaction.objects.filter(account_id__in=ids, kind=EntryKind.CREDIT, effective_date__lte=on)
               .filter(Q(status=PendingTransaction.Status.PENDING) | Q(applied_on__gt=last) if last else
                       Q(status=PendingTransaction.Status.PENDING))
               .values("account_id").annotate(t=Sum("amount")))
    for row in waiting:
        out[row["account_id"]] += row["t"]
    return {k: money(v) for k, v in out.items()}


def account_value(account: Account, on: dt.date) -> Decimal:
    return account_values([account], on=on)[account.id]


def positions_on(account: Account, on: dt.date) -> list[dict]:
    last = _last_valued_on_or_before(on)
    if last is None:
        return []
    rows = (DailyValuation.objects.filter(account_id=account.id, valuation_date=last)
            .select_related("fund").order_by("fund__code"))
    return [{"fund": r.fund, "units": r.units, "price": r.price, "value": r.value, "earnings": r.earnings} for r in rows]


def balance_history(account_ids: list[int], start: dt.date, end: dt.date) -> list[tuple[dt.date, Decimal]]:
    rows = (DailyValuation.objects.filter(account_id__in=account_ids, valuation_date__gte=start, valuation_date__lte=end)
            .values("valuation_date").annotate(v=Sum("value")).order_by("valuation_date"))
    return [(r["valuation_date"], r["v"]) for r in rows]
