"""What the Company owes under each plan on a date: the liability report.

The plans are unfunded promises (EDCP 10.1-10.2, RRP 8.02-8.03, BRP 10.2): the accounts are bookkeeping
records and benefits are paid from the Company's general assets or a rabbi trust. The committee needs the
liability on a date, and BRP 8.1 needs one figure in particular: immediately before a Change in Control the
Company funds a rabbi trust with "the then Actuarial Equivalent of the present value of the Supplemental
Benefits of all Participants and the survivor benefits of all Beneficiaries determined as a single lump sum
payment".

- Account plans: the value of every account at the end of the date (the last credited Valuation Date on or
  before it, plus credits waiting for their Valuation Date), split into vested and unvested by the plan's
  vesting rule (books.services.vesting.vested_percent, which names its section).
- Defined benefit plans, one line a participant, on the plan's actuarial basis (its `actuarial_basis`
  provision: mortality table and interest of the valuation date's month):
  * a benefit in pay: what has fallen due and is unpaid, at face, plus the monthly payments still to come
    valued as an annuity on the lives they depend on (participant, survivor, or both; a period certain for
    its remaining months), the first of them one month after the valuation date;
  * a participant who has not separated: the single lump sum of the benefit of a separation on the
    valuation date (BRP 4.2(c), the quote the participant's page shows);
  * a benefit the figures cannot yet give (a hold, a participant who would not be eligible if separated on
    the date) is listed as not valued with the reason, and counted apart: never as zero.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Sum

from books.models import Account
from core.money import HUNDRED, ZERO, money
from participants.models import EmploymentEvent, Participation
from plans import actuarial
from plans.models import Plan


@dataclass
class AccountLine:
    kind: str
    label: str
    accounts: int = 0
    value: Decimal = ZERO
    vested: Decimal = ZERO

    @property
    def unvested(self) -> Decimal:
        return self.value - self.vested


@dataclass
class BenefitLine:
    participation: Participation
    status: str
    value: Decimal | None
    method: str
    cite: str
    note: str = ""


@dataclass
class PlanLiability:
    plan: Plan
    as_of: dt.date
    cite: str
    reading: str
    valued_on: dt.date | None = None
    accounts: list[AccountLine] = field(default_factory=list)
    benefits: list[BenefitLine] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        if self.plan.kind == Plan.Kind.DEFINED_BENEFIT:
            return money(sum((b.value for b in self.benefits if b.value is not None), ZERO))
        return money(sum((a.value for a in self.accounts), ZERO))

    @property
    def vested(self) -> Decimal | None:
        return money(sum((a.vested for a in self.accounts), ZERO)) if self.accounts else None

    @property
    def not_valued(self) -> list[BenefitLine]:
        return [b for b in self.benefits if b.value is None]


def plan_liabilities(*, as_of: dt.date) -> list[PlanLiability]:
    """Every plan's liability at the end of `as_of`."""
    return [plan_liability(plan=plan, as_of=as_of) for plan in Plan.objects.order_by("code")]


def plan_liability(*, plan: Plan, as_of: dt.date) -> PlanLiability:
    version = plan.version_on(as_of)
    funding = version.provisions.filter(key="funding").first()
    report = PlanLiability(
        plan=plan,
        as_of=as_of,
        cite=version.cite("funding"),
        reading=funding.reading if funding is not None else "",
    )
    if plan.kind == Plan.Kind.DEFINED_BENEFIT:
        report.benefits = [
            defined_benefit_value(participation=p, as_of=as_of)
            for p in Participation.objects.filter(plan=plan)
            .select_related("person", "plan")
            .order_by("person__last_name", "person__first_name", "id")
        ]
    else:
        report.valued_on, report.accounts = _account_lines(plan, as_of)
    return report


# --- account plans -------------------------------------------------------------------------------------


