"""The defined benefit half of the plan liability report (books.liability; BRP 8.1): one line per participant,
a benefit in pay valued on the plan's actuarial basis, a benefit to come as the lump sum of a separation on
the date. It lives here because it reads annuities and their payments (payments) and the benefit (pensions);
books asks for it through core.hooks ("defined_benefit_value")."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from types import SimpleNamespace

from django.db.models import Sum

from books.liability import BenefitLine
from core import memo
from core.money import ZERO, money
from participants.models import EmploymentEvent, Participation
from payments.models import Annuity, ScheduledPayment
from pensions.selectors import employment_event_dates, employment_event_dates_seed
from pensions.services.benefit import BenefitError, brp_benefit_sheet, pension_figures_seed
from plans import actuarial

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


def defined_benefit_values(*, participations: list[Participation], as_of: dt.date) -> list[BenefitLine]:
    """The lines of many participants, to the cent the lines of `defined_benefit_value` one at a time: their
    figures, employment events, benefits in pay and payments read once for all of them, and the Key Employee
    lists, IRS figures and actuarial factors once per run (core.memo). Give them one Plan instance (its versions
    and provisions are then read once)."""
    with memo.run_memo():
        employment_event_dates_seed(participations=participations)
        pension_figures_seed(participations=participations, as_of=as_of)
        _in_pay_seed(participations=participations, as_of=as_of)
        return [defined_benefit_value(participation=p, as_of=as_of) for p in participations]


def _in_pay_seed(*, participations: list[Participation], as_of: dt.date) -> None:
    """The benefit in pay of each participant, and what has been paid on it by `as_of`, read at once (core.memo)."""
    annuities: dict[int, Annuity] = {}
    for annuity in (
        Annuity.objects.filter(participation__in=participations)
        .select_related("record", "schedule")
        .order_by("participation_id", "pk")
    ):
        annuities.setdefault(annuity.participation_id, annuity)
    for p in participations:
        memo.seed(("annuity", p.pk), annuities.get(p.pk))
    schedules = {a.schedule_id for a in annuities.values() if a.schedule_id is not None}
    paid = {(s, pre): ZERO for s in schedules for pre in (False, True)}
    released: set[int] = set()
    for schedule_id, benefit, kind, amount in (
        _paid_rows(as_of)
        .filter(schedule_id__in=schedules)
        .values_list("schedule_id", "benefit", "kind", "amount")
    ):
        pre = benefit.startswith("Pre-2005")
        paid[(schedule_id, pre)] += amount
        if pre and kind == ScheduledPayment.Kind.LUMP_SUM:
            released.add(schedule_id)
    for (schedule_id, pre), total in paid.items():
        memo.seed(("annuity_paid", schedule_id, pre, as_of), total)
    for schedule_id in schedules:
        memo.seed(("pre_2005_cash_out_released", schedule_id, as_of), schedule_id in released)


def _paid_rows(as_of: dt.date):
    return ScheduledPayment.objects.filter(
        status__in=(ScheduledPayment.Status.RELEASED, ScheduledPayment.Status.PAID),
        payment_date__lte=as_of,
    )


def defined_benefit_value(*, participation: Participation, as_of: dt.date) -> BenefitLine:
    """One participant's line of the report (see the module docstring for the method)."""

    version = participation.plan.version_on(as_of)
    cite = version.cite("funding")
    events = {k: d for k, d in employment_event_dates(participation=participation).items() if d <= as_of}
    death, sep = events.get(EmploymentEvent.Kind.DEATH), events.get(EmploymentEvent.Kind.SEPARATION)
    annuity = memo.remember(
        ("annuity", participation.pk),
        lambda: (
            Annuity.objects.filter(participation=participation).select_related("record", "schedule").first()
        ),
    )
    if (
        annuity is not None
        and annuity.status in (Annuity.Status.IN_PAY, Annuity.Status.COMPLETE)
        and annuity.monthly is not None
        and annuity.commencement_date is not None
    ):
        line = _in_pay(participation, annuity, as_of=as_of, death=death, cite=cite)
        if annuity.pre_2005:
            line = _with_pre_2005(line, participation, annuity, as_of=as_of, death=death, cite=cite)
        return line
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
        # BRP 8.1 values the single lump sum: the other forms of 4.2(c) are not converted for the report.
        quote = brp_benefit_sheet(
            participation=participation, separation_date=as_of, as_of=as_of, every_form=False
        )
    except BenefitError as exc:
        return BenefitLine(participation, "employed", None, "not valued", cite, str(exc))
    value, method = (
        quote.lump_sum_value,
        f"single lump sum of a separation on {as_of:%b %-d, %Y} ({quote.cites['forms']})",
    )
    if quote.pre_2005 is not None:  # BRP Appendix A: the two parts apart, each as its single lump sum
        value += quote.pre_2005.lump_sum_value
        method += (
            f": Post-2004 {quote.lump_sum_value:,.2f} plus Pre-2005 {quote.pre_2005.lump_sum_value:,.2f} "
            f"({quote.pre_2005.cite})"
        )
    return BenefitLine(
        participation, "employed", value, f"{method}; {quote.basis}", cite, "; ".join(quote.notes)
    )


