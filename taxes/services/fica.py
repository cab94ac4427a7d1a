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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import OuterRef, Subquery

from books.models import (
    Account,
    DailyValuation,
    EntryKind,
    LedgerEntry,
    PayrollRecord,
    PendingTransaction,
    Position,
    Source,
)
from books.selectors import account_values
from books.services.vesting import vested_percents, vesting_rule
from core.money import HUNDRED, ZERO, money
from participants.models import ChangeInControl, EmploymentEvent, Participation
from payments.liability import defined_benefit_value
from payments.models import Annuity
from plans.models import Plan, PlanTable
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


_CHUNK = 5000  # ids per IN list (SQLite's variable limit; simple PostgreSQL plans)


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


@dataclass
class _Books:
    """What the rule reads of the books, for every account of a batch at once (a handful of queries a day that
    matters, whatever the number of participants)."""

    through: dt.date
    credits: dict[int, list[PendingTransaction]]  # account id -> its credits, by effective date and id
    ended: dict[int, list[dt.date]]  # person id -> days of separation or death
    changes: list[dt.date]  # changes in control
    table_days: dict[tuple[int, str], list[dt.date]]  # (plan, table) -> days a version takes effect
    rules: dict[tuple[int, str, dt.date], dict]


def _rule_of(books: _Books, participation: Participation, kind: str, on: dt.date) -> dict:
    key = (participation.plan_id, kind, on)
    if key not in books.rules:
        books.rules[key] = vesting_rule(participation=participation, kind=kind, on=on)
    return books.rules[key]


def _read_books(accounts: list[Account], through: dt.date) -> _Books:
    credits: dict[int, list[PendingTransaction]] = {}
    for chunk in _chunks([a.id for a in accounts]):
        rows = (
            PendingTransaction.objects.filter(
                account_id__in=chunk,
                kind=EntryKind.CREDIT,
                source__in=CREDIT_SOURCES,
                amount__gt=0,
                effective_date__lte=through,
            )
            .exclude(status=PendingTransaction.Status.CANCELLED)
            .order_by("effective_date", "id")
        )
        for row in rows:
            credits.setdefault(row.account_id, []).append(row)
    ended: dict[int, list[dt.date]] = {}
    for chunk in _chunks(sorted({a.participation.person_id for a in accounts if a.id in credits})):
        for person_id, day in EmploymentEvent.objects.filter(
            person_id__in=chunk,
            kind__in=[EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH],
            effective_date__lte=through,
        ).values_list("person_id", "effective_date"):
            ended.setdefault(person_id, []).append(day)
    changes = list(
        ChangeInControl.objects.filter(effective_date__lte=through).values_list("effective_date", flat=True)
    )
    table_days: dict[tuple[int, str], list[dt.date]] = {}
    plan_ids = {a.participation.plan_id for a in accounts}
    for plan_id, code, day in PlanTable.objects.filter(
        plan_id__in=plan_ids, effective_date__lte=through
    ).values_list("plan_id", "code", "effective_date"):
        table_days.setdefault((plan_id, code), []).append(day)
    return _Books(through, credits, ended, changes, table_days, {})


def _vesting_days(
    account: Account, start: dt.date, books: _Books, tables: set[str]
) -> list[tuple[dt.date, dt.date]]:
    """(the day an increase would count, the day whose vested percentage decides it), in order.

    The percentage can rise only: at the end of a year of vesting service (December 31, decided by the next
    day's count), on a hire anniversary (the count without the Retirement Savings Plan's records), on the days
    of a death, a separation (a retirement) and a change in control, and on the day a new version of the
    vesting table takes effect (the Committee's table, plans.services.table_set).
    """
    through = books.through
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
    others = [*books.ended.get(person.id, []), *books.changes]
    for code in sorted(tables):
        others += books.table_days.get((account.participation.plan_id, code), [])
    days.update((day, day) for day in others if start <= day <= through)
    return sorted(days)


