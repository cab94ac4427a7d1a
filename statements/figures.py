"""The figures of the quarterly statements, read for a whole batch of participations at once.

Five set-based reads per batch, whatever its size: the positions with their values at the two
Valuation Dates that bound the period (and the year's start), the ledger entries of the year to date
summed by position, kind, source and Valuation Date, the daily earnings of the period summed by
position, and the elections, beneficiaries and scheduled payments of the batch. Then, in Python, each
statement's figures are assembled and tied: for every fund of every account, beginning + activity +
earnings = ending (money) and beginning units + ledger units = ending units; an account or a plan
total that does not tie raises StatementNotTied naming the account, and the statement is not issued.

The personal rate of return is the Modified Dietz return (`modified_dietz`), for the quarter and the
year to date, on the participant's whole balance in the plan; exchanges between funds are not flows.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Sum

from books.models import Account, DailyValuation, EntryKind, LedgerEntry, Position, Source
from books.services.vesting import vested_percents
from core import valuation_calendar as cal
from core.errors import ApplicationError
from core.jobs import last_credited_date
from core.money import HUNDRED, ZERO, money
from elections.models import (
    DeferralElection,
    DistributionElection,
    InvestmentElection,
    Status,
)
from participants.models import BeneficiaryDesignation, Participation
from payments.models import ScheduledPayment

RATE_PLACES = Decimal("0.0001")  # a return as a fraction: 0.0123 is 1.23%
NEXT_PAYMENTS = 3
SOURCE_LABELS = dict(Source.choices)


class StatementNotTied(ApplicationError):
    """A statement whose figures do not add up to the ledger: it is not issued."""

    def __init__(self, *, account: str, detail: str) -> None:
        super().__init__(f"{account}: {detail}")
        self.account = account
        self.detail = detail


class PeriodNotCredited(ApplicationError):
    """The period's last Valuation Date has not been credited yet: no statement can be made."""


# --- the Modified Dietz return ------------------------------------------------------------------------


@dataclass(frozen=True)
class Dietz:
    """R = (E - B - F) / (B + sum(W_i * F_i)), W_i = (CD - D_i) / CD.

    CD: the calendar days of the period (from the close of the day before it starts to its last day);
    D_i: the days from that close to the close of the Valuation Date on which flow F_i was credited.
    """

    beginning: Decimal
    ending: Decimal
    net_flows: Decimal
    weighted_flows: Decimal
    gain: Decimal
    days: int
    rate: Decimal | None  # None: nothing was invested during the period (the denominator is not positive)

    @property
    def percent(self) -> str:
        if self.rate is None:
            return "n/a"
        return f"{(self.rate * HUNDRED).quantize(Decimal('0.01'))}%"


def modified_dietz(
    *, beginning: Decimal, ending: Decimal, flows: list[tuple[dt.date, Decimal]], start: dt.date, end: dt.date
) -> Dietz:
    """The Modified Dietz return of a balance from the close of `start - 1 day` to the close of `end`."""
    opened = start - dt.timedelta(days=1)
    days = (end - opened).days
    net = sum((amount for _, amount in flows), ZERO)
    weighted = sum((amount * Decimal((end - day).days) / Decimal(days) for day, amount in flows), Decimal(0))
    gain = ending - beginning - net
    denominator = beginning + weighted
    rate = (gain / denominator).quantize(RATE_PLACES) if denominator > 0 else None
    return Dietz(
        beginning=beginning,
        ending=ending,
        net_flows=money(net),
        weighted_flows=money(weighted),
        gain=money(gain),
        days=days,
        rate=rate,
    )


# --- the figures -----------------------------------------------------------------------------------


@dataclass
class FundLine:
    code: str
    name: str
    units_begin: Decimal = Decimal(0)
    units_end: Decimal = Decimal(0)
    units_ledger: Decimal = Decimal(0)
    price_begin: Decimal | None = None
    price_end: Decimal | None = None
    value_begin: Decimal = ZERO
    value_end: Decimal = ZERO
    activity: Decimal = ZERO  # every ledger amount of the period (exchanges included)
    exchanges: Decimal = ZERO
    earnings: Decimal = ZERO


