"""What an account holds for a payment on a date: its value less what other payments already claim.

Values come from the books as known: the positions of the last Valuation Date on or before the date
that has been credited (never an uncredited day), plus credits effective by the date still waiting
for their Valuation Date. From that we take away money already promised elsewhere and not yet out of
the positions then: queued distributions and forfeitures, and payments valued but not yet released.
Set-based: a handful of queries for any number of accounts.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Q, Sum

from books.models import DailyValuation, EntryKind, PendingTransaction
from books.services.crediting import last_credited_date
from core import valuation_calendar as cal
from core.money import ZERO, money
from payments.models import ScheduledPayment

CHUNK = 5000


def credited_through() -> dt.date | None:
    return last_credited_date()


def known_valuation_date(*, on: dt.date, credited: dt.date | None) -> dt.date | None:
    """The Valuation Date whose positions tell the value at the end of `on`, as far as it is credited."""
    try:
        last = cal.last_valuation_date(on)
    except ValueError:
        return None
    if credited is None:
        return None
    return min(last, credited)


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for i in range(0, len(ids), CHUNK):
        yield ids[i : i + CHUNK]


def available_values(
    *,
    account_ids: Iterable[int],
    on: dt.date,
    credited: dt.date | None,
    exclude_payments: Iterable[int] = (),
    only_effective: bool = False,
) -> dict[int, Decimal]:
    """account id -> value at the end of `on` less what other payments and debits already claim.

    only_effective: the value on the day itself (a test on the value at an event, EDCP 5.7): only
    debits effective by `on` count, not payments promised for later.
    """
    ids = sorted(set(account_ids))
    out: dict[int, Decimal] = defaultdict(lambda: ZERO)
    for i in ids:
        out[i] = ZERO
    last = known_valuation_date(on=on, credited=credited)
    excluded = list(exclude_payments)
    for chunk in _chunks(ids):
        if last is not None:
            for row in (
                DailyValuation.objects.filter(valuation_date=last, position__account_id__in=chunk)
                .values("position__account_id")
                .annotate(v=Sum("value"))
            ):
                out[row["position__account_id"]] += row["v"]
        reflected = Q(status=PendingTransaction.Status.PENDING)
        if last is not None:
            reflected |= Q(status=PendingTransaction.Status.APPLIED, applied_on__gt=last)
        for credit in (
            PendingTransaction.objects.filter(
                reflected, account_id__in=chunk, kind=EntryKind.CREDIT, effective_date__lte=on
            )
            .values("account_id")
            .annotate(t=Sum("amount"))
        ):
            out[credit["account_id"]] += credit["t"]
        debits = PendingTransaction.objects.filter(reflected, account_id__in=chunk, amount__lt=0).exclude(
            kind=EntryKind.CREDIT
        )
        if only_effective:
            debits = debits.filter(effective_date__lte=on)
        for debit in debits.values("account_id").annotate(t=Sum("amount")):
            out[debit["account_id"]] += debit["t"]
        if only_effective:
            continue
        promised = ScheduledPayment.objects.filter(
            account_id__in=chunk,
            status__in=ScheduledPayment.OUTSTANDING,
            pending__isnull=True,
            amount__isnull=False,
        ).exclude(share__in=ScheduledPayment.LIQUIDATING)
        if excluded:
            promised = promised.exclude(id__in=excluded)
        for promise in promised.values("account_id").annotate(t=Sum("amount")):
            out[promise["account_id"]] -= promise["t"]
    return {k: max(ZERO, money(v)) for k, v in out.items()}


def available_value(*, account_id: int, on: dt.date, credited: dt.date | None = None) -> Decimal:
    credited = credited if credited is not None else credited_through()
    return available_values(account_ids=[account_id], on=on, credited=credited)[account_id]