@dataclass(frozen=True)
class _Credit:
    """A credit taken into account at the percentage vested when credited."""

    account: Account
    item: PendingTransaction
    taken: Decimal
    cite: str


@dataclass(frozen=True)
class _Vest:
    """A rise of the vested percentage: the newly vested part of the account's value that day."""

    account: Account
    day: dt.date
    percent: Decimal
    taken: Decimal
    excluding: Decimal  # the day's credits, counted apart at the new percentage


def _account_plan(account: Account, books: _Books) -> tuple[list, bool, list[tuple[dt.date, dt.date]]]:
    """The account's credits, whether every one is vested when credited, and its vesting days."""
    credits = books.credits.get(account.id, [])
    if not credits:
        return [], True, []
    participation = account.participation
    rules = [_rule_of(books, participation, account.kind, c.effective_date) for c in credits]
    immediate = all(rule["rule"] == "immediate" for rule in rules)
    if immediate:
        return credits, True, []
    tables = {rule["schedule_table"] for rule in rules if rule.get("schedule_table")}
    return credits, False, _vesting_days(account, credits[0].effective_date, books, tables)


def _walk(
    account: Account,
    credits: list[PendingTransaction],
    immediate: bool,
    days: list[tuple[dt.date, dt.date]],
    percents: dict[tuple[int, dt.date], tuple[Decimal, str]],
) -> list[_Credit | _Vest]:
    """The account's credits and vesting days in order, with the vested percentage already taken into account."""
    events: list[tuple[dt.date, int, object]] = [(c.effective_date, 0, c) for c in credits]
    events += [(day, 1, decide) for day, decide in days]
    events.sort(key=lambda e: (e[0], e[1]))
    taken = ZERO  # the vested percentage already taken into account
    out: list[_Credit | _Vest] = []
    for day, order, item in events:
        if order == 0:
            assert isinstance(item, PendingTransaction)
            percent, cite = percents[(account.id, day)] if not immediate else (HUNDRED, "")
            if not immediate and percent > taken:
                # what vests today is what the account held before today's credits; those follow at the new
                # percentage (each counted once)
                today = sum((c.amount for c in credits if c.effective_date == day), ZERO)
                out.append(_Vest(account, day, percent, taken, today))
                taken = percent
            out.append(_Credit(account, item, HUNDRED if immediate else taken, cite))
            continue
        assert isinstance(item, dt.date)
        percent, _ = percents[(account.id, item)]
        if percent > taken:
            out.append(_Vest(account, day, percent, taken, ZERO))
            taken = percent
    return out


def _percents(
    plans: dict[int, tuple[list, bool, list]], by_id: dict[int, Account]
) -> dict[tuple[int, dt.date], tuple[Decimal, str]]:
    """Every vested percentage the walk asks for, read with vested_percents for all accounts of a day at once."""
    wanted: dict[dt.date, list[Account]] = {}
    for account_id, (credits, immediate, days) in plans.items():
        if immediate:
            continue
        for day in sorted({c.effective_date for c in credits} | {decide for _, decide in days}):
            wanted.setdefault(day, []).append(by_id[account_id])
    out: dict[tuple[int, dt.date], tuple[Decimal, str]] = {}
    for day in sorted(wanted):
        for account_id, answer in vested_percents(accounts=wanted[day], on=day).items():
            out[(account_id, day)] = answer
    return out


def _credit_prices(position_ids: set[int], on: dt.date) -> dict[int, Decimal]:
    """position id -> its price on the last Valuation Date on or before `on` that has a row for it."""
    latest = (
        DailyValuation.objects.filter(position_id=OuterRef("pk"), valuation_date__lte=on)
        .order_by("-valuation_date")
        .values("price")[:1]
    )
    out: dict[int, Decimal] = {}
    for chunk in _chunks(sorted(position_ids)):
        for pk, price in (
            Position.objects.filter(pk__in=chunk).annotate(p=Subquery(latest)).values_list("pk", "p")
        ):
            if price is not None:
                out[pk] = price
    return out


