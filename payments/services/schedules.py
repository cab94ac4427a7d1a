"""Keeping each account's payment schedule in step with its events, elections and schedule changes.

`schedules_recompute` runs the engine for a set of accounts and merges the answer into the stored
schedule by the reconciliation the annuities share (payments/services/reconcile.py): payments already
released or paid never change; unpaid payments that are no longer part of the plan's answer are
cancelled (kept, with the reason); new ones are added. The schedule's revision
goes up only when something changed, so its history reads as the list of real changes.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.utils import timezone

from books.models import Account
from core import valuation_calendar as cal
from core.audit import actor_label
from core.bulk import build, build_like, insert_new, update_existing
from participants.models import EmploymentEvent
from payments.models import PaymentSchedule, ScheduledPayment
from payments.services.annuities import annuities_recompute, is_annuity_account
from payments.services.bulk import bulk_update_fast
from payments.services.engine import Planned, ScheduleResult, compute_schedule
from payments.services.facts import load_facts
from payments.services.reconcile import reconcile, reconciliation_write
from payments.services.values import credited_through

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from core.audit import Actor
    from participants.models import ChangeInControl, EmploymentEvent, Participation, Person

S = ScheduledPayment.Status


def _release_date(day: dt.date) -> dt.date:
    """Which day a payment is released: the first Valuation Date on or after its Payment Date."""
    return cal.next_valuation_date(day)


def _valuable_on(p: Planned, release: dt.date) -> dt.date:
    if p.valued_as_of is None:  # valued on the release date: estimated from the day before
        return cal.previous_valuation_date(release)
    return cal.last_valuation_date(p.valued_as_of)


def planned_to_row(
    *,
    p: Planned,
    schedule: PaymentSchedule,
    revision: int,
    now: dt.datetime,
    dates: dict[tuple[dt.date, dt.date | None], tuple[dt.date, dt.date]] | None = None,
    like: ScheduledPayment | None = None,
) -> ScheduledPayment:
    """`dates`: the release and valuation dates already found in this call, the calendar being the same. `like`: a
    row just built for the same schedule, revision and time, whose other values the new one copies
    (`core.bulk.build_like`)."""
    key = (p.payment_date, p.valued_as_of)
    found = dates.get(key) if dates is not None else None
    if found is None:
        release = _release_date(p.payment_date)
        found = (release, _valuable_on(p, release))
        if dates is not None:
            dates[key] = found
    release, valuable_on = found
    status = S.HELD if p.hold_code else S.SCHEDULED
    if like is not None:
        return build_like(
            like,
            trigger=p.trigger,
            benefit=p.benefit,
            kind=p.kind,
            number=p.number,
            of=p.of,
            share=p.share,
            percent=p.percent,
            payment_date=p.payment_date,
            valuation_rule=p.valuation_rule,
            valued_as_of=p.valued_as_of,
            valuable_on=valuable_on,
            release_date=release,
            cite=p.cite,
            reason=p.reason[:300],
            status=status,
            hold_code=p.hold_code,
            hold_reason=p.hold_reason,
            payee_name=p.payee_name[:200],
        )
    return build(  # the positional path of the model: a take-over builds thousands
        ScheduledPayment,
        schedule=schedule,
        account_id=schedule.account_id,
        participation_id=schedule.participation_id,
        revision=revision,
        trigger=p.trigger,
        benefit=p.benefit,
        kind=p.kind,
        number=p.number,
        of=p.of,
        share=p.share,
        percent=p.percent,
        payment_date=p.payment_date,
        valuation_rule=p.valuation_rule,
        valued_as_of=p.valued_as_of,
        valuable_on=valuable_on,
        release_date=release,
        cite=p.cite,
        reason=p.reason[:300],
        status=status,
        hold_code=p.hold_code,
        hold_reason=p.hold_reason,
        payee_name=p.payee_name[:200],
        created_at=now,
    )


def _signature(p: ScheduledPayment) -> tuple:
    return (
        p.trigger,
        p.kind,
        p.number,
        p.of,
        p.payment_date,
        p.share,
        p.payee_name,
        p.percent if p.share in ScheduledPayment.PARTS else None,
    )


_SCHEDULE_FIELDS = (
    "trigger",
    "trigger_date",
    "benefit",
    "form",
    "installments",
    "cite",
    "summary",
    "hold_reason",
    "provisional_until",
)


def _apply(schedule: PaymentSchedule, result: ScheduleResult) -> bool:
    values = {
        "trigger": result.trigger,
        "trigger_date": result.trigger_date,
        "benefit": result.benefit[:120],
        "form": result.form,
        "installments": result.installments,
        "cite": result.cite[:60],
        "summary": result.summary,
        "hold_reason": result.hold_reason,
        "provisional_until": result.provisional_until,
    }
    changed = False
    for name, value in values.items():
        if getattr(schedule, name) != value:
            setattr(schedule, name, value)
            changed = True
    return changed


# Accounts recomputed per round: every statement of a round names its accounts, people or participations, and
# PostgreSQL takes at most 65,535 parameters in one statement, so a change in control over 100,000 participants
# (some 220,000 accounts) is recomputed 5,000 accounts at a time, in one transaction.
RECOMPUTE_CHUNK = 5000


def schedules_recompute(
    *,
    accounts: Sequence[Account] = (),
    account_ids: Iterable[int] = (),
    because: str,
    now: dt.datetime | None = None,
    as_of: dt.date | None = None,
) -> list[PaymentSchedule]:
    """(Re)compute the benefit schedule of each account (given as accounts or as ids); returns the schedules that
    changed. All of them in one transaction: a failure changes no schedule."""
    ids = sorted({a.id for a in accounts} | set(account_ids))
    if not ids:
        return []
    now = now or timezone.now()
    as_of = as_of or timezone.localdate(now)
    credited = credited_through()
    changed: list[PaymentSchedule] = []
    with transaction.atomic():
        for start in range(0, len(ids), RECOMPUTE_CHUNK):
            changed += _recompute_round(
                _accounts_read(ids[start : start + RECOMPUTE_CHUNK]),
                because=because,
                now=now,
                as_of=as_of,
                credited=credited,
            )
    return changed


def _accounts_read(ids: list[int]) -> list[Account]:
    """The accounts, by id, with their participation, plan and person."""
    return list(
        Account.objects.filter(id__in=ids)
        .order_by("id")
        .select_related("participation__plan", "participation__person")
    )


def _recompute_round(
    accounts: list[Account],
    *,
    because: str,
    now: dt.datetime,
    as_of: dt.date,
    credited: dt.date | None,
    opened: dict[int, list[ScheduledPayment]] | None = None,
) -> list[PaymentSchedule]:
    """One round of `schedules_recompute`, of accounts just read by `_accounts_read`. `opened`: filled with account
    id -> the payment rows written (saved), when no account had a benefit schedule before (a take-over): every
    payment of the schedules, which the caller then need not read back."""
    if not accounts:
        return []
    annuity_accounts = [a for a in accounts if is_annuity_account(account=a)]
    annuities_changed: list[PaymentSchedule] = []
    if annuity_accounts:  # a defined benefit pays a fixed monthly amount, not an account balance (BRP 4.2)
        annuities_changed = annuities_recompute(
            accounts=annuity_accounts, because=because, now=now, as_of=as_of
        )
        accounts = [a for a in accounts if not is_annuity_account(account=a)]
        if not accounts:
            return annuities_changed
    facts = load_facts(accounts=accounts, as_of=as_of, credited=credited)
    # the annuities' rows are not collected: then the caller reads every row back
    collect = opened if not annuity_accounts else None
    changed = _schedules_store(accounts, facts, because=because, now=now, opened=collect)
    return changed + annuities_changed


def _stored_payments(schedules: list[PaymentSchedule]) -> dict[int, list[ScheduledPayment]]:
    """schedule id -> its payments that are not cancelled, oldest first."""
    current: dict[int, list[ScheduledPayment]] = defaultdict(list)
    for p in (
        ScheduledPayment.objects.filter(schedule__in=schedules).exclude(status=S.CANCELLED).order_by("id")
    ):
        current[p.schedule_id].append(p)
    return current


def _schedules_create(schedules: list[PaymentSchedule]) -> None:
    insert_new(objs=schedules, model=PaymentSchedule, history=True)
    if any(s.pk is None for s in schedules):  # backends that do not return ids
        ids = {
            s.account_id: s.pk
            for s in PaymentSchedule.objects.filter(
                account_id__in=[s.account_id for s in schedules], kind=PaymentSchedule.Kind.BENEFIT
            )
        }
        for s in schedules:
            s.pk = s.id = ids[s.account_id]


def _schedules_store(
    accounts: list[Account],
    facts: dict,
    *,
    because: str,
    now: dt.datetime,
    opened: dict[int, list[ScheduledPayment]] | None = None,
) -> list[PaymentSchedule]:
    """Merge each account's answer into its stored schedule (payments/services/reconcile.py), in bulk."""
    existing = {
        s.account_id: s
        for s in PaymentSchedule.objects.select_for_update().filter(
            account_id__in=[a.id for a in accounts], kind=PaymentSchedule.Kind.BENEFIT
        )
    }
    current = _stored_payments(list(existing.values()))
    new_schedules: list[PaymentSchedule] = []
    changed_schedules: list[PaymentSchedule] = []
    pending_rows: list[tuple[PaymentSchedule, list[Planned]]] = []
    changed_payments: list[ScheduledPayment] = []
    runs: set[int] = set()
    for a in accounts:
        result = compute_schedule(f=facts[a.id])
        schedule = existing.get(a.id)
        if schedule is None:
            schedule = build(  # the positional path of the model: a take-over opens thousands
                PaymentSchedule,
                participation_id=a.participation_id,
                account_id=a.id,
                revision=1,
                computed_at=now,
                computed_because=because[:200],
            )
            _apply(schedule, result)
            new_schedules.append(schedule)
            if result.payments:
                pending_rows.append((schedule, result.payments))
            continue
        merged = reconcile(
            have=current.get(schedule.id, []),
            planned=result.payments,
            stored_signature=_signature,
            because=because,
        )
        if not (_apply(schedule, result) or merged.changed):
            continue
        schedule.revision += 1
        schedule.computed_at, schedule.computed_because = now, because[:200]
        changed_schedules.append(schedule)
        changed_payments.extend(merged.stored_changes)
        runs |= merged.runs
        if merged.new:
            pending_rows.append((schedule, merged.new))
    if new_schedules:
        _schedules_create(new_schedules)
    if changed_schedules:
        bulk_update_fast(
            objs=changed_schedules,
            model=PaymentSchedule,
            fields=["revision", "computed_at", "computed_because", *_SCHEDULE_FIELDS],
        )
    dates: dict[tuple[dt.date, dt.date | None], tuple[dt.date, dt.date]] = {}
    rows: list[ScheduledPayment] = []
    for schedule, planned in pending_rows:
        first: ScheduledPayment | None = None
        for p in planned:
            row = planned_to_row(
                p=p, schedule=schedule, revision=schedule.revision, now=now, dates=dates, like=first
            )
            first = first or row
            rows.append(row)
    reconciliation_write(changed=changed_payments, rows=rows, runs=runs)
    if opened is not None and not existing:
        for row in rows:
            opened.setdefault(row.account_id, []).append(row)
    return new_schedules + changed_schedules