@dataclass
class AccountFigures:
    account_id: int
    name: str
    label: str
    beginning: Decimal = ZERO
    credits: dict[str, Decimal] = field(default_factory=dict)  # source -> amount
    distributions: Decimal = ZERO
    forfeitures: Decimal = ZERO
    exchanges: Decimal = ZERO
    adjustments: Decimal = ZERO
    earnings: Decimal = ZERO
    ending: Decimal = ZERO
    vested_percent: Decimal = HUNDRED
    vesting_cite: str = ""
    funds: list[FundLine] = field(default_factory=list)

    @property
    def vested(self) -> Decimal:
        return money(self.ending * self.vested_percent / HUNDRED)

    @property
    def unvested(self) -> Decimal:
        return self.ending - self.vested

    @property
    def activity(self) -> Decimal:
        return (
            sum(self.credits.values(), ZERO)
            + self.distributions
            + self.forfeitures
            + self.exchanges
            + self.adjustments
        )


@dataclass
class StatementFigures:
    participation: Participation
    period_start: dt.date
    period_end: dt.date
    begin_date: dt.date | None  # the Valuation Date whose close opens the period
    end_date: dt.date  # the Valuation Date whose close ends it
    accounts: list[AccountFigures] = field(default_factory=list)
    quarter: Dietz | None = None
    year: Dietz | None = None
    deferral: list[str] = field(default_factory=list)
    distribution: list[str] = field(default_factory=list)
    investment: list[str] = field(default_factory=list)
    beneficiaries: list[str] = field(default_factory=list)
    next_payments: list[ScheduledPayment] = field(default_factory=list)

    def total(self, name: str) -> Decimal:
        return sum((getattr(a, name) for a in self.accounts), ZERO)

    def credits_by_source(self) -> dict[str, Decimal]:
        out: dict[str, Decimal] = defaultdict(lambda: ZERO)
        for a in self.accounts:
            for source, amount in a.credits.items():
                out[source] += amount
        return dict(sorted(out.items()))

    @property
    def vested(self) -> Decimal:
        return self.total("vested")

    @property
    def unvested(self) -> Decimal:
        return self.total("unvested")


def quarter_bounds(*, period_end: dt.date) -> tuple[dt.date, dt.date]:
    """(first day, last day) of the calendar quarter ending on `period_end`; a ValueError otherwise."""
    if (period_end.month, period_end.day) not in {(3, 31), (6, 30), (9, 30), (12, 31)}:
        raise ValueError(f"{period_end} is not the last day of a calendar quarter")
    return dt.date(period_end.year, period_end.month - 2, 1), period_end


def closing_valuation_date(*, day: dt.date) -> dt.date | None:
    """The last Valuation Date on or before `day` (None before the calendar begins)."""
    try:
        return cal.last_valuation_date(day)
    except ValueError:
        return None


def period_dates(*, period_end: dt.date) -> tuple[dt.date, dt.date, dt.date | None, dt.date, dt.date | None]:
    """(start, end, opening Valuation Date, closing Valuation Date, the year's opening Valuation Date);
    refused while the closing Valuation Date is not credited."""
    start, end = quarter_bounds(period_end=period_end)
    closing = closing_valuation_date(day=end)
    credited = last_credited_date(before=end + dt.timedelta(days=1))
    if closing is None or credited is None or credited < closing:
        raise PeriodNotCredited(
            f"The Valuation Date {closing} that closes the quarter to {end} is not credited yet "
            f"(last credited: {credited}); statements show credited values only (EDCP 7.2, RRP 3.05(c))."
        )
    opening = closing_valuation_date(day=start - dt.timedelta(days=1))
    year_opening = closing_valuation_date(day=dt.date(end.year, 1, 1) - dt.timedelta(days=1))
    return start, end, opening, closing, year_opening


def _dated_values(
    position_ids: list[int], day: dt.date | None
) -> dict[int, tuple[Decimal, Decimal, Decimal]]:
    if day is None or not position_ids:
        return {}
    return {
        pos: (units, price, value)
        for pos, units, price, value in DailyValuation.objects.filter(
            valuation_date=day, position_id__in=position_ids
        ).values_list("position_id", "units", "price", "value")
    }