def _current_credits(vest: _Vest, books: _Books) -> list[PendingTransaction]:
    """The account's credits for services of the vesting year, held on the day (box 11 leaves them out)."""
    day = vest.day
    return [
        c
        for c in books.credits.get(vest.account.id, [])
        if (c.effective_date < day or (c.effective_date == day and not vest.excluding))
        and _service_year(c) >= day.year
    ]


def _held_value(
    credit: PendingTransaction,
    entries: dict[int, list[LedgerEntry]],
    prices: dict[int, Decimal],
    day: dt.date,
) -> Decimal:
    """What one credit's units are worth on `day` (its principal with the income attributable to it)."""
    mine = [e for e in entries.get(credit.pk, []) if e.valuation_date <= day]
    if not mine:
        return credit.amount
    return money(sum((e.units * prices.get(e.position_id, e.price) for e in mine), ZERO))


def _vest_facts(vests: list[_Vest], books: _Books) -> list[FicaFact]:
    """The vesting rows, the values of each day read for all of its accounts at once."""
    by_day: dict[dt.date, list[_Vest]] = {}
    for vest in vests:
        by_day.setdefault(vest.day, []).append(vest)
    current = {id(v): _current_credits(v, books) for v in vests}
    pendings = sorted({c.pk for cs in current.values() for c in cs})
    entries: dict[int, list[LedgerEntry]] = {}
    for chunk in _chunks(pendings):
        for entry in LedgerEntry.objects.filter(
            pending_id__in=chunk, valuation_date__lte=books.through
        ).order_by("id"):
            if entry.pending_id is not None:
                entries.setdefault(entry.pending_id, []).append(entry)
    out: list[FicaFact] = []
    for day in sorted(by_day):
        todo = by_day[day]
        values = account_values(accounts=[v.account for v in todo], on=day)
        held = {e.position_id for v in todo for c in current[id(v)] for e in entries.get(c.pk, [])}
        prices = _credit_prices(held, day) if held else {}
        for vest in todo:
            held_value = sum((_held_value(c, entries, prices, day) for c in current[id(vest)]), ZERO)
            out += _vesting(vest, values[vest.account.id], held_value, books)
    return out


def _account_facts(accounts: list[Account], through: dt.date) -> list[FicaFact]:
    books = _read_books(accounts, through)
    by_id = {a.id: a for a in accounts}
    plans = {a.id: _account_plan(a, books) for a in accounts if a.id in books.credits}
    percents = _percents(plans, by_id)
    out: list[FicaFact] = []
    vests: list[_Vest] = []
    for account_id, (credits, immediate, days) in plans.items():
        account = by_id[account_id]
        participation = account.participation
        plan = participation.plan.code
        for step in _walk(account, credits, immediate, days, percents):
            if isinstance(step, _Vest):
                vests.append(step)
                continue
            item = step.item
            cite = step.cite or _rule_of(books, participation, account.kind, item.effective_date)["cite"]
            amount = money(item.amount * step.taken / HUNDRED) if not immediate else item.amount
            if amount > 0:
                deferral = item.source == Source.DEFERRAL
                out.append(
                    FicaFact(
                        participation,
                        item.effective_date,
                        amount,
                        FicaWage.Kind.DEFERRAL if deferral else FicaWage.Kind.CREDIT,
                        f"{item.get_source_display()} to {account.name} ({plan})",
                        f"credit:{item.pk}",
                        f"{cite}; {REG}(a)(2)(ii)",
                    )
                )
    return out + _vest_facts(vests, books)


def _vesting(vest: _Vest, value: Decimal, current: Decimal, books: _Books) -> list[FicaFact]:
    """The newly vested percentage of the account's value on the day (less the credits of the day counted
    apart); the part for earlier years' services apart."""
    account, day = vest.account, vest.day
    participation = account.participation
    newly = vest.percent - vest.taken
    amount = money(max(ZERO, value - vest.excluding) * newly / HUNDRED)
    if amount <= 0:
        return []
    current_part = min(amount, money(current * newly / HUNDRED))
    cite = _rule_of(books, participation, account.kind, day)["cite"]
    return [
        FicaFact(
            participation,
            day,
            amount,
            FicaWage.Kind.VESTING,
            f"{newly}% of {account.name} vested ({participation.plan.code}), at its value that day",
            f"vesting:{account.pk}:{day.isoformat()}:{vest.percent}",
            f"{cite}; {REG}(a)(2)(ii)",
            amount - current_part,
        )
    ]