def _account_lines(plan: Plan, as_of: dt.date) -> tuple[dt.date | None, list[AccountLine]]:
    from books.selectors import holdings_on, last_credited_on_or_before
    from books.services.vesting import vested_percent

    accounts = list(
        Account.objects.filter(participation__plan=plan)
        .select_related("participation__plan", "participation__person")
        .order_by("kind", "id")
    )
    holdings = holdings_on(accounts=accounts, on=as_of)
    version = plan.version_on(as_of)
    lines: dict[str, AccountLine] = {}
    for (
        spec
    ) in version.account_kinds():  # every sub-account of the plan, in the plan's order, even when empty
        lines[spec["kind"]] = AccountLine(kind=spec["kind"], label=spec.get("label") or spec["kind"])
    for account in accounts:
        value = holdings[account.id]["value"]
        line = lines.setdefault(
            account.kind, AccountLine(kind=account.kind, label=account.kind.replace("_", " ").title())
        )
        if value == ZERO:
            continue
        percent, _cite = vested_percent(account=account, on=as_of)
        line.accounts += 1
        line.value += value
        line.vested += money(value * percent / HUNDRED)
    return last_credited_on_or_before(day=as_of), list(lines.values())


# --- defined benefit plans ---------------------------------------------------------------------------


def _monthly_dates_through(first: dt.date, as_of: dt.date) -> int:
    """How many monthly payment dates (the day of `first`, each month) fall on or before `as_of`."""
    if first > as_of:
        return 0
    months = (as_of.year - first.year) * 12 + as_of.month - first.month
    return months + (1 if as_of.day >= first.day else 0)


def _certain(basis: actuarial.InterestBasis, months: int) -> float:
    """Value of 1 a year paid monthly for `months` months, the first one month from now."""
    return sum(basis.discount(m / 12) for m in range(1, months + 1)) / 12


FACTOR_PLACES = 9


def _factor(value: float) -> Decimal:
    """An annuity factor as a Decimal, rounded to FACTOR_PLACES decimals before it multiplies money."""
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-FACTOR_PLACES))


def _alive(died_on: dt.date | None, as_of: dt.date) -> bool:
    return died_on is None or died_on > as_of


def defined_benefit_value(*, participation: Participation, as_of: dt.date) -> BenefitLine:
    """One participant's line of the report (see the module docstring for the method)."""
    from books.brp.selectors import employment_event_dates
    from books.services.brp import BenefitError, brp_benefit_sheet
    from payments.models import Annuity

    version = participation.plan.version_on(as_of)
    cite = version.cite("funding")
    events = {k: d for k, d in employment_event_dates(participation=participation).items() if d <= as_of}
    death, sep = events.get(EmploymentEvent.Kind.DEATH), events.get(EmploymentEvent.Kind.SEPARATION)
    annuity = Annuity.objects.filter(participation=participation).select_related("record", "schedule").first()
    if (
        annuity is not None
        and annuity.status in (Annuity.Status.IN_PAY, Annuity.Status.COMPLETE)
        and annuity.monthly is not None
        and annuity.commencement_date is not None
    ):
        return _in_pay(participation, annuity, as_of=as_of, death=death, cite=cite)
    schedule = annuity.schedule if annuity is not None else None
    why = (schedule.hold_reason or schedule.summary) if schedule is not None else ""
    if annuity is not None and annuity.status == Annuity.Status.HELD:
        return BenefitLine(
            participation, "held", None, "not valued", cite, why or "the benefit is not fixed yet"
        )
    if death is not None:
        return BenefitLine(
            participation,
            "died before the benefit began",
            ZERO,
            "no survivor benefit is payable",
            version.cite("db_survivor"),
            why,
        )
    if sep is not None:
        return BenefitLine(
            participation,
            f"separated {sep:%b %-d, %Y}",
            None,
            "not valued",
            cite,
            why or "the benefit is not fixed yet",
        )
    try:
        quote = brp_benefit_sheet(participation=participation, separation_date=as_of, as_of=as_of)
    except BenefitError as exc:
        return BenefitLine(participation, "employed", None, "not valued", cite, str(exc))
    return BenefitLine(
        participation,
        "employed",
        quote.lump_sum_value,
        f"single lump sum of a separation on {as_of:%b %-d, %Y} ({quote.cites['forms']}); {quote.basis}",
        cite,
        "; ".join(quote.notes),
    )