def _label(account: Account, versions: dict) -> str:
    version = versions[account.participation.plan_id]
    spec = version.account_spec(account.kind)
    base = spec["label"] if spec else account.kind.replace("_", " ").title()
    if account.specified_month:
        return f"{base} ({account.specified_month:%B %Y})"
    return base


def statement_figures(
    *, participations: list[Participation], period_end: dt.date
) -> dict[int, StatementFigures]:
    """participation id -> its quarter's figures (not yet tied: `statement_tie` checks them)."""
    start, end, opening, closing, year_opening = period_dates(period_end=period_end)
    ids = [p.id for p in participations]
    versions = {p.plan_id: p.plan.version_on(end) for p in participations}
    accounts = list(Account.objects.filter(participation_id__in=ids))
    by_id = {p.id: p for p in participations}
    for account in accounts:  # the batch's own objects: one Plan per plan, its provisions read once
        account.participation = by_id[account.participation_id]
    positions = list(Position.objects.filter(account__participation_id__in=ids).select_related("fund"))
    position_ids = [p.id for p in positions]
    begin_values = _dated_values(position_ids, opening)
    end_values = _dated_values(position_ids, closing)
    year_values = begin_values if year_opening == opening else _dated_values(position_ids, year_opening)

    # The ledger of the year to date, summed by position, kind, source and Valuation Date.
    ledger = LedgerEntry.objects.filter(position_id__in=position_ids, valuation_date__lte=closing)
    if year_opening is not None:
        ledger = ledger.filter(valuation_date__gt=year_opening)
    rows = list(
        ledger.values("position_id", "kind", "source", "valuation_date").annotate(
            amount=Sum("amount"), units=Sum("units")
        )
    )
    earnings_qs = DailyValuation.objects.filter(position_id__in=position_ids, valuation_date__lte=closing)
    if opening is not None:
        earnings_qs = earnings_qs.filter(valuation_date__gt=opening)
    earnings = dict(
        earnings_qs.values("position_id").annotate(e=Sum("earnings")).values_list("position_id", "e")
    )

    out: dict[int, StatementFigures] = {
        p.id: StatementFigures(
            participation=p, period_start=start, period_end=end, begin_date=opening, end_date=closing
        )
        for p in participations
    }
    by_account: dict[int, AccountFigures] = {}
    ordered = sorted(accounts, key=lambda a: (a.kind, a.specified_month or dt.date.min, a.id))
    # one answer per participation and kind of account (EDCP 4.2, RRP 3.06), for the whole batch in one read
    first: dict[tuple[int, str], Account] = {}
    for account in ordered:
        first.setdefault((account.participation_id, account.kind), account)
    percents = vested_percents(accounts=list(first.values()), on=end)
    vesting = {key: percents[account.id] for key, account in first.items()}
    for account in ordered:
        key = (account.participation_id, account.kind)
        figures = AccountFigures(
            account_id=account.id,
            name=str(account.name),
            label=_label(account, versions),
            vested_percent=vesting[key][0],
            vesting_cite=vesting[key][1],
        )
        by_account[account.id] = figures
        out[account.participation_id].accounts.append(figures)
    lines: dict[int, FundLine] = {}
    for pos in sorted(positions, key=lambda p: (p.fund.code, p.id)):
        line = FundLine(code=pos.fund.code, name=pos.fund.name)
        if pos.id in begin_values:
            line.units_begin, line.price_begin, line.value_begin = begin_values[pos.id]
        if pos.id in end_values:
            line.units_end, line.price_end, line.value_end = end_values[pos.id]
        line.earnings = earnings.get(pos.id, ZERO)
        lines[pos.id] = line
        by_account[pos.account_id].funds.append(line)
    account_of = {pos.id: pos.account_id for pos in positions}
    participation_of = {a.id: a.participation_id for a in accounts}
    flows = _post_ledger(rows, lines, by_account, account_of, participation_of, opening)
    for figures in by_account.values():
        figures.beginning = sum((line.value_begin for line in figures.funds), ZERO)
        figures.ending = sum((line.value_end for line in figures.funds), ZERO)
        figures.earnings = sum((line.earnings for line in figures.funds), ZERO)
    for pid, statement in out.items():
        quarter_flows = [(d, a) for d, a in flows[pid] if opening is None or d > opening]
        ending = statement.total("ending")
        statement.quarter = modified_dietz(
            beginning=statement.total("beginning"), ending=ending, flows=quarter_flows, start=start, end=end
        )
        year_positions = [pos.id for pos in positions if participation_of[pos.account_id] == pid]
        year_beginning = sum((year_values[p][2] for p in year_positions if p in year_values), ZERO)
        statement.year = modified_dietz(
            beginning=year_beginning, ending=ending, flows=flows[pid], start=dt.date(end.year, 1, 1), end=end
        )
    _elections(out, end)
    return out