def _resolution_facts(participations: list[Participation], through: dt.date) -> list[FicaFact]:
    """A defined benefit: the present value at its Benefit Commencement Date of the payments from that day on.

    The annuities of the batch are read at once; each one resolved is valued on the plan's basis
    (payments.liability, one participant at a time: a benefit is resolved once, when it commences)."""
    by_id = {p.id: p for p in participations}
    annuities: list[Annuity] = []
    for chunk in _chunks(sorted(by_id)):
        annuities += Annuity.objects.filter(
            participation_id__in=chunk,
            status__in=(Annuity.Status.IN_PAY, Annuity.Status.COMPLETE),
            commencement_date__lte=through,
            monthly__isnull=False,
        ).exclude(
            trigger="death"
        )  # a survivor benefit after the participant's death is not the employee's wages
    out = []
    for annuity in annuities:
        participation = by_id[annuity.participation_id]
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
    """Every amount taken into account as FICA wages through `through`, as the books show it: read for the whole
    batch at once (the queries grow with the days that matter, not with the number of participants)."""
    plans: dict[int, Plan] = {}
    for participation in participations:  # one Plan instance a plan: its versions and provisions read once
        participation.plan = plans.setdefault(participation.plan_id, participation.plan)
    benefits = [p for p in participations if p.plan.kind == Plan.Kind.DEFINED_BENEFIT]
    holders = {p.id: p for p in participations if p.plan.kind != Plan.Kind.DEFINED_BENEFIT}
    accounts: list[Account] = []
    for chunk in _chunks(sorted(holders)):
        accounts += Account.objects.filter(participation_id__in=chunk).order_by("id")
    for account in accounts:
        account.participation = holders[account.participation_id]
    out = _resolution_facts(benefits, through) + _account_facts(accounts, through)
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


def _load(participations: list[Participation] | None) -> list[Participation]:
    """The participations with their plan and person, in a few queries (a caller's objects may lack them)."""
    chosen = Participation.objects.select_related("plan", "person").order_by("id")
    if participations is None:
        return list(chosen)
    out: list[Participation] = []
    for chunk in _chunks(sorted({p.id for p in participations})):
        out += chosen.filter(id__in=chunk)
    return out


def _recorded(ids: list[int] | None) -> tuple[dict[str, Decimal], dict[str, int]]:
    """What the rows already say: key -> amount (with its corrections), and key -> how many corrections."""
    existing: dict[str, Decimal] = {}
    counts: dict[str, int] = {}
    batches = (
        [FicaWage.objects.all()]
        if ids is None
        else [FicaWage.objects.filter(participation_id__in=chunk) for chunk in _chunks(ids)]
    )
    for rows in batches:
        for key, amount in rows.values_list("key", "amount"):
            base = key.split("#", 1)[0]
            existing[base] = existing.get(base, ZERO) + amount
            if "#" in key:
                counts[base] = counts.get(base, 0) + 1
    return existing, counts


