"""Opening accounts and queueing money for the next Valuation Date."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from books.models import Account, EntryKind, PendingTransaction, Source
from core.dates import parse_month
from core.errors import ApplicationError
from core.money import money
from participants.models import Participation

if TYPE_CHECKING:
    from plans.models import PlanVersion


class BooksError(ApplicationError):
    """A request the books refuse; the message says why (and cites the plan where a plan rule is behind it)."""


def parse_account_name(*, name: str) -> tuple[str, dt.date | None]:
    """'retirement_termination' -> (kind, None); 'specified_date:2028-03' -> ('specified_date', 2028-03-01)."""
    if ":" in name:
        kind, month = name.split(":", 1)
        return kind, parse_month(month)
    return name, None


def _account_spec(participation: Participation, kind: str, on: dt.date) -> tuple[PlanVersion, dict]:
    version = participation.plan.version_on(on)
    spec = version.account_spec(kind)
    if spec is None:
        raise BooksError(
            f"{participation.plan.code} has no {kind.replace('_', ' ')} account ({version.cite('accounts')})"
        )
    return version, spec


def _refuse_over_max(participation: Participation, version: PlanVersion, spec: dict, count: int) -> None:
    if count >= spec["max_count"]:
        raise BooksError(
            f"{participation.plan.code} allows at most {spec['max_count']} {spec['label']}s ({spec.get('cite', version.cite('accounts'))})"
        )


def account_get_or_open(
    *, participation: Participation, kind: str, specified_month: dt.date | None = None, on: dt.date
) -> Account:
    """The account of that kind, opened on first use; refused if the plan has no such account."""
    version, spec = _account_spec(participation, kind, on)
    if (kind == "specified_date") != (specified_month is not None):
        raise BooksError("a Specified Date Account needs its month, and only it does")
    existing = Account.objects.filter(
        participation=participation, kind=kind, specified_month=specified_month
    ).first()
    if existing:
        return existing
    count = Account.objects.filter(participation=participation, kind=kind).count()
    _refuse_over_max(participation, version, spec, count)
    try:
        with transaction.atomic():
            return Account.objects.create(
                participation=participation, kind=kind, specified_month=specified_month, opened_on=on
            )
    except IntegrityError:
        return Account.objects.get(participation=participation, kind=kind, specified_month=specified_month)


def accounts_get_or_open(*, wanted: Sequence[tuple[Participation, str, dt.date]]) -> list[Account]:
    """`account_get_or_open` for many (participation, kind, opened on) at once, none a Specified Date Account: the
    same refusals, the accounts missing opened with their history rows in a few statements. In `wanted`'s order."""
    if any(kind == "specified_date" for _, kind, _ in wanted):
        raise BooksError("a Specified Date Account needs its month, and only it does")
    specs = [_account_spec(participation, kind, on) for participation, kind, on in wanted]
    existing: dict[tuple[int, str], Account] = {}
    counts: dict[tuple[int, str], int] = defaultdict(int)
    for account in Account.objects.filter(
        participation_id__in={p.pk for p, _, _ in wanted}, kind__in={kind for _, kind, _ in wanted}
    ).order_by("id"):
        counts[(account.participation_id, account.kind)] += 1
        if account.specified_month is None:
            existing.setdefault((account.participation_id, account.kind), account)
    opened: dict[tuple[int, str], Account] = {}
    for (participation, kind, on), (version, spec) in zip(wanted, specs, strict=True):
        key = (participation.pk, kind)
        if key in existing or key in opened:
            continue
        _refuse_over_max(participation, version, spec, counts[key])
        opened[key] = Account(participation=participation, kind=kind, specified_month=None, opened_on=on)
    if opened:
        try:
            with transaction.atomic():
                bulk_create_with_history(list(opened.values()), Account, batch_size=2000)
        except (
            IntegrityError
        ):  # another process opened one meanwhile: one by one, as account_get_or_open does
            for key, account in opened.items():
                opened[key] = account_get_or_open(
                    participation=account.participation, kind=account.kind, on=account.opened_on
                )
    found = existing | opened
    return [found[(participation.pk, kind)] for participation, kind, _ in wanted]


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