def _post_ledger(
    rows: list[Any],
    lines: dict[int, FundLine],
    by_account: dict[int, AccountFigures],
    account_of: dict[int, int],
    participation_of: dict[int, int],
    opening: dt.date | None,
) -> dict[int, list[tuple[dt.date, Decimal]]]:
    """The year's ledger sums into the quarter's activity by account, fund and source; returns the external
    flows of the year to date by participation (exchanges between funds are not flows)."""
    flows: dict[int, list[tuple[dt.date, Decimal]]] = defaultdict(list)
    for row in rows:
        account_id = account_of[row["position_id"]]
        participation_id = participation_of[account_id]
        amount, kind, day = row["amount"], row["kind"], row["valuation_date"]
        if kind != EntryKind.EXCHANGE:
            flows[participation_id].append((day, amount))
        if opening is not None and day <= opening:
            continue  # the year before the quarter: Modified Dietz of the year only
        line = lines[row["position_id"]]
        line.activity += amount
        line.units_ledger += row["units"]
        figures = by_account[account_id]
        if kind == EntryKind.CREDIT:
            figures.credits[row["source"]] = figures.credits.get(row["source"], ZERO) + amount
        elif kind == EntryKind.DISTRIBUTION:
            figures.distributions += amount
        elif kind == EntryKind.FORFEITURE:
            figures.forfeitures += amount
        elif kind == EntryKind.EXCHANGE:
            figures.exchanges += amount
            line.exchanges += amount
        else:
            figures.adjustments += amount
    return flows


def statement_tie(*, figures: StatementFigures) -> None:
    """Every figure ties to the ledger, or StatementNotTied names the account (the statement is not issued)."""
    for account in figures.accounts:
        for line in account.funds:
            if line.value_begin + line.activity + line.earnings != line.value_end:
                raise StatementNotTied(
                    account=account.name,
                    detail=f"fund {line.code}: beginning {line.value_begin} + activity {line.activity} + earnings "
                    f"{line.earnings} is not the ending value {line.value_end}",
                )
            if line.units_begin + line.units_ledger != line.units_end:
                raise StatementNotTied(
                    account=account.name,
                    detail=f"fund {line.code}: {line.units_begin} units + {line.units_ledger} units posted is not "
                    f"the {line.units_end} units held",
                )
        if account.beginning + account.activity + account.earnings != account.ending:
            raise StatementNotTied(
                account=account.name,
                detail=f"beginning {account.beginning} + activity {account.activity} + earnings {account.earnings} "
                f"is not the ending balance {account.ending}",
            )
        if account.vested + account.unvested != account.ending:
            raise StatementNotTied(account=account.name, detail="vested + unvested is not the ending balance")


def _elections(out: dict[int, StatementFigures], end: dt.date) -> None:
    """The elections in force at the end of the period, the beneficiaries on file and the next payments."""
    _deferrals(out, end)
    _distributions(out, end)
    _investments(out, end)
    _beneficiaries(out, end)
    _next_payments(out, end)