def participant_schedules_recompute(
    *, person: Person, because: str, now: dt.datetime | None = None
) -> list[PaymentSchedule]:
    accounts = list(
        Account.objects.filter(participation__person=person).select_related(
            "participation__plan", "participation__person"
        )
    )
    return schedules_recompute(accounts=accounts, because=because, now=now)


@dataclass(frozen=True)
class ScheduleTakenOver:
    """An account whose benefit another administrator began paying or owes (a conversion)."""

    account_id: int
    payments_made: int
    last_payment_amount: Decimal | None = None


def _payment_groups(rows: list[ScheduledPayment]) -> list[list[ScheduledPayment]]:
    """The payments of a schedule in order, one group per payment (a death benefit shared by payees is one)."""
    groups: dict[tuple, list[ScheduledPayment]] = {}
    for p in rows:
        groups.setdefault((p.payment_date, p.kind, p.number), []).append(p)
    return list(groups.values())


def schedules_take_over(
    *, taken: list[ScheduleTakenOver], by: str, now: dt.datetime, as_of: dt.date
) -> dict[int, list[list[ScheduledPayment]]]:
    """Each account's schedule is the plan's, computed as for any account (`schedules_recompute`: its events,
    elections and changes decide the form and the Payment Dates); its first `payments_made` payments are recorded
    as paid by the prior administrator (they move no units; the last one at its amount when given). Returns, per
    account, the payments still to make, one group per payment, first due first."""
    if not taken:
        return {}
    ids = [t.account_id for t in taken]
    opened: dict[int, list[ScheduledPayment]] = {}
    with transaction.atomic():  # one round: the caller hands at most RECOMPUTE_CHUNK accounts
        _recompute_round(
            _accounts_read(ids), because=by, now=now, as_of=as_of, credited=credited_through(), opened=opened
        )
    rows: dict[int, list[ScheduledPayment]] = defaultdict(list)
    if opened:  # new schedules: their payments are the rows just written (none cancelled)
        for account_id, written in opened.items():
            # in the order of their ids, as written: the sort keeps it among the payees of one payment
            rows[account_id] = sorted(written, key=lambda p: (p.payment_date, p.number))
    else:
        for p in (
            ScheduledPayment.objects.filter(account_id__in=ids, schedule__kind=PaymentSchedule.Kind.BENEFIT)
            .exclude(status=S.CANCELLED)
            .order_by("payment_date", "number", "id")
        ):
            rows[p.account_id].append(p)
    paid: list[ScheduledPayment] = []
    out: dict[int, list[list[ScheduledPayment]]] = {}
    for t in taken:
        groups = _payment_groups(rows[t.account_id])
        made = groups[: t.payments_made]
        for i, group in enumerate(made):
            for p in group:
                p.status, p.paid_on = S.PAID, p.payment_date
                p.withholding_basis = f"paid by the prior administrator ({by})"[:300]
                if i == len(made) - 1 and len(group) == 1 and t.last_payment_amount is not None:
                    p.amount = t.last_payment_amount
                paid.append(p)
        out[t.account_id] = groups[t.payments_made :]
    update_existing(
        objs=paid, model=ScheduledPayment, fields=["status", "paid_on", "amount", "withholding_basis"]
    )
    return out


