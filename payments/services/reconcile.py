"""One reconciliation of the payments a plan's answer plans against the payments already stored.

Both the account schedules (`schedules.py`: lump sums and installments of an account balance) and the
defined-benefit annuities (`annuities.py`: fixed monthly amounts, BRP 4.2) keep their stored schedule in step
with a fresh answer by the same rules:

- a stored payment that matches a planned one (same signature) stays; only a hold the computation itself
  set (a missing Key Employee list, a missing pension figure) follows the new answer;
- a payment already approved, released or paid never changes, and no second payment is added for the same
  trigger, date, kind and number (a later answer with other payees or shares must not pay it twice);
- an unpaid payment the answer no longer plans is cancelled (kept, with the reason), and leaves its run;
- a planned payment with no stored match is added.

`reconcile` decides (in memory, per schedule); `reconciliation_write` stores the decisions of one or many
schedules in bulk.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from core.bulk import insert_new
from payments.models import ScheduledPayment
from payments.services.bulk import bulk_update_fast
from payments.services.runs import runs_refresh_totals

S = ScheduledPayment.Status
# The holds a schedule computation sets by itself; any other hold was put by staff and stays.
COMPUTED_HOLDS: frozenset[str] = frozenset({"", "key_employee_unknown"})
_CHANGED_FIELDS = ["status", "run", "cancelled_reason", "hold_code", "hold_reason"]


@dataclass
class Reconciliation:
    new: list[Any] = field(default_factory=list)  # planned payments to add (the caller turns them into rows)
    updated: list[ScheduledPayment] = field(default_factory=list)  # hold set or lifted
    cancelled: list[ScheduledPayment] = field(default_factory=list)
    runs: set[int] = field(default_factory=set)  # payment runs that held a changed payment: totals to refresh

    @property
    def changed(self) -> bool:
        return bool(self.new or self.updated or self.cancelled)

    @property
    def stored_changes(self) -> list[ScheduledPayment]:
        return self.updated + self.cancelled


def _started_key(p: Any) -> tuple:
    return (p.trigger, p.payment_date, p.kind, p.number)


def reconcile(
    *,
    have: list[ScheduledPayment],
    planned: Iterable[Any],
    stored_signature: Callable[[ScheduledPayment], tuple],
    because: str,
    computed_holds: Collection[str] = COMPUTED_HOLDS,
) -> Reconciliation:
    """Compare the stored, not cancelled payments of one schedule (`have`) with the plan's answer (`planned`:
    items with `.signature`, `trigger`, `payment_date`, `kind`, `number`, `hold_code`, `hold_reason`).
    Changes the stored payments in memory only."""
    by_sig: dict[tuple, ScheduledPayment] = {}
    for p in have:
        by_sig.setdefault(stored_signature(p), p)
    started = {_started_key(p) for p in have if p.status not in ScheduledPayment.MUTABLE}
    out = Reconciliation()
    matched: set[int] = set()
    for item in planned:
        found = by_sig.get(item.signature)
        if found is None:
            if _started_key(item) not in started:
                out.new.append(item)
            continue
        matched.add(found.id)
        hold = found.hold_code or ""
        if found.status in (S.SCHEDULED, S.HELD) and hold != item.hold_code and hold in computed_holds:
            if found.run_id:
                out.runs.add(found.run_id)
            found.hold_code, found.hold_reason = item.hold_code, item.hold_reason
            found.status = S.HELD if item.hold_code else S.SCHEDULED
            out.updated.append(found)
    for p in have:
        if p.id in matched or p.status not in ScheduledPayment.MUTABLE:
            continue
        if p.run_id:
            out.runs.add(p.run_id)
        p.status, p.run_id = S.CANCELLED, None
        p.cancelled_reason = f"No longer due after: {because}"[:300]
        out.cancelled.append(p)
    return out


def reconciliation_write(
    *, changed: list[ScheduledPayment], rows: list[ScheduledPayment], runs: Collection[int] = ()
) -> None:
    """Store the changed payments and the new rows of one or many reconciliations; refresh the totals of the
    payment runs that held a changed payment (a cancelled payment leaves its run)."""
    if changed:
        bulk_update_fast(objs=changed, model=ScheduledPayment, fields=_CHANGED_FIELDS)
    if runs:
        runs_refresh_totals(run_ids=runs)
    if rows:
        insert_new(objs=rows, model=ScheduledPayment, history=True)