def _with_pre_2005(
    line: BenefitLine,
    participation: Participation,
    annuity,
    *,
    as_of: dt.date,
    death: dt.date | None,
    cite: str,
) -> BenefitLine:
    """BRP Appendix A: the Pre-2005 Supplemental Benefit is paid apart, in the Pension Plan's form: valued apart on
    the same basis and added, each part named."""
    pre = annuity.pre_2005
    if pre.get("cash_out"):  # BRP App. A 4: one lump sum replaced the rest; at face until it is released
        cash = pre["cash_out"]
        released = memo.remember(
            ("pre_2005_cash_out_released", annuity.schedule_id, as_of),
            lambda: (
                _paid_rows(as_of)
                .filter(
                    schedule=annuity.schedule,
                    benefit__startswith="Pre-2005",
                    kind=ScheduledPayment.Kind.LUMP_SUM,
                )
                .exists()
            ),
        )
        owed = ZERO if released else Decimal(cash["amount"])
        value = None if line.value is None else line.value + owed
        return BenefitLine(
            participation,
            line.status,
            value,
            f"Post-2004: {line.method}; Pre-2005 ({cash['cite']}): the lump sum of {cash['on']}, at face "
            f"{owed:,.2f}",
            cite,
            line.note,
        )
    part = SimpleNamespace(
        schedule=annuity.schedule,
        monthly=Decimal(pre["monthly"]),
        form=pre["form"],
        form_label=pre["form_label"],
        commencement_date=dt.date.fromisoformat(pre["start"]),
        record=annuity.record,
        survivor_died_on=annuity.survivor_died_on,
        trigger=annuity.trigger,
        survivor_monthly=Decimal(pre["survivor_monthly"]) if pre.get("survivor_monthly") else None,
        survivor_percent=pre["survivor_percent"],
        certain_months=0,
    )
    apart = _in_pay(participation, part, as_of=as_of, death=death, cite=cite, pre_2005=True)
    value = None if line.value is None or apart.value is None else line.value + apart.value
    return BenefitLine(
        participation,
        line.status,
        value,
        f"Post-2004: {line.method}; Pre-2005 ({pre['cite']}): {apart.method}",
        cite,
        "; ".join(n for n in (line.note, apart.note) if n),
    )


def _paid(schedule, *, as_of: dt.date, pre_2005: bool) -> Decimal:
    rows = _paid_rows(as_of).filter(schedule=schedule)
    # BRP Appendix A: the Pre-2005 part's payments count against that part only
    rows = (
        rows.filter(benefit__startswith="Pre-2005")
        if pre_2005
        else rows.exclude(benefit__startswith="Pre-2005")
    )
    return rows.aggregate(t=Sum("amount"))["t"] or ZERO


def _in_pay(
    participation: Participation,
    annuity,
    *,
    as_of: dt.date,
    death: dt.date | None,
    cite: str,
    pre_2005: bool = False,
) -> BenefitLine:

    rule = participation.plan.version_on(as_of).provision("actuarial_basis") or {}
    table, _ = actuarial.mortality_table(as_of.year)
    basis, _ = actuarial.segment_rates_for(
        as_of,
        rule.get("lookback_months", 1),
        rule.get("segment_boundaries_years", actuarial.DEFAULT_SEGMENT_BOUNDARIES),
    )
    paid = memo.remember(
        ("annuity_paid", annuity.schedule.pk, pre_2005, as_of),
        lambda: _paid(annuity.schedule, as_of=as_of, pre_2005=pre_2005),
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