# --- reactions (registered in payments.apps) ---------------------------------------------------------


def on_employment_event(*, event: EmploymentEvent, actor: Actor) -> None:
    """After books forfeited what is unvested: the person's schedules follow the event."""
    participant_schedules_recompute(
        person=event.person,
        now=event.recorded_at,
        because=f"{event.get_kind_display()} on {event.effective_date} recorded by {actor_label(actor)}",
    )


def on_change_in_control(*, cic: ChangeInControl, actor: Actor) -> None:
    window_end = cic.effective_date + dt.timedelta(days=31 * 36)
    people = (
        EmploymentEvent.objects.filter(
            kind=EmploymentEvent.Kind.SEPARATION,
            effective_date__gte=cic.effective_date,
            effective_date__lte=window_end,
        )
        .values_list("person_id", flat=True)
        .distinct()
    )
    schedules_recompute(  # the people as a subquery: a list of them could exceed a statement's parameters
        account_ids=Account.objects.filter(participation__person_id__in=people).values_list("id", flat=True),
        now=cic.recorded_at,
        because=f"change in control on {cic.effective_date} recorded by {actor_label(actor)}",
    )


def on_schedule_election(
    *, participation: Participation, actor: Actor, now: dt.datetime | None = None, **_: object
) -> None:
    accounts = list(
        Account.objects.filter(participation=participation).select_related(
            "participation__plan", "participation__person"
        )
    )
    schedules_recompute(
        accounts=accounts, now=now, because=f"election or schedule change by {actor_label(actor)}"
    )


_ENSURE_SQL = """
SELECT a.id FROM books_account a
WHERE NOT EXISTS (SELECT 1 FROM payments_paymentschedule s WHERE s.account_id = a.id AND s.kind = 'benefit')
ORDER BY a.id LIMIT %s
"""


def schedules_ensure(*, now: dt.datetime, limit: int = 20000) -> int:
    """Every account gets its schedule (a Specified Date Account pays without any event)."""
    done = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(_ENSURE_SQL, [limit])
            ids = [r[0] for r in cursor.fetchall()]
        if not ids:
            return done
        accounts = list(
            Account.objects.filter(id__in=ids).select_related("participation__plan", "participation__person")
        )
        schedules_recompute(accounts=accounts, now=now, because="account opened")
        done += len(ids)
        if len(ids) < limit:
            return done
