"""Opening accounts and queueing money for the next Valuation Date."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from books.models import Account, EntryKind, PendingTransaction, Source
from core.dates import parse_month
from core.errors import ApplicationError
from core.money import money
from participants.models import Participation


class BooksError(ApplicationError):
    """A request the books refuse; the message says why (and cites the plan where a plan rule is behind it)."""


def parse_account_name(*, name: str) -> tuple[str, dt.date | None]:
    """'retirement_termination' -> (kind, None); 'specified_date:2028-03' -> ('specified_date', 2028-03-01)."""
    if ":" in name:
        kind, month = name.split(":", 1)
        return kind, parse_month(month)
    return name, None


def account_get_or_open(
    *, participation: Participation, kind: str, specified_month: dt.date | None = None, on: dt.date
) -> Account:
    """The account of that kind, opened on first use; refused if the plan has no such account."""
    version = participation.plan.version_on(on)
    spec = version.account_spec(kind)
    if spec is None:
        raise BooksError(
            f"{participation.plan.code} has no {kind.replace('_', ' ')} account ({version.cite('accounts')})"
        )
    if (kind == "specified_date") != (specified_month is not None):
        raise BooksError("a Specified Date Account needs its month, and only it does")
    existing = Account.objects.filter(
        participation=participation, kind=kind, specified_month=specified_month
    ).first()
    if existing:
        return existing
    count = Account.objects.filter(participation=participation, kind=kind).count()
    if count >= spec["max_count"]:
        raise BooksError(
            f"{participation.plan.code} allows at most {spec['max_count']} {spec['label']}s ({spec.get('cite', version.cite('accounts'))})"
        )
    try:
        with transaction.atomic():
            return Account.objects.create(
                participation=participation, kind=kind, specified_month=specified_month, opened_on=on
            )
    except IntegrityError:
        return Account.objects.get(participation=participation, kind=kind, specified_month=specified_month)


def pending_create(
    *,
    account: Account,
    kind: str,
    source: str,
    amount: Decimal,
    effective_date: dt.date,
    idempotency_key: str,
    actor: str,
    memo: str = "",
    cite: str = "",
    liquidate_all: bool = False,
) -> tuple[PendingTransaction, bool]:
    """Queue money for the next Valuation Date on or after `effective_date`. Idempotent by key."""
    amount = money(amount)
    if kind == EntryKind.CREDIT and amount <= 0:
        raise BooksError(f"a credit must be positive, not {amount}")
    if kind in (EntryKind.DISTRIBUTION, EntryKind.FORFEITURE) and amount > 0:
        raise BooksError(f"a {kind} takes money out: amount must be negative, not {amount}")
    existing = PendingTransaction.objects.filter(idempotency_key=idempotency_key).first()
    if existing:
        return existing, False
    pending = PendingTransaction.objects.create(
        account=account,
        kind=kind,
        source=source,
        amount=amount,
        effective_date=effective_date,
        idempotency_key=idempotency_key,
        actor=actor,
        memo=memo[:300],
        cite=cite,
        liquidate_all=liquidate_all,
        created_at=timezone.now(),
    )
    return pending, True


def credit_create(
    *,
    participation: Participation,
    account_name: str,
    source: Source,
    amount: Decimal,
    effective_date: dt.date,
    idempotency_key: str,
    actor: str,
    memo: str = "",
    cite: str = "",
) -> PendingTransaction | None:
    if money(amount) == 0:
        return None
    kind, month = parse_account_name(name=account_name)
    account = account_get_or_open(
        participation=participation, kind=kind, specified_month=month, on=effective_date
    )
    pending, _ = pending_create(
        account=account,
        kind=EntryKind.CREDIT,
        source=source,
        amount=amount,
        effective_date=effective_date,
        idempotency_key=idempotency_key,
        actor=actor,
        memo=memo,
        cite=cite,
    )
    return pending
