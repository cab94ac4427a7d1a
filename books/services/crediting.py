"""Valuation-date crediting (EDCP 7.2, RRP 3.05(c)): the daily batch job of the books.

For one Valuation Date D, in order, each phase committed on its own and safe to repeat:
  1. exchanges: investment elections for existing balances effective on D (EDCP 7.4)
  2. credits: pending credits effective on or before D, split by the allocation in force, bought at D's price
  3. debits: pending distributions and forfeitures, sold at D's price
  4. valuation: one DailyValuation row per position: units, price, value and the earnings of the day
The hot statements (2 and 4) are set-based SQL on PostgreSQL; the embedded SQLite demo runs the same
rules through the ORM (`_credits_python`, `_valuations_python`), and a test proves both agree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Sum
from django.utils import timezone

from books.models import Account, DailyValuation, EntryKind, LedgerEntry, PendingTransaction, Position, Source
from books.selectors import last_credited_date  # noqa: F401 (re-exported: callers import it from here)
from core import valuation_calendar as cal
from core.errors import ApplicationError
from core.jobs import job_item, job_locked_claim, job_progress
from core.models import JobRun
from core.money import ZERO, money, split_by_percent
from core.money import units as q_units
from elections.models import InvestmentElection, Status
from plans.models import Fund, FundPrice

JOB_KIND = "crediting"
PHASES = ("exchanges", "credits", "debits", "valuation")


class CreditingRefused(ApplicationError):
    """The date cannot be credited yet (missing prices, an earlier date not credited)."""


# --- reads shared by both paths ---------------------------------------------------------------


def _prices_on(day: dt.date) -> dict[int, Decimal]:
    return dict(FundPrice.objects.filter(date=day).values_list("fund_id", "price"))


_MISSING_PRICES_SQL = """
SELECT f.id FROM plans_fund f
WHERE NOT EXISTS (SELECT 1 FROM plans_fundprice pr WHERE pr.fund_id = f.id AND pr.date = %(day)s)
  AND (EXISTS (SELECT 1 FROM books_position p WHERE p.fund_id = f.id)
       OR (f.is_default AND EXISTS (SELECT 1 FROM books_pendingtransaction t
                                    JOIN books_account a ON a.id = t.account_id
                                    JOIN participants_participation pa ON pa.id = a.participation_id
                                    WHERE t.status = 'pending' AND t.effective_date <= %(day)s AND pa.plan_id = f.plan_id))
       OR EXISTS (SELECT 1 FROM elections_investmentelectionline l
                  JOIN elections_investmentelection e ON e.id = l.election_id
                  WHERE l.fund_id = f.id AND e.status = 'accepted' AND e.effective_on <= %(day)s))
"""

# What the job needs to know before it works. On PostgreSQL it is read in the statement that takes
# the lock and claims the date (core.jobs.job_locked_claim), with the funds missing a price.
_WORK_SQL = """
SELECT
  (SELECT key FROM core_jobrun WHERE kind = 'crediting' AND status = 'done' AND key < %(key)s
   ORDER BY key DESC LIMIT 1) AS last_key,
  EXISTS (SELECT 1 FROM books_pendingtransaction t WHERE t.status = 'pending' AND t.effective_date <= %(day)s
          AND t.kind = 'credit') AS has_credits,
  EXISTS (SELECT 1 FROM elections_investmentelection e WHERE e.status = 'accepted' AND e.effective_on <= %(day)s
          AND e.rebalanced_on IS NULL AND e.applies_to IN ('existing', 'both')) AS has_exchanges,
  EXISTS (SELECT 1 FROM books_pendingtransaction t WHERE t.status = 'pending' AND t.effective_date <= %(day)s
          AND t.kind <> 'credit') AS has_debits,
  EXISTS (SELECT 1 FROM books_dailyvaluation v WHERE v.valuation_date = %(day)s) AS resuming