def _deferrals(out: dict[int, StatementFigures], end: dt.date) -> None:
    ids, year = list(out), end.year
    deferrals: dict[int, DeferralElection] = {}
    for election in (
        DeferralElection.objects.filter(
            participation_id__in=ids,
            status=Status.ACCEPTED,
            plan_year__lte=year,
            kind__in=[DeferralElection.Kind.ANNUAL, DeferralElection.Kind.FIRST_YEAR],
        )
        .prefetch_related("lines")
        .order_by("plan_year", "submitted_at", "id")
    ):
        version = out[election.participation_id].participation.plan.version_on(dt.date(year, 1, 1))
        if election.plan_year == year or version.provision("evergreen", False):
            deferrals[election.participation_id] = election
    for pid, election in deferrals.items():
        version = out[pid].participation.plan.version_on(end)
        for line in election.lines.all():
            component = version.component(line.component)
            label = component["label"] if component else line.component
            out[pid].deferral.append(
                f"{label}: {line.percent.normalize():f}% (plan year {election.plan_year} election)"
            )


def _distributions(out: dict[int, StatementFigures], end: dt.date) -> None:
    ids = list(out)
    for d in DistributionElection.objects.filter(
        participation_id__in=ids, status=Status.ACCEPTED, submitted_at__date__lte=end
    ).order_by("account_kind", "specified_month", "submitted_at", "id"):
        form = d.get_form_display()
        if d.installments:
            form += f", {d.installments} installments"
        account = d.account_kind.replace("_", " ")
        if d.specified_month:
            account += f" ({d.specified_month:%B %Y})"
        text = f"{account}: {form}"
        # the latest election for an account replaces the earlier ones
        kept = [t for t in out[d.participation_id].distribution if not t.startswith(f"{account}:")]
        out[d.participation_id].distribution = [*kept, text]


def _investments(out: dict[int, StatementFigures], end: dt.date) -> None:
    ids = list(out)
    investments: dict[int, InvestmentElection] = {}
    for found in (
        InvestmentElection.objects.filter(
            participation_id__in=ids,
            status=Status.ACCEPTED,
            effective_on__lte=end,
            applies_to__in=[InvestmentElection.AppliesTo.FUTURE, InvestmentElection.AppliesTo.BOTH],
        )
        .prefetch_related("lines__fund")
        .order_by("effective_on", "submitted_at", "id")
    ):
        investments[found.participation_id] = found
    for pid, statement in out.items():
        election = investments.get(pid)
        if election is None:
            version = statement.participation.plan.version_on(end)
            statement.investment.append(
                f"No investment election: credits go to the default fund ({version.cite('default_fund_rule')})."
            )
        else:
            for line in election.lines.all():
                statement.investment.append(
                    f"{line.fund.code} {line.fund.name}: {line.percent}% (effective {election.effective_on:%B %-d, %Y})"
                )


def _beneficiaries(out: dict[int, StatementFigures], end: dt.date) -> None:
    designations: dict[tuple[int, int], BeneficiaryDesignation] = {}
    person_plan = {(s.participation.person_id, s.participation.plan_id): pid for pid, s in out.items()}
    for received in (
        BeneficiaryDesignation.objects.filter(
            person_id__in={k[0] for k in person_plan}, received_at__date__lte=end
        )
        .prefetch_related("beneficiaries")
        .order_by("received_at", "id")
    ):
        designations[(received.person_id, received.plan_id)] = received
    for key, pid in person_plan.items():
        designation = designations.get(key)
        if designation is None:
            out[pid].beneficiaries.append("None on file: the plan's default beneficiary applies.")
            continue
        for b in designation.beneficiaries.all():
            relation = f", {b.relationship}" if b.relationship else ""
            out[pid].beneficiaries.append(f"{b.get_tier_display()}: {b.name}{relation}, {b.percent}%")


def _next_payments(out: dict[int, StatementFigures], end: dt.date) -> None:
    ids = list(out)
    counted: dict[int, int] = defaultdict(int)
    for payment in (
        ScheduledPayment.objects.filter(participation_id__in=ids, payment_date__gt=end)
        .exclude(status__in=[ScheduledPayment.Status.CANCELLED, ScheduledPayment.Status.PAID])
        .select_related("account")
        .order_by("participation_id", "payment_date", "account_id", "number")
    ):
        if counted[payment.participation_id] < NEXT_PAYMENTS:
            out[payment.participation_id].next_payments.append(payment)
            counted[payment.participation_id] += 1