def _new_rows(
    facts: list[FicaFact],
    existing: dict[str, Decimal],
    counts: dict[str, int],
    feed: Callable[[dt.date], dt.date | None],
    now: dt.datetime,
) -> tuple[list[FicaWage], int, int, int]:
    """The rows to write for the facts: a new fact, or the difference of one the books changed."""
    rows: list[FicaWage] = []
    written = corrections = unchanged = 0
    for fact in facts:
        had = existing.get(fact.key)
        if had == fact.amount:
            unchanged += 1
            continue
        delta = fact.amount - (had or ZERO)
        rows.append(
            FicaWage(
                person=fact.participation.person,
                participation=fact.participation,
                date=fact.date,
                amount=delta,
                kind=fact.kind,
                source=fact.source if had is None else f"Correction: {fact.source}",
                prior_years_amount=fact.prior_years_amount
                if had is None
                else money(fact.prior_years_amount * delta / fact.amount if fact.amount else ZERO),
                feed_date=feed(fact.date),
                key=fact.key if had is None else f"{fact.key}#{counts.get(fact.key, 0) + 1}",
                cite=fact.cite,
                recorded_at=now,
            )
        )
        if had is None:
            written += 1
        else:
            corrections += 1
    return rows, written, corrections, unchanged


def _gone_rows(
    seen: set[str],
    existing: dict[str, Decimal],
    counts: dict[str, int],
    feed: Callable[[dt.date], dt.date | None],
    now: dt.datetime,
) -> list[FicaWage]:
    """A fact the books no longer show (a credit reversed): its amount comes off, in a correcting row."""
    gone = sorted(base for base, amount in existing.items() if base not in seen and amount != 0)
    firsts: dict[str, FicaWage] = {}
    for start in range(0, len(gone), _CHUNK):
        for row in FicaWage.objects.filter(key__in=gone[start : start + _CHUNK]).select_related(
            "person", "participation"
        ):
            firsts[row.key] = row
    rows = []
    for base in gone:
        first = firsts.get(base)
        if first is None:
            continue
        rows.append(
            FicaWage(
                person=first.person,
                participation=first.participation,
                date=first.date,
                amount=-existing[base],
                kind=first.kind,
                source=f"Correction: no longer in the books: {first.source}"[:200],
                prior_years_amount=-first.prior_years_amount,
                feed_date=feed(first.date),
                key=f"{base}#{counts.get(base, 0) + 1}",
                cite=first.cite,
                recorded_at=now,
            )
        )
    return rows


def fica_wages_record(
    *, through: dt.date, now: dt.datetime, participations: list[Participation] | None = None
) -> RecordResult:
    """Write the FicaWage rows of `fica_facts`; a rerun writes nothing; a figure the books changed gets a
    correcting row (the difference), so a feed already taken is never rewritten.

    Set-based: the books are read for all the participations at once (fica_facts), the rows already written in
    one read, and the new rows written in bulk; the queries do not grow with the number of participants."""
    chosen = _load(participations)
    ids = None if participations is None else [p.id for p in chosen]
    facts = fica_facts(participations=chosen, through=through)
    taken = set(FeedTake.objects.values_list("feed_date", flat=True))
    # every pay date once (a few hundred a decade), for the feed each row goes to
    pay_dates = sorted(set(PayrollRecord.objects.values_list("pay_date", flat=True).distinct()))

    def feed(day: dt.date) -> dt.date | None:
        return _feed_date(day, taken, pay_dates)

    with transaction.atomic():
        existing, counts = _recorded(ids)
        rows, written, corrections, unchanged = _new_rows(facts, existing, counts, feed, now)
        gone = _gone_rows({f.key for f in facts}, existing, counts, feed, now)
        FicaWage.objects.bulk_create(rows + gone, batch_size=1000)
        corrections += len(gone)
        # rows that had no pay date yet go to the first open one now known
        waiting = FicaWage.objects.filter(feed_date__isnull=True)
        moves: dict[dt.date, list[int]] = {}
        for batch in (
            [waiting] if ids is None else [waiting.filter(participation_id__in=c) for c in _chunks(ids)]
        ):
            for pk, day in batch.values_list("pk", "date"):
                to = feed(day)
                if to is not None:
                    moves.setdefault(to, []).append(pk)
        for to, pks in sorted(moves.items()):
            for chunk in _chunks(sorted(pks)):
                FicaWage.objects.filter(pk__in=chunk, feed_date__isnull=True).update(feed_date=to)
    return RecordResult(written=written, corrections=corrections, unchanged=unchanged)