"""
_WORK_WITH_PRICES_SQL = _WORK_SQL.rstrip() + f",\n  ARRAY({_MISSING_PRICES_SQL}) AS missing_prices\n"
# A worker that held the lock just before us may not have committed its finish when our read was
# taken: wait for that row, then read again, before refusing a date.
_PREVIOUS_RUN_SETTLED_SQL = "SELECT 1 FROM core_jobrun WHERE kind = 'crediting' AND key = %(key)s FOR SHARE"


class _Work(NamedTuple):
    last_key: str | None
    has_credits: bool
    has_exchanges: bool
    has_debits: bool
    resuming: bool
    missing_prices: list[int]


def _work_now(day: dt.date) -> _Work:
    params: dict[str, dt.date | str] = {"day": day, "key": day.isoformat()}
    postgresql = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(_WORK_WITH_PRICES_SQL if postgresql else _WORK_SQL, params)
        row = tuple(cursor.fetchone())
        if not postgresql:
            cursor.execute(_MISSING_PRICES_SQL, params)
            row += ([r[0] for r in cursor.fetchall()],)
    return _Work(*row)


def _funds(ids: list[int]) -> list[Fund]:
    return list(Fund.objects.filter(id__in=ids).select_related("plan")) if ids else []


def allocation_in_force(*, participation_id: int, plan_id: int, day: dt.date) -> list[tuple[int, int]]:
    """[(fund_id, percent)] for future credits on `day`; the plan's default fund without an election (EDCP 7.5)."""
    election = (
        InvestmentElection.objects.filter(
            participation_id=participation_id,
            status=Status.ACCEPTED,
            applies_to__in=[InvestmentElection.AppliesTo.FUTURE, InvestmentElection.AppliesTo.BOTH],
            effective_on__lte=day,
        )
        .order_by("-effective_on", "-submitted_at", "-id")
        .first()
    )
    if election is not None:
        return [(line.fund_id, line.percent) for line in election.lines.order_by("fund_id")]
    default = Fund.objects.filter(plan_id=plan_id, is_default=True).values_list("id", flat=True).first()
    if default is None:
        raise CreditingRefused(f"plan {plan_id} has no default fund (EDCP 7.5 / RRP 3.05(b))")
    return [(default, 100)]


def _position(account_id: int, fund_id: int) -> Position:
    return Position.objects.get_or_create(account_id=account_id, fund_id=fund_id)[0]


