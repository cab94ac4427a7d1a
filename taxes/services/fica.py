"""FICA special timing (26 CFR 31.3121(v)(2)-1; RULES.md "FICA special timing and year-end tax reporting").

Every amount the plans credit becomes FICA wages on the later of the day it is credited and the day it
vests (31.3121(v)(2)-1(a)(2)(ii)):

- a credit to an account that is vested when credited (every deferral; company credits under immediate
  vesting or after the account vested): on its effective date (the pay date for deferrals), the amount;
  under graded vesting the percentage already vested of the credit;
- a company credit that vests later: on each day the vested percentage rises, that newly vested percentage
  of the account's value that day (the principal plus the income attributable to it through that date);
- a defined benefit (the BRP): at its Benefit Commencement Date, the present value on that date of the
  payments that follow, on the plan's actuarial basis;
- never the earnings after an amount is taken into account (nonduplication), never a distribution.

The rows are derived from the books by `fica_wages_record`, idempotently: each fact has a key; a rerun
writes nothing new unless the books changed, and then only the difference, as a correcting row.
"""

from __future__ import annotations

import bisect
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from books.models import (
    Account,
    DailyValuation,
    EntryKind,
    LedgerEntry,
    PayrollRecord,
    PendingTransaction,
    Source,
)
from books.selectors import account_value
from books.services.vesting import vested_percent, vesting_rule
from core.money import HUNDRED, ZERO, money
from participants.models import EmploymentEvent, Participation
from participants.selectors import change_in_control_between
from payments.liability import defined_benefit_value
from payments.models import Annuity
from taxes.models import FeedTake, FicaWage

REG = "26 CFR 31.3121(v)(2)-1"
CREDIT_SOURCES = (
    Source.DEFERRAL,
    Source.MATCHING,
    Source.RESTORATION,
    Source.COMPANY_MATCHING,
    Source.COMPANY_RETIREMENT,
)


@dataclass(frozen=True)
class FicaFact:
    """One amount taken into account as FICA wages, as the books show it today."""

    participation: Participation
    date: dt.date
    amount: Decimal
    kind: str
    source: str
    key: str
    cite: str
    prior_years_amount: Decimal = ZERO


def _service_year(pending: PendingTransaction) -> int:
    """The plan year whose services a credit is for: the year in its key (company:<pk>:<year>:..., restoration:
    <pk>:<year>), else the year of its effective date (deferrals and matching belong to their pay date's year)."""
    parts = pending.idempotency_key.split(":")
    if parts[0] in ("company", "restoration") and len(parts) > 2 and parts[2].isdigit():
        return int(parts[2])
    return pending.effective_date.year


def _credit_value(pending: PendingTransaction, on: dt.date) -> Decimal:
    """What one credit's units are worth on `on` (its principal with the income attributable to it)."""
    entries = list(LedgerEntry.objects.filter(pending=pending, valuation_date__lte=on))
    if not entries:
        return pending.amount
    total = ZERO
    for entry in entries:
        row = (
            DailyValuation.objects.filter(position_id=entry.position_id, valuation_date__lte=on)
            .order_by("-valuation_date")
            .values_list("price", flat=True)
            .first()
        )
        total += entry.units * (row if row is not None else entry.price)
    return money(total)


def _vesting_days(account: Account, start: dt.date, through: dt.date) -> list[tuple[dt.date, dt.date]]:
    """(the day an increase would count, the day whose vested percentage decides it), in order.

    The percentage can rise only: at the end of a year of vesting service (December 31, decided by the next
    day's count), on a hire anniversary (the count without the Retirement Savings Plan's records), and on the
    days of a death, a separation (a retirement) and a change in control.
    """
    person = account.participation.person
    days: set[tuple[dt.date, dt.date]] = set()
    for year in range(start.year, through.year + 1):
        end = dt.date(year, 12, 31)
        if start <= end <= through:
            days.add((end, end + dt.timedelta(days=1)))
        try:
            anniversary = person.hire_date.replace(year=year)
        except ValueError:  # February 29 hired: the anniversary is March 1 in other years
            anniversary = dt.date(year, 3, 1)
        if start <= anniversary <= through:
            days.add((anniversary, anniversary))
    for day in EmploymentEvent.objects.filter(
        person=person,
        kind__in=[EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH],
        effective_date__gte=start,
        effective_date__lte=through,
    ).values_list("effective_date", flat=True):
        days.add((day, day))
    cic = change_in_control_between(start=start, end=through)
    while cic is not None:
        days.add((cic.effective_date, cic.effective_date))
        cic = change_in_control_between(start=cic.effective_date + dt.timedelta(days=1), end=through)
    return sorted(days)


