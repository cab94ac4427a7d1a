"""Reads of the books: balances on a date, positions, history."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import Count, Q, Sum

from books.models import (
    Account,
    DailyValuation,
    EntryKind,
    PayrollDeferral,
    PayrollRecord,
    PendingTransaction,
    Position,
)
from core import memo
from core import valuation_calendar as cal
from core.jobs import last_credited_date
from core.money import HUNDRED, ZERO, money
from plans.models import Fund

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from participants.models import Participation, Person
    from plans.models import Plan


def last_credited_on_or_before(*, day: dt.date) -> dt.date | None:
    """The last Valuation Date on or before `day` whose crediting is done (the books' latest prices)."""
    return last_credited_date(before=day + dt.timedelta(days=1))


def _last_valued_on_or_before(day: dt.date) -> dt.date | None:
    """The Valuation Date whose positions give the value at the end of `day`: the last one on or before
    it that has been credited (a separation recorded before its day is credited is valued on the day before)."""
    try:
        calendar_day = cal.last_valuation_date(day)
    except ValueError:
        return None
    credited = last_credited_on_or_before(day=calendar_day)
    return credited if credited is not None else calendar_day


def account_values(
    *, accounts: list[Account] | None = None, on: dt.date, participation_ids: list[int] | None = None
) -> dict[int, Decimal]:
    """account id -> whole value (vested and unvested) at the end of `on`.

    The positions at the last Valuation Date on or before `on`, plus credits effective by `on` that
    are still waiting for their Valuation Date (money received, not yet invested).
    """
    if accounts is not None:
        ids = [a.id for a in accounts]
    else:
        ids = list(
            Account.objects.filter(participation_id__in=participation_ids or []).values_list("id", flat=True)
        )
    out: dict[int, Decimal] = defaultdict(lambda: ZERO)
    for i in ids:
        out[i] = ZERO
    last = _last_valued_on_or_before(on)
    if last is not None and ids:
        # Every position holding units has a row on every credited Valuation Date, so the rows of `last`
        # are the whole invested value; the (valuation_date, position) index answers this directly.
        positions = _positions_of(ids)
        if positions:
            for pos, value in DailyValuation.objects.filter(
                valuation_date=last, position_id__in=list(positions)
            ).values_list("position_id", "value"):
                out[positions[pos]] += value
    waiting = (
        PendingTransaction.objects.filter(account_id__in=ids, kind=EntryKind.CREDIT, effective_date__lte=on)
        .filter(
            Q(status=PendingTransaction.Status.PENDING) | Q(applied_on__gt=last)
            if last
            else Q(status=PendingTransaction.Status.PENDING)
        )
        .values("account_id")
        .annotate(t=Sum("amount"))
    )
    for row in waiting:
        out[row["account_id"]] += row["t"]
    return {k: money(v) for k, v in out.items()}


def account_value(*, account: Account, on: dt.date) -> Decimal:
    return account_values(accounts=[account], on=on)[account.id]


def positions_on(*, account: Account, on: dt.date) -> list[dict]:
    last = _last_valued_on_or_before(on)
    if last is None:
        return []
    rows = (
        DailyValuation.objects.filter(valuation_date=last, position_id__in=list(_positions_of([account.id])))
        .select_related("fund")
        .order_by("fund__code")
    )
    return [
        {"fund": r.fund, "units": r.units, "price": r.price, "value": r.value, "earnings": r.earnings}
        for r in rows
    ]


def balance_history(*, account_ids: list[int], start: dt.date, end: dt.date) -> list[tuple[dt.date, Decimal]]:
    return value_history(account_ids=account_ids, start=start, end=end)


def _valuation_dates(start: dt.date, end: dt.date) -> list[dt.date]:
    """The Valuation Dates of a range, so history reads probe the (valuation_date, position) index date by date
    instead of scanning every row of the range."""
    try:
        return cal.valuation_dates_between(start, end)
    except ValueError:
        return []


# --- pages: a person's books, read through positions (DailyValuation is indexed by position and date) ---


def _positions_of(account_ids: list[int]) -> dict[int, int]:
    return dict(Position.objects.filter(account_id__in=account_ids).values_list("id", "account_id"))


class Holding(TypedDict):
    value: Decimal
    invested: Decimal
    waiting: Decimal
    positions: list[dict[str, Any]]  # fund, units, price, value, earnings, valuation_date


def holdings_on(*, accounts: list[Account], on: dt.date) -> dict[int, Holding]:
    """account id -> {"value", "invested", "waiting", "positions": [{fund, units, price, value, earnings}]} at the end of `on`.

    Like account_values(), but at the last *credited* Valuation Date on or before `on`: on a weekday before
    the evening crediting run the page shows the previous day's positions, not only the money waiting.
    """
    ids = [a.id for a in accounts]
    out: dict[int, Holding] = {
        i: {"value": ZERO, "invested": ZERO, "waiting": ZERO, "positions": []} for i in ids
    }
    last = last_credited_date(before=on + dt.timedelta(days=1))
    positions = _positions_of(ids)
    if last is not None and positions:
        rows = (
            DailyValuation.objects.filter(position_id__in=list(positions), valuation_date=last)
            .select_related("fund")
            .order_by("fund__code")
        )
        for r in rows:
            entry = out[positions[r.position_id]]
            if r.units == 0 and r.value == 0:
                continue
            entry["positions"].append(
                {
                    "fund": r.fund,
                    "units": r.units,
                    "price": r.price,
                    "value": r.value,
                    "earnings": r.earnings,
                    "valuation_date": r.valuation_date,
                }
            )
            entry["invested"] += r.value
    waiting = _not_yet_valued(
        PendingTransaction.objects.filter(account_id__in=ids, kind=EntryKind.CREDIT, effective_date__lte=on),
        last=last,
    )
    for row in waiting.values("account_id").annotate(t=Sum("amount")):
        out[row["account_id"]]["waiting"] += row["t"]
    for entry in out.values():
        entry["value"] = money(entry["invested"] + entry["waiting"])
    return out


def _not_yet_valued(
    credits: QuerySet[PendingTransaction], *, last: dt.date | None
) -> QuerySet[PendingTransaction]:
    """The credits not yet in the positions of `last` (the last credited Valuation Date; None before any): still
    pending, or applied by a later crediting run."""
    if last:
        return credits.filter(Q(status=PendingTransaction.Status.PENDING) | Q(applied_on__gt=last))
    return credits.filter(status=PendingTransaction.Status.PENDING)


def plan_account_values(*, plan: Plan, on: dt.date) -> dict[int, Decimal]:
    """account id -> value at the end of `on`, for every account of `plan` with a value, by aggregate SQL: the
    positions of the last credited Valuation Date on or before `on` summed by account, plus the credits waiting
    for their Valuation Date (holdings_on's figure, for a whole plan in two grouped queries)."""
    last = last_credited_date(before=on + dt.timedelta(days=1))
    out: dict[int, Decimal] = defaultdict(lambda: ZERO)
    if last is not None:
        invested = (
            DailyValuation.objects.filter(valuation_date=last, account__participation__plan=plan)
            .order_by()
            .values("account_id")
            .annotate(t=Sum("value"))
            .values_list("account_id", "t")
        )
        for account_id, total in invested:
            out[account_id] += total
    waiting = _not_yet_valued(
        PendingTransaction.objects.filter(
            account__participation__plan=plan, kind=EntryKind.CREDIT, effective_date__lte=on
        ),
        last=last,
    )
    for account_id, total in (
        waiting.order_by().values("account_id").annotate(t=Sum("amount")).values_list("account_id", "t")
    ):
        out[account_id] += total
    return {account_id: money(value) for account_id, value in out.items() if value != ZERO}


def person_books(*, person: Person, on: dt.date) -> list[dict]:
    """A person's participations with their accounts: value, vested part (and the section deciding it), positions."""
    from books.services.vesting import (
        vested_percents,
    )  # on use: vesting reads account values from this module

    participations = list(person.participations.select_related("plan", "person").order_by("plan__code"))
    accounts = list(
        Account.objects.filter(participation__in=participations).order_by("kind", "specified_month")
    )
    by_id = {p.id: p for p in participations}
    for (
        account
    ) in accounts:  # one Participation and Plan instance: the plan's versions read once, not per account
        account.participation = by_id[account.participation_id]
    holdings = holdings_on(accounts=accounts, on=on)
    percents = vested_percents(accounts=accounts, on=on)
    out = []
    for participation in participations:
        rows: list[dict[str, Any]] = []
        for account in (a for a in accounts if a.participation_id == participation.id):
            h = holdings[account.id]
            percent, cite = percents[account.id]
            vested = money(h["value"] * percent / HUNDRED)
            rows.append(
                {
                    "account": account,
                    **h,
                    "vested_percent": percent,
                    "vested_cite": cite,
                    "vested": vested,
                    "unvested": h["value"] - vested,
                }
            )
        out.append(
            {
                "participation": participation,
                "plan": participation.plan,
                "accounts": rows,
                "total": money(sum((r["value"] for r in rows), ZERO)),
                "vested": money(sum((r["vested"] for r in rows), ZERO)),
            }
        )
    return out


def value_history(*, account_ids: list[int], start: dt.date, end: dt.date) -> list[tuple[dt.date, Decimal]]:
    """Total value of the accounts on each Valuation Date in [start, end] (the balance-history chart)."""
    positions = list(_positions_of(account_ids))
    if not positions:
        return []
    dates = _valuation_dates(start, end)
    if not dates:
        return []
    rows = (
        DailyValuation.objects.filter(valuation_date__in=dates, position_id__in=positions)
        .values("valuation_date")
        .annotate(v=Sum("value"))
        .order_by("valuation_date")
    )
    return [(r["valuation_date"], r["v"]) for r in rows]


def daily_earnings(
    *, account_ids: list[int], end: dt.date | None = None, days: int = 400
) -> QuerySet[DailyValuation, Any]:  # rows: valuation_date, earnings, flow, value
    """Per Valuation Date of the `days` before `end` (default: the last credited), newest first: earnings
    credited, money in or out (flow) and the closing value."""
    positions = list(_positions_of(account_ids))
    end = end or last_credited_date()
    if end is None or not positions:
        return DailyValuation.objects.none().values("valuation_date")
    dates = _valuation_dates(end - dt.timedelta(days=days), end)
    return (
        DailyValuation.objects.filter(valuation_date__in=dates, position_id__in=positions)
        .values("valuation_date")
        .annotate(earnings=Sum("earnings"), flow=Sum("flow"), value=Sum("value"))
        .order_by("-valuation_date")
    )


def books_totals(*, on: dt.date) -> dict:
    """The books on the last credited Valuation Date on or before `on`: value by plan and fund, money waiting."""
    last = last_credited_date(before=on + dt.timedelta(days=1))
    funds = {f.id: f for f in Fund.objects.select_related("plan")}
    by_fund: list[dict[str, Any]] = []
    if last is not None:
        for row in (
            DailyValuation.objects.filter(valuation_date=last)
            .values("fund_id")
            .annotate(value=Sum("value"), units=Sum("units"), earnings=Sum("earnings"))
        ):
            by_fund.append({"fund": funds.get(row["fund_id"]), **row})
        by_fund.sort(key=lambda r: (r["fund"].plan.code, r["fund"].code) if r["fund"] else ("", ""))
    waiting = (
        PendingTransaction.objects.filter(status=PendingTransaction.Status.PENDING)
        .values("account__participation__plan__code", "kind", "source")
        .annotate(total=Sum("amount"), count=Count("id"))
        .order_by("account__participation__plan__code", "kind")
    )
    return {
        "last": last,
        "by_fund": by_fund,
        "total": money(sum((r["value"] for r in by_fund), ZERO)),
        "waiting": list(waiting),
    }


# --- answers to the questions of lower layers (core.hooks, registered in books.apps) ------------------------


def accounts_held(*, participation: Participation) -> list[tuple[str, dt.date | None]]:
    """(kind, specified month) of every account the participant holds, oldest first."""
    return list(
        Account.objects.filter(participation=participation)
        .order_by("id")
        .values_list("kind", "specified_month")
    )


def account_holds_deferrals(
    *, participation: Participation, account_kind: str, specified_month: dt.date | None
) -> bool:
    """Has this account received a deferral (then its payment schedule changes only as a schedule change)? The
    participant's accounts that have are read at once, and once within a core.memo run (issue 15)."""
    holding = memo.remember(
        ("accounts_holding_deferrals", participation.pk),
        lambda: set(
            Account.objects.filter(participation=participation, entries__source="deferral")
            .values_list("kind", "specified_month")
            .distinct()
        ),
    )
    return (account_kind, specified_month) in holding


def payroll_reductions(
    *, plan: Plan, plan_year: int | None = None, participation: Participation | None = None
) -> QuerySet[PayrollDeferral]:
    """Pay lines whose deferral payroll reduced (EDCP 1.14: never more than the cash pay left after taxes) or
    cancelled (EDCP 3.7), with the reason payroll recorded."""
    qs = (
        PayrollDeferral.objects.filter(participation__plan=plan)
        .filter(Q(reduced_by__gt=0) | ~Q(reason=""))
        .select_related("record", "participation__person")
        .order_by("-record__pay_date", "-id")
    )
    if plan_year is not None:
        qs = qs.filter(record__plan_year=plan_year)
    if participation is not None:
        qs = qs.filter(participation=participation)
    return qs


def last_pay_lines(*, person: Person) -> list[tuple[dt.date, str, Decimal]]:
    """The person's pay lines of their last pay date (pay date, component, gross): what a deferral election's
    effect per paycheck is figured on (issue 11)."""
    last = (
        PayrollRecord.objects.filter(person=person)
        .order_by("-pay_date")
        .values_list("pay_date", flat=True)
        .first()
    )
    if last is None:
        return []
    return [
        (r.pay_date, r.component, r.gross)
        for r in PayrollRecord.objects.filter(person=person, pay_date=last).order_by("component", "sequence")
    ]