def _units_now(account_ids: list[int], day: dt.date) -> dict[int, dict[int, Decimal]]:
    """account -> position -> units held on `day` after the entries already posted for `day`."""
    prev = cal.previous_valuation_date(day)
    out: dict[int, dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for pos_id, acc_id, u in DailyValuation.objects.filter(
        valuation_date=prev, account_id__in=account_ids
    ).values_list("position_id", "account_id", "units"):
        out[acc_id][pos_id] += u
    for pos_id, acc_id, u in LedgerEntry.objects.filter(
        valuation_date=day, account_id__in=account_ids
    ).values_list("position_id", "account_id", "units"):
        out[acc_id][pos_id] += u
    return out


def _post(
    *,
    position: Position,
    kind: str,
    source: str,
    effective_date: dt.date,
    day: dt.date,
    units: Decimal,
    price: Decimal,
    amount: Decimal,
    key: str,
    actor: str,
    pending: PendingTransaction | None = None,
    memo: str = "",
) -> LedgerEntry:
    return LedgerEntry.objects.create(
        position=position,
        account_id=position.account_id,
        kind=kind,
        source=source,
        effective_date=effective_date,
        valuation_date=day,
        units=units,
        price=price,
        amount=amount,
        pending=pending,
        idempotency_key=key,
        actor=actor,
        posted_at=timezone.now(),
        memo=memo[:300],
    )


# --- phase 1: exchanges -------------------------------------------------------------------------


def _exchanges(day: dt.date, prices: dict[int, Decimal], actor: str) -> int:
    """Investment elections for existing balances (EDCP 7.4): sell every position, buy the new mix."""
    elections = list(
        InvestmentElection.objects.filter(
            status=Status.ACCEPTED,
            effective_on__lte=day,
            rebalanced_on__isnull=True,
            applies_to__in=[InvestmentElection.AppliesTo.EXISTING, InvestmentElection.AppliesTo.BOTH],
        ).order_by("effective_on", "submitted_at", "id")
    )
    done = 0
    for election in elections:
        with transaction.atomic():
            locked = InvestmentElection.objects.select_for_update().get(pk=election.pk)
            if locked.rebalanced_on is not None:
                continue
            accounts = list(Account.objects.filter(participation_id=election.participation_id))
            held = _units_now([a.id for a in accounts], day)
            lines = [(line.fund_id, line.percent) for line in election.lines.order_by("fund_id")]
            for account in accounts:
                positions = {p.id: p for p in Position.objects.filter(account=account)}
                total = ZERO
                for pos_id, u in held.get(account.id, {}).items():
                    if u == 0:
                        continue
                    pos = positions[pos_id]
                    value = money(u * prices[pos.fund_id])
                    total += value
                    _post(
                        position=pos,
                        kind=EntryKind.EXCHANGE,
                        source=Source.EXCHANGE,
                        effective_date=day,
                        day=day,
                        units=-u,
                        price=prices[pos.fund_id],
                        amount=-value,
                        key=f"exchange:{election.pk}:{account.pk}:out:{pos.fund_id}",
                        actor=actor,
                        memo=f"Exchange out, investment election {election.pk}",
                    )
                if total == 0:
                    continue
                for fund_id, part in split_by_percent(total, lines):
                    pos = _position(account.id, fund_id)
                    _post(
                        position=pos,
                        kind=EntryKind.EXCHANGE,
                        source=Source.EXCHANGE,
                        effective_date=day,
                        day=day,
                        units=q_units(part / prices[fund_id]),
                        price=prices[fund_id],
                        amount=part,
                        key=f"exchange:{election.pk}:{account.pk}:in:{fund_id}",
                        actor=actor,
                        memo=f"Exchange in, investment election {election.pk}",
                    )
            locked.rebalanced_on = day
            locked.save(update_fields=["rebalanced_on"])
            done += 1
    return done


# --- phase 2: credits ---------------------------------------------------------------------------

# Measured by `manage.py bench crediting` (operations/bench/crediting.py) on a payday for every participant;
# its `backend_cpu_by_statement` splits the job's backend CPU into this statement, the valuation and the rest.
# Tried and not kept (issue 9 section 5, 20,000 participants, backend CPU; the payday is at 2.6-3.2x the
# reference): the UPDATE joining account and participation itself (no gain); books_ledgerentry's
# idempotency index COLLATE "C" (no gain); `jit = off` for the job (no difference); the ledger INSERT
# without ON CONFLICT (0.05-0.1 s, within the noise: not worth trading a skipped duplicate for an error);
# the valuation written as prev LEFT JOIN flows UNION ALL the new positions instead of the FULL JOIN (no
# gain). Measured in rolled-back transactions, those figures miss what fires at commit: the deferred foreign
# key of ledger.reverses_id queued one event per entry (0.07-0.14 s of 40,000 credits), now checked by the
# statement-level trigger (books/migrations/0011). One statement posting the credits and writing the valuation
# from their RETURNING rows (no re-read of the day's entries): 3.99 s against 3.81 s, no gain (2026-12-03).
# Every index of books_ledgerentry and books_pendingtransaction has a reader (pending_id:
# taxes/services/fica.py; (account, status), applied rows too: books/selectors.py,
# payments/services/values.py), so none was dropped. The pending table's frozen-when-applied trigger has
# been an AFTER trigger WHEN (OLD.status = 'applied') since books/migrations/0007: no PL/pgSQL call per row.
# 2026-12-03 (load average 8-11 on the two cores), 40,000 credits: the job's backend CPU is 2.9-3.2 s
# against the reference's 0.9-1.2 s; this statement 1.3-1.6 s, the valuation after it 1.35-1.5 s (1.33-1.39 s
# on an ordinary day, when the reference took 0.97-1.08 s), the rest 0.02-0.04 s. Inside this statement,
# measured apart in rolled-back transactions (medians of 3): all of it 1.13 s; with the pending rows only
# SELECTed (no UPDATE) 0.83 s; that and no ON CONFLICT 0.71 s. The ledger INSERT (6 btree indexes a row,
# the statement-level reference check) is then most of what is left, but not through its indexes: with the
# valuation_date, position_id and pending_id indexes dropped inside the transaction this statement took as
# long (1.38-1.45 s against 1.36 s; README "Crediting at 100,000 participants" has the breakdown and profile).
# So removing the pending -> applied UPDATE is worth about 0.3 s of some 3 s: needed for 2x, not enough
# alone (about 2.3-2.5x). And it must not be done naively: pending credits are found through
# pending_due_by_date (WHERE status = 'pending'), which applied rows leave because the UPDATE changes
# status. With "applied" derived from the ledger (an anti-join on ledger.pending_id) or from a marker
# table, no credit would ever leave that index, and every day (ordinary days too: the has_credits check
# and _MISSING_PRICES_SQL read it) would scan every credit ever due: some 5 million a year at 100,000
# participants. The bench's books hold one day of history, so it would show a gain there. A bounded
# form needs a structure that shrinks without an UPDATE, e.g. a narrow due-queue (pending_id,
# effective_date) written with the pending transaction and DELETEd when applied (a DELETE writes no index
# entry), with pending/applied for the ~30 readers of `status` derived through one manager method.
# 2026-12-04, 20,000, quiet machine: with the pending UPDATE, the ledger's four secondary indexes and the
# reference check all removed at once the payday is still 1.93x the reference (README "Benchmarks").
# Later that day (five fresh copies each): wal_compression = lz4 for the job 2.68x against 2.66x, no gain; the pending
# UPDATE made HOT and the ledger's position_id and pending_id indexes dropped, together, 2.37x (README "Benchmarks").
_CREDITS_SQL = """
WITH todo AS (
    -- Marked applied first: the row lock re-checks `pending` against a concurrent cancel, and the
    -- rows come back to be posted, so the table is read once.
    UPDATE books_pendingtransaction t SET status = 'applied', applied_on = %(day)s, applied_amount = t.amount
    WHERE t.status = 'pending' AND t.kind = 'credit' AND t.effective_date <= %(day)s
    RETURNING t.id, t.account_id, t.amount, t.effective_date, t.source, t.idempotency_key, t.memo
),
todo_plan AS (
    SELECT ap.id, ap.account_id, ap.amount, a.participation_id, pa.plan_id
    FROM todo ap
    JOIN books_account a ON a.id = ap.account_id
    JOIN participants_participation pa ON pa.id = a.participation_id
),
elected AS (
    SELECT DISTINCT ON (e.participation_id) e.participation_id, e.id AS election_id
    FROM elections_investmentelection e
    WHERE e.status = 'accepted' AND e.applies_to IN ('future', 'both') AND e.effective_on <= %(day)s
      AND e.participation_id IN (SELECT participation_id FROM todo_plan)
    ORDER BY e.participation_id, e.effective_on DESC, e.submitted_at DESC, e.id DESC
),
parts AS (
    -- no election: all of it into the plan's default fund (EDCP 7.5)
    SELECT t.id, t.account_id, f.id AS fund_id, t.amount AS part
    FROM todo_plan t JOIN plans_fund f ON f.plan_id = t.plan_id AND f.is_default
    WHERE NOT EXISTS (SELECT 1 FROM elected el WHERE el.participation_id = t.participation_id)
    UNION ALL
    -- an election: shares rounded to the cent, the last fund (highest id) takes the remainder
    SELECT s.id, s.account_id, s.fund_id,
           CASE WHEN s.from_last = 1 THEN s.share + (s.amount - s.shares_total) ELSE s.share END
    FROM (
        SELECT t.id, t.account_id, t.amount, l.fund_id,
               ROUND(t.amount * l.percent / 100.0, 2) AS share,
               ROW_NUMBER() OVER (PARTITION BY t.id ORDER BY l.fund_id DESC) AS from_last,
               SUM(ROUND(t.amount * l.percent / 100.0, 2)) OVER (PARTITION BY t.id) AS shares_total
        FROM todo_plan t
        JOIN elected el ON el.participation_id = t.participation_id
        JOIN elections_investmentelectionline l ON l.election_id = el.election_id
    ) s
),
amounts AS (
    -- the position each part buys into, when it exists (one probe of one_position_per_fund)
    SELECT pt.*, p.id AS position_id FROM parts pt
    LEFT JOIN books_position p ON p.account_id = pt.account_id AND p.fund_id = pt.fund_id
),
new_positions AS (
    INSERT INTO books_position (account_id, fund_id)
    SELECT DISTINCT account_id, fund_id FROM amounts WHERE position_id IS NULL
    ON CONFLICT (account_id, fund_id) DO NOTHING
    RETURNING id, account_id, fund_id
),
posted AS (
    INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, valuation_date, units,
                                   price, amount, pending_id, idempotency_key, actor, posted_at, memo)
    SELECT COALESCE(am.position_id, np.id), am.account_id, 'credit', ap.source, ap.effective_date, %(day)s,
           ROUND(am.part / pr.price, 6), pr.price, am.part, am.id,
           ap.idempotency_key || ':' || am.fund_id, %(actor)s, %(now)s, ap.memo
    FROM amounts am
    JOIN todo ap ON ap.id = am.id
    JOIN plans_fundprice pr ON pr.fund_id = am.fund_id AND pr.date = %(day)s
    LEFT JOIN new_positions np ON am.position_id IS NULL AND np.account_id = am.account_id AND np.fund_id = am.fund_id
    WHERE am.part <> 0
    ON CONFLICT (idempotency_key) DO NOTHING
)
SELECT count(*) FROM todo
"""


def _credits_sql(day: dt.date, actor: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_CREDITS_SQL, {"day": day, "actor": actor, "now": timezone.now()})
        return cursor.fetchone()[0]


def _credits_python(day: dt.date, actor: str) -> int:
    prices = _prices_on(day)
    todo = list(
        PendingTransaction.objects.select_related("account__participation")
        .filter(status=PendingTransaction.Status.PENDING, kind=EntryKind.CREDIT, effective_date__lte=day)
        .order_by("id")
    )
    with transaction.atomic():
        for t in todo:
            part = t.account.participation
            lines = allocation_in_force(participation_id=part.id, plan_id=part.plan_id, day=day)
            # the same rule as the SQL: shares rounded, the last fund (highest id) takes the remainder
            parts = split_by_percent(t.amount, lines)
            for fund_id, share in parts:
                if share == 0:
                    continue
                pos = _position(t.account_id, fund_id)
                _post(
                    position=pos,
                    kind=EntryKind.CREDIT,
                    source=t.source,
                    effective_date=t.effective_date,
                    day=day,
                    units=q_units(share / prices[fund_id]),
                    price=prices[fund_id],
                    amount=share,
                    key=f"{t.idempotency_key}:{fund_id}",
                    actor=actor,
                    pending=t,
                    memo=t.memo,
                )
            t.status, t.applied_on, t.applied_amount = PendingTransaction.Status.APPLIED, day, t.amount
            t.save(update_fields=["status", "applied_on", "applied_amount"])
    return len(todo)


# --- phase 3: debits (distributions, forfeitures): few a day, account by account --------------


def _debits(day: dt.date, prices: dict[int, Decimal], actor: str) -> int:
    todo = list(
        PendingTransaction.objects.filter(
            status=PendingTransaction.Status.PENDING,
            effective_date__lte=day,
            kind__in=[EntryKind.DISTRIBUTION, EntryKind.FORFEITURE, EntryKind.ADJUSTMENT],
        ).order_by("effective_date", "id")
    )
    for t in todo:
        with transaction.atomic():
            t = PendingTransaction.objects.select_for_update().get(pk=t.pk)
            if t.status != PendingTransaction.Status.PENDING:
                continue
            held = {
                pid: u for pid, u in _units_now([t.account_id], day).get(t.account_id, {}).items() if u != 0
            }
            positions = {p.id: p for p in Position.objects.filter(id__in=held)}
            values = {pid: money(u * prices[positions[pid].fund_id]) for pid, u in held.items()}
            total = sum(values.values(), ZERO)
            wanted = total if t.liquidate_all else min(-t.amount, total)
            posted = ZERO
            ordered = sorted(held, key=lambda pid: (values[pid], pid))
            for i, pid in enumerate(ordered):
                pos = positions[pid]
                price = prices[pos.fund_id]
                if wanted >= total:  # everything goes
                    u, amount = held[pid], values[pid]
                elif i == len(ordered) - 1:
                    amount = wanted - posted
                    u = min(held[pid], q_units(amount / price))
                else:
                    amount = money(wanted * values[pid] / total) if total else ZERO
                    u = min(held[pid], q_units(amount / price))
                if amount == 0 and u == 0:
                    continue
                posted += amount
                _post(
                    position=pos,
                    kind=t.kind,
                    source=t.source,
                    effective_date=t.effective_date,
                    day=day,
                    units=-u,
                    price=price,
                    amount=-amount,
                    key=f"{t.idempotency_key}:{pos.fund_id}",
                    actor=actor,
                    pending=t,
                    memo=t.memo,
                )
            t.status, t.applied_on, t.applied_amount = PendingTransaction.Status.APPLIED, day, -posted
            t.save(update_fields=["status", "applied_on", "applied_amount"])
    return len(todo)


# --- phase 4: valuation -------------------------------------------------------------------------

# Measured by `manage.py bench crediting` (operations/bench/crediting.py) against one plain INSERT ... SELECT.
_VALUATION_SQL = """
WITH flows AS (
    SELECT e.position_id, SUM(e.units) AS units, SUM(e.amount) AS amount
    FROM books_ledgerentry e
    WHERE e.valuation_date = %(day)s
    GROUP BY e.position_id
),
prev AS (
    SELECT position_id, account_id, fund_id, units, value FROM books_dailyvaluation
    WHERE valuation_date = %(prev)s AND units <> 0
),
base AS (
    SELECT COALESCE(prev.position_id, flows.position_id) AS position_id,
           -- a position valued for the first time is looked up (COALESCE evaluates the subquery only then)
           COALESCE(prev.account_id, (SELECT p.account_id FROM books_position p WHERE p.id = flows.position_id))
               AS account_id,
           COALESCE(prev.fund_id, (SELECT p.fund_id FROM books_position p WHERE p.id = flows.position_id)) AS fund_id,
           COALESCE(prev.units, 0) + COALESCE(flows.units, 0) AS units,
           COALESCE(prev.value, 0) AS prev_value,
           COALESCE(flows.amount, 0) AS flow
    FROM prev FULL JOIN flows ON flows.position_id = prev.position_id
)
INSERT INTO books_dailyvaluation (position_id, account_id, fund_id, valuation_date, units, price, value, flow, earnings)
SELECT b.position_id, b.account_id, b.fund_id, %(day)s, b.units, pr.price,
       ROUND(b.units * pr.price, 2), b.flow, ROUND(b.units * pr.price, 2) - b.prev_value - b.flow
FROM base b JOIN plans_fundprice pr ON pr.fund_id = b.fund_id AND pr.date = %(day)s
"""
# A day with no row yet takes the plain insert (the unique index still refuses a duplicate); a run
# resumed after a crash skips the rows already written, which costs a probe of that index per row.
_VALUATION_RESUME_SQL = _VALUATION_SQL + "ON CONFLICT (valuation_date, position_id) DO NOTHING\n"


def _valuations_sql(day: dt.date, *, resuming: bool = True) -> int:
    """`resuming` is a hint read under the lock; rows it did not see make the plain insert fail, and resume."""
    params = {"day": day, "prev": cal.previous_valuation_date(day)}
    with connection.cursor() as cursor:
        if not (resuming or connection.in_atomic_block):
            try:
                cursor.execute(_VALUATION_SQL, params)
                return cursor.rowcount
            except IntegrityError:
                pass
        cursor.execute(_VALUATION_RESUME_SQL, params)
        return cursor.rowcount


def _valuations_python(day: dt.date) -> int:
    if DailyValuation.objects.filter(valuation_date=day).exists():
        return 0
    prices = _prices_on(day)
    prev_day = cal.previous_valuation_date(day)
    state: dict[int, dict[str, Any]] = {}
    for held in (
        DailyValuation.objects.filter(valuation_date=prev_day)
        .exclude(units=0)
        .values("position_id", "account_id", "fund_id", "units", "value")
    ):
        state[held["position_id"]] = {**held, "prev_value": held["value"], "flow": ZERO}
    flows = (
        LedgerEntry.objects.filter(valuation_date=day)
        .values("position_id", "position__account_id", "position__fund_id")
        .annotate(u=Sum("units"), a=Sum("amount"))
    )
    for f in flows:
        moved = state.setdefault(
            f["position_id"],
            {
                "position_id": f["position_id"],
                "account_id": f["position__account_id"],
                "fund_id": f["position__fund_id"],
                "units": ZERO,
                "prev_value": ZERO,
                "flow": ZERO,
            },
        )
        moved["units"] += f["u"]
        moved["flow"] += f["a"]
    rows = []
    for row in state.values():
        price = prices[row["fund_id"]]
        value = money(row["units"] * price)
        rows.append(
            DailyValuation(
                position_id=row["position_id"],
                account_id=row["account_id"],
                fund_id=row["fund_id"],
                valuation_date=day,
                units=row["units"],
                price=price,
                value=value,
                flow=row["flow"],
                earnings=value - row["prev_value"] - row["flow"],
            )
        )
    with transaction.atomic():
        DailyValuation.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


# A payday's valuation aggregates the day's credits by position and joins them to every position held: at
# PostgreSQL's default work_mem (4 MB) the aggregate spills to disk at 40,000 credits (EXPLAIN), and at 200,000 the
# join's hash (some 13 MB) too. `manage.py bench crediting
# --participants 100000 --paid 1` (200,000 credits, 2026-12-04, nothing else running): the valuation's backend CPU
# 4.44 s at 4 MB, 3.64 s at 32 MB, 3.59 s at 64 MB; peak memory (this process and the job's backend) 399, 452
# and 474 MB against the 500 MB allowed. An ordinary day has no flows to hash and keeps the server's setting.
_PAYDAY_WORK_MEM = "32MB"


@contextlib.contextmanager
def _memory_for_a_payday() -> Iterator[None]:
    """work_mem for this connection while a day with credits is posted and valued, then the server's again."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, false)", [_PAYDAY_WORK_MEM])
    try:
        yield
    finally:
        # Set inside a transaction that then fails, the setting goes with its rollback and RESET cannot run there;
        # on a closed connection there is nothing to reset.
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
            cursor.execute("RESET work_mem")


def _set_based() -> bool:
    return connection.vendor == "postgresql"


# --- the job ------------------------------------------------------------------------------------


def _refusal(day: dt.date, work: _Work) -> str | None:
    if not cal.is_valuation_date(day):
        return f"{day} is not a Valuation Date (the NYSE is closed; EDCP 1.37, RRP 1.32)"
    if work.last_key is not None:
        expected = cal.next_valuation_date_after(dt.date.fromisoformat(work.last_key))
        if expected < day:
            return f"{expected} must be credited before {day}: Valuation Dates are credited in order"
    missing = _funds(work.missing_prices)
    if missing:
        names = ", ".join(f"{f.plan.code} {f.code} ({f.name})" for f in missing)
        return f"no price for {names} on {day}: crediting waits until the price is loaded"
    return None


def credit_valuation_date(
    *, valuation_date: dt.date, actor: str = "crediting job", set_based: bool | None = None
) -> JobRun:
    """Credit one Valuation Date. Repeating it changes nothing; a crash resumes at the phase it reached.

    A quiet day (no exchange, credit or debit) is three statements: lock + claim + reads, the
    valuation, finish + unlock.
    """
    set_based = _set_based() if set_based is None else set_based
    day, postgresql = valuation_date, connection.vendor == "postgresql"
    with job_locked_claim(
        lock=JOB_KIND,
        kind=JOB_KIND,
        key=day.isoformat(),
        reads=_WORK_WITH_PRICES_SQL if postgresql else "",
        params={"day": day, "key": day.isoformat()},
    ) as claimed:
        run = claimed.run
        if run.status == JobRun.Status.DONE:
            return run
        work = _Work(*claimed.reads) if postgresql else _work_now(day)
        if _refusal(day, work) is not None:
            if postgresql and cal.is_valuation_date(day):
                with connection.cursor() as cursor:
                    cursor.execute(
                        _PREVIOUS_RUN_SETTLED_SQL, {"key": cal.previous_valuation_date(day).isoformat()}
                    )
            work = _work_now(day)
            refusal = _refusal(day, work)
            if refusal is not None:
                return claimed.finish(status=JobRun.Status.REFUSED, message=refusal)
        prices = _prices_on(day) if (work.has_exchanges or work.has_debits or not set_based) else {}
        stats: dict[str, int] = {"exchanges": 0, "credits": 0, "debits": 0}
        with _memory_for_a_payday() if (set_based and work.has_credits) else contextlib.nullcontext():
            if work.has_exchanges:
                job_progress(run, done=0, total=len(PHASES), message="exchanges")
                stats["exchanges"] = _exchanges(day, prices, actor)
            if work.has_credits:
                job_item(run, "credits")
                stats["credits"] = _credits_sql(day, actor) if set_based else _credits_python(day, actor)
            if work.has_debits:
                job_progress(run, done=2, total=len(PHASES), message="debits")
                stats["debits"] = _debits(day, prices, actor)
            if work.has_exchanges or work.has_credits or work.has_debits:
                job_progress(run, done=3, total=len(PHASES), message="valuation")
            job_item(run, "valuation")
            stats["positions_valued"] = (
                _valuations_sql(day, resuming=work.resuming) if set_based else _valuations_python(day)
            )
        return claimed.finish(status=JobRun.Status.DONE, message="credited", stats=stats)


def credit_due_dates(
    *, through: dt.date, actor: str = "crediting job", since: dt.date | None = None
) -> list[JobRun]:
    """Credit every Valuation Date not yet credited, in order, through `through`; stop at the first refusal.

    Before any date is credited, the first is the Valuation Date of the first pending transaction, or
    `since` when given (books whose first day is known: a simulation, whose BRP payments move no units).
    """
    last = last_credited_date()
    if last is None and since is not None:
        start = cal.next_valuation_date(since)
    elif last is None:
        first_pending = (
            PendingTransaction.objects.filter(status=PendingTransaction.Status.PENDING)
            .order_by("effective_date")
            .values_list("effective_date", flat=True)
            .first()
        )
        if first_pending is None:
            return []
        start = cal.next_valuation_date(first_pending)
    else:
        start = cal.next_valuation_date_after(last)
    runs = []
    for day in cal.valuation_dates_between(start, through):
        run = credit_valuation_date(valuation_date=day, actor=actor)
        runs.append(run)
        if run.status != JobRun.Status.DONE:
            break
    return runs