def _account_facts(account: Account, through: dt.date) -> list[FicaFact]:
    participation = account.participation
    plan = participation.plan.code
    credits = list(
        PendingTransaction.objects.filter(
            account=account,
            kind=EntryKind.CREDIT,
            source__in=CREDIT_SOURCES,
            amount__gt=0,
            effective_date__lte=through,
        )
        .exclude(status=PendingTransaction.Status.CANCELLED)
        .order_by("effective_date", "id")
    )
    if not credits:
        return []
    immediate = all(
        vesting_rule(participation=participation, kind=account.kind, on=c.effective_date)["rule"]
        == "immediate"
        for c in credits
    )
    events: list[tuple[dt.date, int, object]] = [(c.effective_date, 0, c) for c in credits]
    if not immediate:
        events += [
            (day, 1, decide) for day, decide in _vesting_days(account, credits[0].effective_date, through)
        ]
    events.sort(key=lambda e: (e[0], e[1]))
    taken = ZERO  # the vested percentage already taken into account
    out: list[FicaFact] = []
    for day, order, item in events:
        if order == 0:
            assert isinstance(item, PendingTransaction)
            percent, cite = vested_percent(account=account, on=day) if not immediate else (HUNDRED, "")
            if not immediate and percent > taken:
                # what vests today is what the account held before today's credits; those follow at the new
                # percentage (each counted once)
                today = sum((c.amount for c in credits if c.effective_date == day), ZERO)
                out += _vesting(account, day, percent, taken, credits, through, excluding=today)
                taken = percent
            cite = cite or vesting_rule(participation=participation, kind=account.kind, on=day)["cite"]
            amount = money(item.amount * taken / HUNDRED) if not immediate else item.amount
            if amount > 0:
                deferral = item.source == Source.DEFERRAL
                out.append(
                    FicaFact(
                        participation,
                        day,
                        amount,
                        FicaWage.Kind.DEFERRAL if deferral else FicaWage.Kind.CREDIT,
                        f"{item.get_source_display()} to {account.name} ({plan})",
                        f"credit:{item.pk}",
                        f"{cite}; {REG}(a)(2)(ii)",
                    )
                )
            continue
        assert isinstance(item, dt.date)
        percent, _ = vested_percent(account=account, on=item)
        if percent > taken:
            out += _vesting(account, day, percent, taken, credits, through)
            taken = percent
    return out


def _vesting(
    account: Account,
    day: dt.date,
    percent: Decimal,
    taken: Decimal,
    credits: list[PendingTransaction],
    through: dt.date,
    excluding: Decimal = ZERO,
) -> list[FicaFact]:
    """The newly vested percentage of the account's value on `day` (less `excluding`: credits of the day counted
    apart); the part for earlier years' services apart."""
    participation = account.participation
    newly = percent - taken
    amount = money(max(ZERO, account_value(account=account, on=day) - excluding) * newly / HUNDRED)
    if amount <= 0:
        return []
    current = sum(
        (
            _credit_value(c, day)
            for c in credits
            if (c.effective_date < day or (c.effective_date == day and not excluding))
            and _service_year(c) >= day.year
        ),
        ZERO,
    )
    current_part = min(amount, money(current * newly / HUNDRED))
    cite = vesting_rule(participation=participation, kind=account.kind, on=day)["cite"]
    return [
        FicaFact(
            participation,
            day,
            amount,
            FicaWage.Kind.VESTING,
            f"{newly}% of {account.name} vested ({participation.plan.code}), at its value that day",
            f"vesting:{account.pk}:{day.isoformat()}:{percent}",
            f"{cite}; {REG}(a)(2)(ii)",
            amount - current_part,
        )
    ]


def _resolution_facts(participation: Participation, through: dt.date) -> list[FicaFact]:
    """A defined benefit: the present value at its Benefit Commencement Date of the payments from that day on."""
    out = []
    annuities = Annuity.objects.filter(
        participation=participation,
        status__in=(Annuity.Status.IN_PAY, Annuity.Status.COMPLETE),
        commencement_date__lte=through,
        monthly__isnull=False,
    ).exclude(trigger="death")  # a survivor benefit after the participant's death is not the employee's wages
    for annuity in annuities:
        start = annuity.commencement_date
        assert start is not None and annuity.monthly is not None
        cite = participation.plan.version_on(start).cite("funding")
        if annuity.form == "lump_sum":
            amount = annuity.monthly
        else:
            line = defined_benefit_value(participation=participation, as_of=start)
            if line.value is None:
                continue
            # the value on the day excludes the payment due that day (paid): add it back, it follows too
            first = annuity.first_payment_date or start
            amount = line.value + (annuity.monthly if first <= start else ZERO)
        out.append(
            FicaFact(
                participation,
                start,
                money(amount),
                FicaWage.Kind.RESOLUTION,
                f"{annuity.benefit or 'Benefit'} ({annuity.form_label or annuity.form}) resolved at its Benefit "
                f"Commencement Date, on the plan's actuarial basis",
                f"resolution:{annuity.pk}",
                f"{cite}; {REG}(c)",
                # a benefit for the service of earlier years, resolved now
                money(amount),
            )
        )
    return out