def _in_pay(
    participation: Participation, annuity, *, as_of: dt.date, death: dt.date | None, cite: str
) -> BenefitLine:
    from payments.models import ScheduledPayment

    rule = participation.plan.version_on(as_of).provision("actuarial_basis") or {}
    table, _ = actuarial.mortality_table(as_of.year)
    basis, _ = actuarial.segment_rates_for(as_of, rule.get("lookback_months", 1))
    paid = (
        ScheduledPayment.objects.filter(
            schedule=annuity.schedule,
            status__in=(ScheduledPayment.Status.RELEASED, ScheduledPayment.Status.PAID),
            payment_date__lte=as_of,
        ).aggregate(t=Sum("amount"))["t"]
        or ZERO
    )
    monthly = annuity.monthly
    if annuity.form == "lump_sum":
        owed = max(ZERO, monthly - paid)
        return BenefitLine(
            participation,
            "lump sum" + (" paid" if owed == 0 else " due"),
            money(owed),
            "the lump sum, at face",
            cite,
        )
    start = annuity.commencement_date
    record = annuity.record
    spouse_birth = record.spouse_birth_date if record is not None else None
    survivor_alive = _alive(annuity.survivor_died_on, as_of)
    spouse = actuarial.Life.on(spouse_birth, as_of) if spouse_birth else None
    method = f"{table.name}; {basis.label}; factors to {FACTOR_PLACES} decimals"
    if (
        annuity.trigger == "death"
    ):  # the Pre-Retirement Survivor Benefit: a life annuity to the Spouse (BRP 5.1)
        owed = max(ZERO, monthly * _monthly_dates_through(start, as_of) - paid)
        if spouse is None:
            return BenefitLine(
                participation,
                "survivor benefit in pay",
                None,
                "not valued",
                cite,
                "the Spouse's date of birth is not on file",
            )
        future = (
            monthly * _factor(12 * actuarial.annuity_life(table, spouse, basis) - 1)
            if survivor_alive
            else ZERO
        )
        return BenefitLine(
            participation,
            "survivor benefit in pay",
            money(owed + future),
            f"{monthly:,.2f} a month for the Spouse's life; {method}",
            cite,
        )
    survivor_monthly = annuity.survivor_monthly or ZERO
    if death is None or _alive(death, as_of):
        due = _monthly_dates_through(start, as_of)
        owed = max(
            ZERO, monthly * due - paid
        )  # fallen due and unpaid (a Key Employee's missed months, BRP 4.3)
        participant = actuarial.Life.on(participation.person.birth_date, as_of)
        if annuity.certain_months:
            left = max(0, annuity.certain_months - due)
            a = 12 * actuarial.annuity_certain_and_life(table, participant, basis, left + 1) - 1
        else:
            a = 12 * actuarial.annuity_life(table, participant, basis) - 1
        future = monthly * _factor(a)
        if annuity.survivor_percent and survivor_alive:
            if spouse is None:
                return BenefitLine(
                    participation,
                    "in pay",
                    None,
                    "not valued",
                    cite,
                    "the survivor's date of birth is not on file",
                )
            # the survivor's part, paid after the participant's death while the survivor lives: ä(y) - ä(xy)
            reversion = 12 * (
                actuarial.annuity_life(table, spouse, basis)
                - actuarial.annuity_joint(table, participant, spouse, basis)
            )
            future += survivor_monthly * _factor(reversion)
        return BenefitLine(
            participation,
            "in pay",
            money(owed + future),
            f"{annuity.form_label or annuity.form}, {monthly:,.2f} a month; {method}",
            cite,
        )
    # The participant has died: the payments due to the participant stop with the month of death; a survivor's
    # part, or the rest of a period certain, goes on.
    to_participant = _monthly_dates_through(start, death)
    after = _monthly_dates_through(start, as_of) - to_participant
    owed_after, future = ZERO, ZERO
    if annuity.survivor_percent:
        survivor_through = min(as_of, annuity.survivor_died_on) if annuity.survivor_died_on else as_of
        owed_after = survivor_monthly * max(
            0, _monthly_dates_through(start, survivor_through) - to_participant
        )
        if spouse is not None and survivor_alive:
            future = survivor_monthly * _factor(12 * actuarial.annuity_life(table, spouse, basis) - 1)
    elif annuity.certain_months:
        certain_after = max(0, min(annuity.certain_months - to_participant, after))
        owed_after = monthly * certain_after
        left = max(0, annuity.certain_months - to_participant - after)
        future = monthly * _factor(12 * _certain(basis, left))
    owed = max(ZERO, monthly * to_participant + owed_after - paid)
    status = "in pay to the survivor" if future else "ended at death"
    return BenefitLine(
        participation,
        status,
        money(owed + future),
        f"{annuity.form_label or annuity.form}, {monthly:,.2f} a month; {method}",
        cite,
    )