def fica_facts(*, participations: list[Participation], through: dt.date) -> list[FicaFact]:
    """Every amount taken into account as FICA wages through `through`, as the books show it."""
    out: list[FicaFact] = []
    for participation in participations:
        if participation.plan.kind == participation.plan.Kind.DEFINED_BENEFIT:
            out += _resolution_facts(participation, through)
            continue
        for account in Account.objects.filter(participation=participation).order_by("id"):
            out += _account_facts(account, through)
    out.sort(key=lambda f: (f.date, f.participation.pk, f.key))
    return out


def _feed_date(day: dt.date, taken: set[dt.date], pay_dates: list[dt.date]) -> dt.date | None:
    """The first pay date on or after `day` whose feed has not been taken (vesting between pay dates goes to the
    next feed; an amount found after its feed was taken goes to the next one still open)."""
    for pay_date in pay_dates[bisect.bisect_left(pay_dates, day) :]:
        if pay_date not in taken:
            return pay_date
    return None


@dataclass(frozen=True)
class RecordResult:
    written: int
    corrections: int
    unchanged: int


def fica_wages_record(
    *, through: dt.date, now: dt.datetime, participations: list[Participation] | None = None
) -> RecordResult:
    """Write the FicaWage rows of `fica_facts`; a rerun writes nothing; a figure the books changed gets a
    correcting row (the difference), so a feed already taken is never rewritten."""
    chosen = (
        participations
        if participations is not None
        else list(Participation.objects.select_related("plan", "person").order_by("id"))
    )
    facts = fica_facts(participations=chosen, through=through)
    taken = set(FeedTake.objects.values_list("feed_date", flat=True))
    # every pay date once (a few hundred a decade), for the feed each row goes to
    pay_dates = sorted(set(PayrollRecord.objects.values_list("pay_date", flat=True).distinct()))
    written = corrections = unchanged = 0
    with transaction.atomic():
        existing: dict[str, Decimal] = {}
        for key, amount in FicaWage.objects.filter(participation__in=chosen).values_list("key", "amount"):
            base = key.split("#", 1)[0]
            existing[base] = existing.get(base, ZERO) + amount
        counts: dict[str, int] = {}
        for key in FicaWage.objects.filter(participation__in=chosen, key__contains="#").values_list(
            "key", flat=True
        ):
            base = key.split("#", 1)[0]
            counts[base] = counts.get(base, 0) + 1
        seen = set()
        for fact in facts:
            seen.add(fact.key)
            had = existing.get(fact.key)
            if had == fact.amount:
                unchanged += 1
                continue
            delta = fact.amount - (had or ZERO)
            key = fact.key if had is None else f"{fact.key}#{counts.get(fact.key, 0) + 1}"
            FicaWage.objects.create(
                person=fact.participation.person,
                participation=fact.participation,
                date=fact.date,
                amount=delta,
                kind=fact.kind,
                source=fact.source if had is None else f"Correction: {fact.source}",
                prior_years_amount=fact.prior_years_amount
                if had is None
                else money(fact.prior_years_amount * delta / fact.amount if fact.amount else ZERO),
                feed_date=_feed_date(fact.date, taken, pay_dates),
                key=key,
                cite=fact.cite,
                recorded_at=now,
            )
            if had is None:
                written += 1
            else:
                corrections += 1
        # a fact the books no longer show (a credit reversed): its amount comes off, in a correcting row
        for base, amount in existing.items():
            if base in seen or amount == 0:
                continue
            first = FicaWage.objects.filter(key=base).first()
            if first is None:
                continue
            FicaWage.objects.create(
                person=first.person,
                participation=first.participation,
                date=first.date,
                amount=-amount,
                kind=first.kind,
                source=f"Correction: no longer in the books: {first.source}"[:200],
                prior_years_amount=-first.prior_years_amount,
                feed_date=_feed_date(first.date, taken, pay_dates),
                key=f"{base}#{counts.get(base, 0) + 1}",
                cite=first.cite,
                recorded_at=now,
            )
            corrections += 1
        # rows that had no pay date yet go to the first open one now known
        for row in FicaWage.objects.filter(participation__in=chosen, feed_date__isnull=True):
            feed = _feed_date(row.date, taken, pay_dates)
            if feed is not None:
                FicaWage.objects.filter(pk=row.pk, feed_date__isnull=True).update(feed_date=feed)
    return RecordResult(written=written, corrections=corrections, unchanged=unchanged)
