"""Paying a defined benefit (BRP 4.2-4.3, 5.1-5.2): monthly payments of a fixed amount on the 1st of each month.

A defined benefit plan's participant has no account balance. When they separate (or die), the plan's
record account is opened so the benefit has a schedule like any other; its payments are `annuity`
(or one `lump_sum`) rows with share `defined`: a fixed gross amount, valued without looking at the
books, released by the same maker-checker runs, withheld on and sent to payroll the same way, but
never turned into a distribution in the books (they sell no notional units).

What is paid:
- from the Benefit Commencement Date (4.2(a)), later by an elected deferral (4.2(d)), the monthly
  amount of the form in force (the AnnuityElection, else the default of 4.2(c)); a Key Employee's
  first payment is the 1st of the month after the six-month anniversary of separation and includes
  the payments missed (4.3); the lump sum form is one payment on that date;
- after the participant's death, nothing for the months after the month of death, except: the
  survivor part of a joint and survivor form to the survivor from the 1st of the next month (5.2),
  the rest of a period certain to the Beneficiary; what falls due during a Key Employee's wait is paid
  when the wait ends, death or not (4.3 has no exception for death), to whoever is then entitled;
- a participant who dies before the benefit begins leaves the Spouse the Pre-Retirement Survivor
  Benefit (5.1) when they qualify;
- survivor payments stop after the month of the survivor's death (recorded by staff).

The figures are recomputed from their inputs until a payment is released; from then on they are
fixed (3.4(c)). Monthly payments are planned twelve months ahead; the daily payment job extends them.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from books.models import Account, DefinedBenefitRecord
from books.services.accounts import accounts_get_or_open
from core import memo
from core import valuation_calendar as cal
from core.audit import actor_label, audit_record
from core.bulk import build, build_like, column_values, insert_new, insert_values, update_existing
from core.dates import add_months, day_of_month_after, first_day_of_month_after_anniversary, first_of_month
from core.errors import ApplicationError
from core.money import money
from elections.selectors import annuity_elections_of, annuity_in_force
from participants.models import EmploymentEvent, Participation
from participants.selectors import beneficiaries_in_force_of
from payments.models import Annuity, PaymentSchedule, ScheduledPayment
from payments.services.reconcile import COMPUTED_HOLDS, Reconciliation, reconcile, reconciliation_write
from pensions.models import BenefitOrder
from pensions.services.benefit import (
    BenefitError,
    Pre2005CashOutValue,
    benefit_commencement_date,
    brp_benefit_quote,
    brp_survivor_quote,
    pension_records_seed,
    pre_2005_cash_out_value,
)
from pensions.services.orders import order_share, share_lump_sum
from plans.actuarial import FORM_DETAILS
from plans.models import Plan

if TYPE_CHECKING:
    from core.audit import Actor
    from elections.models import AnnuityElection
    from participants.models import Person
    from plans.models import PlanVersion

S = ScheduledPayment.Status
K = ScheduledPayment.Kind
HORIZON_MONTHS = 12
STARTED = (S.APPROVED, S.RELEASED, S.PAID)
# Holds this module places; the daily job recomputes their schedules until the input arrives.
HOLD_CODES = {
    "no_figures": "pension_figures",
    "no_spouse": "survivor_birth_date",
    "no_limit": "maximum_benefit_limit",
}


class AnnuityError(ApplicationError):
    pass


def is_annuity_account(*, account: Account) -> bool:
    """A defined benefit plan pays annuities, not account balances (the plan's kind, from the catalog)."""
    return account.participation.plan.kind == Plan.Kind.DEFINED_BENEFIT


def _day(d: dt.date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


def horizon(*, day: dt.date) -> dt.date:
    """Payments are planned through the 1st of the month twelve months ahead (extended once a month)."""
    return add_months(first_of_month(day), HORIZON_MONTHS)


# --- the plan of payments (pure) ----------------------------------------------------------------------


@dataclass
class Terms:
    """What a benefit pays, once fixed: the stored Annuity, or a fresh quote."""

    benefit: str
    trigger: str
    form: str
    form_label: str
    commencement: dt.date
    first_payment: dt.date
    monthly: Decimal  # each monthly payment; the lump sum for the lump sum form
    cite_start: str
    cite_monthly: str
    payee: str = ""  # "" = the participant
    survivor_percent: int = 0
    survivor_monthly: Decimal | None = None
    certain_months: int = 0
    survivor_name: str = ""
    beneficiary_name: str = ""
    death: dt.date | None = None  # the death that ends the payee's stream
    survivor_death: dt.date | None = None
    cite_key: str = ""
    cite_survivor: str = ""
    key_unknown_until: dt.date | None = None  # the Key Employee list is missing: hold what falls before this
    survivor_benefit: str = "Post-Retirement Survivor Benefit"
    pre_2005: Terms | None = None  # BRP Appendix A: the Pre-2005 Supplemental Benefit, paid apart
    cash_out: CashOut | None = None  # BRP App. A 4: the Company paid this benefit's rest as one lump sum


@dataclass
class CashOut:
    """BRP App. A 4: one lump sum on `on` in place of every payment of the benefit from that day."""

    on: dt.date
    amount: Decimal
    payee: str
    cite: str
    decided_on: dt.date


@dataclass
class Due:
    trigger: str
    benefit: str
    kind: str
    number: int
    of: int
    payment_date: dt.date
    amount: Decimal | None
    payee: str
    cite: str
    reason: str
    hold_code: str = ""
    hold_reason: str = ""

    @property
    def signature(self) -> tuple:
        return (
            self.trigger,
            self.kind,
            self.number,
            self.payment_date,
            self.amount,
            self.payee,
            self.benefit[:120],
        )


def _month_index(start: dt.date, day: dt.date) -> int:
    return (day.year - start.year) * 12 + day.month - start.month


def _stream(start: dt.date, end: dt.date | None, through: dt.date) -> list[dt.date]:
    """The 1st of each month from `start` to the month of `end` (inclusive), not later than `through`."""
    out, day = [], start
    while day <= through and (end is None or day <= end):
        out.append(day)
        # add_months(day, 1), without the calendar when the day is in every month (the 1st, as a rule)
        if day.day <= 28:
            day = (
                dt.date(day.year + 1, 1, day.day)
                if day.month == 12
                else dt.date(day.year, day.month + 1, day.day)
            )
        else:
            day = add_months(day, 1)
    return out


def _waited_reason(n: int) -> str:
    return (
        f", with the {n} monthly payment{'s' if n != 1 else ''} that fell due during the Key Employee's wait"
    )


def _waited(benefit: str, t: Terms, waited: list[dt.date], monthly: Decimal, payee: str, of: int = 0) -> Due:
    """BRP 4.3: payments after death that fell due during the wait and whose stream ended before it was over."""
    return Due(
        "death",
        benefit,
        K.ANNUITY,
        _month_index(t.commencement, waited[-1]) + 1,
        of,
        t.first_payment,
        money(monthly * len(waited)),
        payee,
        t.cite_key,
        f"the {len(waited)} monthly payment{'s' if len(waited) != 1 else ''} that fell due after the participant's "
        f"death during the Key Employee's wait, paid when it ends",
    )


def _after_death(t: Terms, after_death: dt.date, first: dt.date, through: dt.date) -> tuple[list[Due], bool]:
    """What is paid after the participant's death: the survivor's annuity, else the rest of a period certain
    (payments due through `through`, whether every one of them is now listed). BRP 4.3: what falls due during a Key
    Employee's wait is paid when the wait ends (`first`), death or not."""
    dues: list[Due] = []
    complete = True
    certain = t.certain_months
    if (
        t.survivor_percent
        and t.survivor_monthly
        and not (t.survivor_death and t.death and t.survivor_death < t.death)
    ):
        end = first_of_month(t.survivor_death) if t.survivor_death else None
        days = _stream(after_death, end, max(through, first))
        waited = [d for d in days if d < first]
        if waited and end is not None and end < first and first <= through:
            dues.append(_waited(t.survivor_benefit, t, waited, t.survivor_monthly, t.survivor_name))
        for day in days:
            if day < first or day > through:
                continue
            amount, cite = t.survivor_monthly, t.cite_survivor
            reason = (
                f"the survivor's {t.survivor_percent}% of the {t.form_label}, after the participant's death"
            )
            if day == first and waited:
                amount, cite = money(t.survivor_monthly * (len(waited) + 1)), t.cite_key
                reason += _waited_reason(len(waited))
            dues.append(
                Due(
                    "death",
                    t.survivor_benefit,
                    K.ANNUITY,
                    _month_index(t.commencement, day) + 1,
                    0,
                    day,
                    amount,
                    t.survivor_name,
                    cite,
                    reason,
                )
            )
        if end is None or end > through:
            complete = False
    elif certain:
        last = add_months(t.commencement, certain - 1)
        days = _stream(after_death, last, max(through, first))
        waited = [d for d in days if d < first]
        if waited and last < first and first <= through:
            dues.append(_waited(t.benefit, t, waited, t.monthly, t.beneficiary_name, of=certain))
        for day in days:
            if day < first or day > through:
                continue
            amount, cite = t.monthly, t.cite_monthly
            reason = (
                f"guaranteed payment {_month_index(t.commencement, day) + 1} of {certain}, to the Beneficiary"
            )
            if day == first and waited:
                amount, cite = money(t.monthly * (len(waited) + 1)), t.cite_key
                reason += _waited_reason(len(waited))
            dues.append(
                Due(
                    "death",
                    t.benefit,
                    K.ANNUITY,
                    _month_index(t.commencement, day) + 1,
                    certain,
                    day,
                    amount,
                    t.beneficiary_name,
                    cite,
                    reason,
                )
            )
        if last > through:
            complete = False
    return dues, complete


def plan_payments(*, t: Terms, through: dt.date) -> tuple[list[Due], bool]:
    """(payments due through `through`, whether every payment of the benefit is now listed); a Pre-2005
    Supplemental Benefit (BRP Appendix A) is planned apart, on its own terms, and nothing of 0.00 is paid."""
    dues, complete = _plan_one(t, through)
    if t.pre_2005 is not None:
        more, done = _plan_one(t.pre_2005, through)
        if t.pre_2005.cash_out is not None:
            more, done = _cashed_out(more, t.pre_2005, t.pre_2005.cash_out, through)
        dues, complete = dues + more, complete and done
    return [d for d in dues if d.amount is None or d.amount > 0], complete


def _cashed_out(dues: list[Due], t: Terms, c: CashOut, through: dt.date) -> tuple[list[Due], bool]:
    """BRP App. A 4: the payments before the lump sum stay as they are; the lump sum replaces every later one,
    the survivor's included, and the Company has no further liability (4(b))."""
    kept = [d for d in dues if d.payment_date < c.on]
    if c.on > through:
        return kept, False
    lump = Due(
        t.trigger,
        t.benefit,
        K.LUMP_SUM,
        1,
        1,
        c.on,
        c.amount,
        c.payee,
        c.cite,
        f"a distribution of the accrued Pre-2005 Supplemental Benefit: its Actuarial Equivalent lump sum, decided by "
        f"the Company on {_day(c.decided_on)}, in place of the monthly payments from {_day(c.on)}",
    )
    return kept + [lump], True


def _plan_one(t: Terms, through: dt.date) -> tuple[list[Due], bool]:
    dues: list[Due] = []
    death_month = first_of_month(t.death) if t.death else None
    after_death = day_of_month_after(t.death, 1, 1) if t.death else None
    # BRP 4.3 has no exception for death: what falls due during a Key Employee's wait is paid on the 1st day of
    # the month after the six-month anniversary, to whoever is then entitled under Article V.
    first = t.first_payment
    if t.form == "lump_sum":
        payee = t.payee if after_death is None or first < after_death else t.beneficiary_name
        reason = "the single lump sum on the Benefit Commencement Date"
        if first != t.commencement:
            reason = (
                "the single lump sum, on the 1st day of the month after the six-month anniversary of separation"
                if after_death is None or first < after_death
                else "the single lump sum, after the participant's death"
            )
        return [
            Due(
                t.trigger,
                t.benefit,
                K.LUMP_SUM,
                1,
                1,
                first,
                t.monthly,
                payee,
                t.cite_key if first != t.commencement else t.cite_start,
                reason,
            )
        ], True
    own_end = death_month
    complete = own_end is not None and own_end <= through
    months = _stream(t.commencement, own_end, max(through, first))
    missed = [d for d in months if d < first]
    catch_up_after_death = bool(missed) and first > (own_end or first)
    certain = t.certain_months
    for day in months:
        if day < first:
            continue
        number = _month_index(t.commencement, day) + 1
        amount, reason, cite = t.monthly, "the 1st of the month", t.cite_monthly
        if day == first and day == t.commencement:
            reason, cite = f"the Benefit Commencement Date ({t.form_label})", t.cite_start
        elif day == first and missed:
            amount = money(t.monthly * (len(missed) + 1))
            reason = (
                f"the 1st day of the month after the six-month anniversary of separation, with the "
                f"{len(missed)} monthly payment{'s' if len(missed) != 1 else ''} missed"
            )
            cite = t.cite_key
        if day <= through:
            dues.append(
                Due(t.trigger, t.benefit, K.ANNUITY, number, certain or 0, day, amount, t.payee, cite, reason)
            )
    if catch_up_after_death and first <= through:
        dues.append(
            Due(
                "death",
                t.benefit,
                K.ANNUITY,
                _month_index(t.commencement, missed[-1]) + 1,
                certain or 0,
                first,
                money(t.monthly * len(missed)),
                t.beneficiary_name,
                t.cite_key,
                f"the {len(missed)} monthly payment{'s' if len(missed) != 1 else ''} due before the participant's "
                f"death, paid when the Key Employee's wait ends",
            )
        )
    if first > through:  # BRP 4.3: what waits for the first Payment Date is not planned yet
        complete = False
    if after_death is not None:
        after, all_listed = _after_death(t, after_death, first, through)
        dues += after
        complete = complete and all_listed
    if t.key_unknown_until is not None:
        for d in dues:
            if d.payment_date < t.key_unknown_until:
                d.hold_code = "key_employee_unknown"
                d.hold_reason = (
                    f"No Key Employee list is recorded for the year that governs this separation "
                    f"({t.cite_key}): record it so the first Payment Date can be fixed."
                )
    return dues, complete


# --- loading and fixing the terms ------------------------------------------------------------------


@dataclass
class Outcome:
    terms: Terms | None = None
    status: str = Annuity.Status.HELD
    summary: str = ""
    hold_code: str = ""
    hold_reason: str = ""
    expected_start: dt.date | None = None
    trigger: str = ""
    fields: dict = field(default_factory=dict)  # Annuity fields to store


def _events_of(person_ids: Collection[int]) -> dict[int, dict[str, dt.date]]:
    """person id -> the first date of each kind of employment event (a rehire aside)."""
    out: dict[int, dict[str, dt.date]] = defaultdict(dict)
    for person_id, kind, day in (
        EmploymentEvent.objects.filter(person_id__in=person_ids)
        .exclude(kind=EmploymentEvent.Kind.REHIRE)
        .order_by("person_id", "effective_date", "id")
        .values_list("person_id", "kind", "effective_date")
    ):
        out[person_id].setdefault(kind, day)
    return out


def _events(person: Person) -> dict[str, dt.date]:
    return _events_of([person.pk]).get(person.pk, {})


def _beneficiary_names(participations: Sequence[Participation]) -> dict[int, str]:
    """participation id -> who takes what is left after a death: the primary Beneficiaries in force, else the
    Estate."""
    designations = beneficiaries_in_force_of(pairs={(p.person_id, p.plan_id) for p in participations})
    out: dict[int, str] = {}
    for participation in participations:
        designation = designations.get((participation.person_id, participation.plan_id))
        names = (
            [b.name for b in designation.beneficiaries.all() if b.tier == "primary" and not b.deceased_on]
            if designation is not None
            else []
        )
        out[participation.pk] = (
            "; ".join(names)[:200] if names else f"Estate of {participation.person.full_name}"[:200]
        )
    return out


def _cites(version: PlanVersion) -> dict[str, str]:
    survivor = version.provision("db_survivor", None) or {}
    delay: dict = next(
        (
            r["key_employee_delay"]
            for r in version.provision("distribution", []) or []
            if r.get("key_employee_delay")
        ),
        {},
    )
    return {
        "start": version.cite("db_commencement"),
        "monthly": version.cite("db_forms"),
        "key": delay.get("cite", version.cite("key_employee")),
        "prsb": version.cite("db_survivor"),
        "survivor": survivor.get("post_retirement_cite", version.cite("db_survivor")),
        "fixed": version.cite("db_maximum_benefit"),
    }


def _fresh(
    participation: Participation,
    events: dict[str, dt.date],
    annuity: Annuity,
    as_of: dt.date,
    beneficiary: str,
    accepted: list[AnnuityElection] | None = None,
) -> Outcome:
    """The terms from the inputs as they stand (nothing released yet). `accepted`: the participation's accepted
    annuity elections, latest first, when read for many at once (`annuity_in_force`)."""

    person = participation.person
    sep, death = events.get(EmploymentEvent.Kind.SEPARATION), events.get(EmploymentEvent.Kind.DEATH)
    anchor = sep or death
    if anchor is None:
        return Outcome(
            status=Annuity.Status.NOT_PAYABLE,
            summary=f"Payable after separation from service ({_cites(participation.plan.version_on(as_of))['start']}).",
        )
    version = participation.plan.version_on(anchor)
    cites = _cites(version)
    in_force = annuity_in_force(participation=participation, as_of=anchor, accepted=accepted)
    commencement = (
        benefit_commencement_date(separation_date=sep, defer_years=in_force.defer_years) if sep else None
    )
    if sep is not None and commencement is not None:
        at_start = annuity_in_force(participation=participation, as_of=commencement, accepted=accepted)
        if at_start.defer_years != in_force.defer_years:
            commencement = benefit_commencement_date(separation_date=sep, defer_years=at_start.defer_years)
        in_force = at_start
    if death is not None and (commencement is None or death < commencement):
        try:
            sq = brp_survivor_quote(participation=participation, death_date=death, as_of=max(death, as_of))
        except BenefitError as exc:
            return _refused(
                exc,
                day_of_month_after(death, 1, 2),
                f"Death on {_day(death)} before the benefit began ({cites['prsb']}): ",
                "death",
            )
        record = sq.record
        spouse = (record.spouse_name if record else "") or f"Surviving Spouse of {person.full_name}"
        terms = Terms(
            benefit="Pre-Retirement Survivor Benefit",
            trigger="death",
            form="prsb",
            form_label="survivor part of a 50% Joint and Survivor Annuity",
            commencement=sq.start_date,
            first_payment=sq.start_date,
            monthly=sq.monthly,
            cite_start=cites["prsb"],
            cite_monthly=cites["prsb"],
            payee=spouse[:200],
            death=annuity.survivor_died_on,
            cite_key=cites["key"],
        )
        summary = (
            f"Pre-Retirement Survivor Benefit ({cites['prsb']}): death on {_day(death)} before the benefit "
            f"began; {sq.monthly:,.2f} a month to {terms.payee} from {_day(sq.start_date)}."
        )
        return Outcome(
            terms=terms,
            status=Annuity.Status.IN_PAY,
            summary=summary,
            expected_start=sq.start_date,
            fields={
                "benefit": terms.benefit,
                "trigger": "death",
                "event_date": death,
                "commencement_date": sq.start_date,
                "first_payment_date": sq.start_date,
                "form": "prsb",
                "form_label": terms.form_label,
                "single_life_annual": sq.single_life_annual,
                "annual": sq.annual,
                "monthly": sq.monthly,
                "maximum_benefit": None,
                "lump_sum_value": None,
                "survivor_percent": 0,
                "survivor_monthly": None,
                "certain_months": 0,
                "payee_name": terms.payee,
                "survivor_name": terms.payee,
                "record": record,
                "basis": sq.basis[:300],
                "steps": [list(s) for s in sq.steps],
                "notes": sq.notes,
                "pre_2005": {},
            },
        )
    # A death before commencement was answered above, so there was a separation.
    assert sep is not None and commencement is not None
    try:
        quote = brp_benefit_quote(
            participation=participation,
            separation_date=sep,
            as_of=max(commencement, as_of),
            form=in_force.form,
            defer_years=in_force.defer_years,
        )
    except BenefitError as exc:
        return _refused(exc, commencement, f"Separation on {_day(sep)} ({cites['start']}): ", "separation")
    assert quote.monthly is not None  # brp_benefit_quote refuses a form it cannot price ("no_spouse")
    if quote.provisional and any("limit" in p for p in quote.provisional):
        note = next(p for p in quote.provisional if "limit" in p)
        return Outcome(
            status=Annuity.Status.HELD,
            hold_code=HOLD_CODES["no_limit"],
            expected_start=commencement,
            hold_reason=f"Not fixed: {note}.",
            summary=f"Separation on {_day(sep)}: held, {note}.",
            trigger="separation",
        )
    survivor = (quote.record.spouse_name if quote.record else "") or ""
    if quote.survivor_percent and not survivor:
        survivor = (
            beneficiary
            if not person.marital_status == person.MaritalStatus.MARRIED
            else f"Surviving Spouse of {person.full_name}"
        )
    key_unknown = None
    if not quote.key_employee_known:
        months = next(
            (
                r["key_employee_delay"]["months"]
                for r in version.provision("distribution", []) or []
                if r.get("key_employee_delay")
            ),
            6,
        )
        key_unknown = first_day_of_month_after_anniversary(sep, months)
    terms = Terms(
        benefit="Supplemental Benefit",
        trigger="separation",
        form=quote.form,
        form_label=quote.form_label,
        commencement=quote.commencement_date,
        first_payment=quote.first_payment_date,
        monthly=quote.monthly,
        cite_start=cites["start"],
        cite_monthly=cites["monthly"],
        survivor_percent=quote.survivor_percent,
        survivor_monthly=quote.survivor_monthly,
        certain_months=quote.certain_months,
        survivor_name=survivor[:200],
        cite_key=cites["key"],
        cite_survivor=cites["survivor"],
        key_unknown_until=key_unknown,
        death=death,
        survivor_death=annuity.survivor_died_on,
        beneficiary_name=beneficiary,
    )
    pre = quote.pre_2005
    if pre is not None:
        # BRP App. A 3: at the time and in the form of the Pension Plan benefit, with no Key Employee delay.
        terms.pre_2005 = Terms(
            benefit="Pre-2005 Supplemental Benefit",
            trigger="separation",
            form=pre.form,
            form_label=pre.form_label,
            commencement=pre.start_date,
            first_payment=pre.start_date,
            monthly=pre.monthly or Decimal(0),
            cite_start=pre.cite,
            cite_monthly=pre.cite,
            survivor_percent=pre.survivor_percent,
            survivor_monthly=pre.survivor_monthly,
            survivor_name=survivor[:200],
            cite_key=pre.cite,
            cite_survivor=pre.survivor_cite,
            death=death,
            survivor_death=annuity.survivor_died_on,
            beneficiary_name=beneficiary,
            survivor_benefit="Pre-2005 Post-Retirement Survivor Benefit",
        )
    what = "a single lump sum of" if quote.form == "lump_sum" else "a month:"
    summary = (
        f"Supplemental Benefit ({cites['start']}): separation on {_day(sep)}; {quote.form_label}, "
        f"{what} {quote.monthly:,.2f}, from the Benefit Commencement Date {_day(quote.commencement_date)}"
    )
    if quote.first_payment_date != quote.commencement_date:
        summary += f"; Key Employee: first payment {_day(quote.first_payment_date)} ({cites['key']})"
    if pre is not None:
        summary += (
            f"; the Pre-2005 Supplemental Benefit apart, in the Pension Plan's form ({pre.form_label}), "
            f"{pre.monthly:,.2f} a month from {_day(pre.start_date)} ({pre.cite})"
        )
    summary += (
        f"; the Maximum Benefit and the amount are fixed at commencement ({cites['fixed']}(c)) once the first "
        f"payment is released."
    )
    return Outcome(
        terms=terms,
        status=Annuity.Status.IN_PAY,
        summary=summary,
        expected_start=quote.first_payment_date,
        fields={
            "benefit": "Supplemental Benefit",
            "trigger": "separation",
            "event_date": sep,
            "commencement_date": quote.commencement_date,
            "first_payment_date": quote.first_payment_date,
            "form": quote.form,
            "form_label": quote.form_label[:120],
            "single_life_annual": quote.single_life_annual,
            "maximum_benefit": quote.maximum_benefit,
            "annual": quote.annual,
            "monthly": quote.monthly,
            "lump_sum_value": quote.lump_sum_value,
            "survivor_percent": quote.survivor_percent,
            "survivor_monthly": quote.survivor_monthly,
            "certain_months": quote.certain_months,
            "payee_name": "",
            "survivor_name": survivor[:200],
            "record": quote.record,
            "basis": quote.basis[:300],
            "steps": [list(s) for s in quote.steps],
            "notes": quote.notes,
            "pre_2005": _pre_2005_fields(terms.pre_2005),
        },
    )


def _pre_2005_fields(t: Terms | None) -> dict:
    if t is None:
        return {}
    return {
        "form": t.form,
        "form_label": t.form_label,
        "start": t.commencement.isoformat(),
        "monthly": str(t.monthly),
        "survivor_percent": t.survivor_percent,
        "survivor_monthly": str(t.survivor_monthly) if t.survivor_monthly is not None else None,
        "cite": t.cite_start,
        "survivor_cite": t.cite_survivor,
    }


def _pre_2005_terms(fields: dict, base: Terms) -> Terms | None:
    """The fixed Pre-2005 Supplemental Benefit of a benefit in pay (BRP Appendix A, 3.4(c))."""
    if not fields:
        return None
    start = dt.date.fromisoformat(fields["start"])
    cash = fields.get("cash_out")
    return Terms(
        cash_out=CashOut(
            on=dt.date.fromisoformat(cash["on"]),
            amount=Decimal(cash["amount"]),
            payee=cash["payee"],
            cite=cash["cite"],
            decided_on=dt.date.fromisoformat(cash["decided_on"]),
        )
        if cash
        else None,
        benefit="Pre-2005 Supplemental Benefit",
        trigger=base.trigger,
        form=fields["form"],
        form_label=fields["form_label"],
        commencement=start,
        first_payment=start,
        monthly=Decimal(fields["monthly"]),
        cite_start=fields["cite"],
        cite_monthly=fields["cite"],
        survivor_percent=fields["survivor_percent"],
        survivor_monthly=Decimal(fields["survivor_monthly"]) if fields.get("survivor_monthly") else None,
        survivor_name=base.survivor_name,
        cite_key=fields["cite"],
        cite_survivor=fields["survivor_cite"],
        death=base.death,
        survivor_death=base.survivor_death,
        beneficiary_name=base.beneficiary_name,
        survivor_benefit="Pre-2005 Post-Retirement Survivor Benefit",
    )


OWN_BENEFITS = ("Supplemental Benefit", "Pre-2005 Supplemental Benefit")


def _apply_orders(
    dues: list[Due],
    participation: Participation,
    t: Terms,
    started: list[ScheduledPayment],
    orders: list[BenefitOrder],
) -> list[Due]:
    """BRP 6.7: each Domestic Relations Order takes its share out of the participant's own payments due after the day
    it was received: paid to the Alternate Payee on the same Payment Date, or once as the share's Actuarial
    Equivalent lump sum on the first of those dates. A payment already released whole stays whole."""

    if not orders:
        return dues
    out = list(dues)
    for order in orders:
        cite = order.cite
        to_payee = {(p.payment_date, p.benefit) for p in started if p.payee_name == order.alternate_payee}
        whole = {(p.payment_date, p.benefit) for p in started if p.payee_name == t.payee} - to_payee
        own = [
            d
            for d in out
            if d.payee == t.payee
            and d.benefit in OWN_BENEFITS
            and d.amount
            and d.payment_date > order.received_on
        ]
        if order.lump_sum and own and own[0].kind != K.LUMP_SUM:
            for part in _parts(t):
                group = [d for d in own if d.benefit == part.benefit]
                if not group or not part.monthly or (group[0].payment_date, part.benefit) in whole:
                    continue
                first = group[0]
                share = order_share(order=order, payment=part.monthly)
                left = (
                    max(0, part.certain_months - _month_index(part.commencement, first.payment_date))
                    if part.certain_months
                    else 0
                )
                value = share_lump_sum(
                    participation=participation, monthly_share=share, on=first.payment_date, certain_left=left
                )
                out.append(
                    Due(
                        first.trigger,
                        first.benefit,
                        K.LUMP_SUM,
                        first.number,
                        1,
                        first.payment_date,
                        value,
                        order.alternate_payee,
                        cite,
                        f"the Actuarial Equivalent lump sum of the Alternate Payee's share ({order.share_label}) "
                        f"under the order received {_day(order.received_on)}",
                    )
                )
                for d in group:  # a catch-up payment holds several months: each gives up the share
                    if d.amount is not None:
                        d.amount -= money(share * round(d.amount / part.monthly))
            continue
        for d in own:
            if (d.payment_date, d.benefit) in whole or d.amount is None:
                continue
            share = order_share(order=order, payment=d.amount)
            d.amount -= share
            out.append(
                Due(
                    d.trigger,
                    d.benefit,
                    d.kind,
                    d.number,
                    d.of,
                    d.payment_date,
                    share,
                    order.alternate_payee,
                    cite,
                    f"the Alternate Payee's share ({order.share_label}) under the order received "
                    f"{_day(order.received_on)}, accounted for separately",
                )
            )
    return [d for d in out if d.amount is None or d.amount > 0]


def _parts(t: Terms) -> list[Terms]:
    return [t] + ([t.pre_2005] if t.pre_2005 is not None else [])


def _refused(exc: Exception, expected: dt.date, prefix: str, trigger: str) -> Outcome:
    code = getattr(exc, "code", "not_eligible")
    if code in HOLD_CODES:
        return Outcome(
            status=Annuity.Status.HELD,
            hold_code=HOLD_CODES[code],
            hold_reason=f"Not fixed: {exc}.",
            expected_start=expected,
            summary=f"{prefix}held: {exc}.",
            trigger=trigger,
        )
    return Outcome(status=Annuity.Status.NOT_PAYABLE, summary=f"{prefix}{exc}.", trigger=trigger)


def _stored(
    annuity: Annuity, participation: Participation, events: dict[str, dt.date], beneficiary: str
) -> Outcome:
    """The terms already fixed (a payment was released): only deaths change what is paid."""
    if (
        annuity.event_date is None
        or annuity.commencement_date is None
        or annuity.first_payment_date is None
        or annuity.monthly is None
    ):
        raise ValueError(f"annuity {annuity.pk} has a payment released but its terms were never fixed")
    version = participation.plan.version_on(annuity.event_date)
    cites = _cites(version)
    death = events.get(EmploymentEvent.Kind.DEATH)
    prsb = annuity.form == "prsb"
    terms = Terms(
        benefit=annuity.benefit,
        trigger=annuity.trigger,
        form=annuity.form,
        form_label=annuity.form_label,
        commencement=annuity.commencement_date,
        first_payment=annuity.first_payment_date,
        monthly=annuity.monthly,
        cite_start=cites["prsb" if prsb else "start"],
        cite_monthly=cites["prsb" if prsb else "monthly"],
        payee=annuity.payee_name,
        survivor_percent=annuity.survivor_percent,
        survivor_monthly=annuity.survivor_monthly,
        certain_months=annuity.certain_months,
        survivor_name=annuity.survivor_name,
        death=annuity.survivor_died_on if prsb else death,
        survivor_death=None if prsb else annuity.survivor_died_on,
        cite_key=cites["key"],
        cite_survivor=cites["survivor"],
        beneficiary_name=beneficiary,
    )
    terms.pre_2005 = _pre_2005_terms(annuity.pre_2005, terms)
    summary = (
        f"{annuity.benefit}: {annuity.form_label}, {annuity.monthly:,.2f}"
        f"{'' if annuity.form == 'lump_sum' else ' a month'} from {_day(annuity.commencement_date)}, fixed at "
        f"commencement ({cites['fixed']}(c))."
    )
    return Outcome(
        terms=terms, status=Annuity.Status.IN_PAY, summary=summary, expected_start=annuity.first_payment_date
    )


# --- recomputing and merging ------------------------------------------------------------------------


def annuities_recompute(
    *, accounts: list[Account], because: str, now: dt.datetime, as_of: dt.date | None = None
) -> list[PaymentSchedule]:
    """Recompute the annuity of each account, one account at a time; returns the schedules that changed."""
    as_of = as_of or timezone.localdate(now)
    changed = []
    for account in sorted(accounts, key=lambda a: a.id):
        changed += _recompute(accounts=[account], because=because, now=now, as_of=as_of)
    return changed


def _release(day: dt.date, dates: dict[dt.date, tuple[dt.date, dt.date]] | None) -> tuple[dt.date, dt.date]:
    """A payment's release date (the first Valuation Date on or after its Payment Date) and the Valuation Date it is
    valued on (the one before); `dates`: those already found in this call, the calendar being the same."""
    if dates is not None and day in dates:
        return dates[day]
    release = cal.next_valuation_date(day)
    found = (release, cal.previous_valuation_date(release))
    if dates is not None:
        dates[day] = found
    return found


def _due_values(d: Due, dates: dict[dt.date, tuple[dt.date, dt.date]] | None) -> dict[str, object]:
    """What a payment row takes from its due."""
    release, valuable_on = _release(d.payment_date, dates)
    return {
        "trigger": d.trigger,
        "benefit": d.benefit[:120],
        "kind": d.kind,
        "number": d.number,
        "of": d.of,
        "payment_date": d.payment_date,
        "valuable_on": valuable_on,
        "release_date": release,
        "cite": d.cite[:60],
        "reason": d.reason[:300],
        "status": S.HELD if d.hold_code else S.SCHEDULED,
        "hold_code": d.hold_code,
        "hold_reason": d.hold_reason,
        "amount": d.amount,
        "payee_name": d.payee[:200],
    }


def _rows(
    dues: Sequence[Due],
    *,
    schedule: PaymentSchedule,
    revision: int,
    now: dt.datetime,
    fixed_on: dt.date,
    dates: dict[dt.date, tuple[dt.date, dt.date]] | None = None,
    paid_by: str = "",
) -> list[ScheduledPayment]:
    """The payment rows of a schedule's dues: the first built from all its values, the others like it with their
    due's (`core.bulk.build_like`, a take-over writing some 80 to a benefit). `paid_by`: the dues are payments
    already made, paid on their Payment Date by whom it says."""
    if not dues:
        return []
    paid = {"status": S.PAID, "withholding_basis": paid_by} if paid_by else {}
    rows: list[ScheduledPayment] = []
    for d in dues:
        values = _due_values(d, dates)
        if paid_by:
            values.update(paid, paid_on=d.payment_date)
        if not rows:
            values.update(
                schedule=schedule,
                account_id=schedule.account_id,
                participation_id=schedule.participation_id,
                revision=revision,
                share=ScheduledPayment.Share.DEFINED,
                valuation_rule="fixed_at_commencement",
                valued_as_of=fixed_on,
                created_at=now,
            )
            rows.append(build(ScheduledPayment, **values))
        else:
            rows.append(build_like(rows[0], **values))
    return rows


def _signature(p: ScheduledPayment) -> tuple:
    return (p.trigger, p.kind, p.number, p.payment_date, p.amount, p.payee_name, p.benefit)


@dataclass
class _Inputs:
    """What planning annuities reads besides their own rows, read for many participations at once."""

    participations: dict[int, Participation]
    events: dict[int, dict[str, dt.date]]  # person id -> first date of each kind of event
    beneficiaries: dict[int, str]  # participation id -> who takes what is left after a death
    orders: dict[int, list[BenefitOrder]]  # participation id -> Domestic Relations Orders, oldest first
    annuity_elections: dict[
        int, list[AnnuityElection]
    ]  # participation id -> accepted annuity elections, latest first

    @classmethod
    def read(cls, participation_ids: Collection[int], *, known: Iterable[Participation] = ()) -> _Inputs:
        """`known`: participations the caller holds; their plan objects (and the versions they have read) are
        reused."""
        plans: dict[int, Plan] = {p.plan_id: p.plan for p in known if Participation.plan.is_cached(p)}
        participations: dict[int, Participation] = {}
        for p in Participation.objects.filter(id__in=participation_ids).select_related("plan", "person"):
            p.plan = plans.setdefault(p.plan_id, p.plan)  # one plan object: its versions are read once
            participations[p.pk] = p
        orders: dict[int, list[BenefitOrder]] = defaultdict(list)
        for order in BenefitOrder.objects.filter(participation_id__in=participation_ids).order_by(
            "participation_id", "received_on", "id"
        ):
            orders[order.participation_id].append(order)
        return cls(
            participations=participations,
            events=_events_of({p.person_id for p in participations.values()}),
            beneficiaries=_beneficiary_names(list(participations.values())),
            orders=orders,
            annuity_elections=annuity_elections_of(participation_ids=participation_ids),
        )


@dataclass
class _Replanned:
    """One annuity's recomputation, decided in memory (`_replan`), written with the others (`_recompute`)."""

    schedule: PaymentSchedule
    annuity: Annuity
    changed: bool
    stored_changes: list[ScheduledPayment]
    rows: list[ScheduledPayment]
    runs: set[int]


def _replan(
    schedule: PaymentSchedule,
    annuity: Annuity,
    have: list[ScheduledPayment],
    inputs: _Inputs,
    *,
    created: bool,
    because: str,
    now: dt.datetime,
    as_of: dt.date,
    dates: dict[dt.date, tuple[dt.date, dt.date]] | None = None,
) -> _Replanned:
    """`dates`: the payments' release and valuation dates already found in this call (`_release`)."""
    participation = inputs.participations[schedule.participation_id]
    started = [p for p in have if p.status in STARTED]
    events = inputs.events.get(participation.person_id, {})
    beneficiary = inputs.beneficiaries[participation.pk]
    outcome = (
        _stored(annuity, participation, events, beneficiary)
        if started and annuity.pk
        else _fresh(
            participation,
            events,
            annuity,
            as_of,
            beneficiary,
            inputs.annuity_elections.get(participation.pk, []),
        )
    )
    through = max([horizon(day=as_of)] + [p.payment_date for p in have])
    if outcome.terms is not None:
        dues, complete = plan_payments(t=outcome.terms, through=through)
        dues = _apply_orders(
            dues, participation, outcome.terms, started, inputs.orders.get(participation.pk, [])
        )
    elif outcome.hold_code and outcome.expected_start:
        benefit = "Pre-Retirement Survivor Benefit" if outcome.trigger == "death" else "Supplemental Benefit"
        dues, complete = (
            [
                Due(
                    outcome.trigger,
                    benefit,
                    K.ANNUITY,
                    1,
                    0,
                    outcome.expected_start,
                    None,
                    "",
                    "",
                    "held until the missing input is recorded",
                    outcome.hold_code,
                    outcome.hold_reason,
                )
            ],
            False,
        )
    else:
        dues, complete = [], True
    fixed_on = (
        outcome.fields.get("commencement_date") if outcome.fields else None
    ) or annuity.commencement_date
    merged = _merge(have, dues, because=because)
    rows = _rows(
        merged.new,
        schedule=schedule,
        revision=schedule.revision if created else schedule.revision + 1,
        now=now,
        fixed_on=fixed_on or as_of,
        dates=dates,
    )
    changed = merged.changed
    summary = outcome.summary + _overpaid(have, outcome.terms)
    status = (
        outcome.status
        if not (outcome.status == Annuity.Status.IN_PAY and complete)
        else Annuity.Status.COMPLETE
    )
    trigger = outcome.terms.trigger if outcome.terms else outcome.trigger
    sched_values = {
        "trigger": trigger,
        "trigger_date": events.get(EmploymentEvent.Kind.DEATH)
        if trigger == "death"
        else events.get(EmploymentEvent.Kind.SEPARATION),
        "benefit": (outcome.terms.benefit if outcome.terms else "Supplemental Benefit")[:120],
        "form": (outcome.terms.form if outcome.terms else "")[:30],
        "installments": None,
        "cite": (outcome.terms.cite_start if outcome.terms else "")[:60],
        "summary": summary,
        "hold_reason": outcome.hold_reason,
        "provisional_until": None,
    }
    for name, value in sched_values.items():
        if getattr(schedule, name) != value:
            setattr(schedule, name, value)
            changed = True
    if changed and not created:
        schedule.revision += 1
        schedule.computed_at, schedule.computed_because = now, because[:200]
    for name, value in outcome.fields.items():
        setattr(annuity, name, value)
    annuity.status = status
    annuity.scheduled_through = None if status != Annuity.Status.IN_PAY else through
    if started and annuity.fixed_on is None:
        annuity.fixed_on = min(p.payment_date for p in started)
    annuity.computed_at = now
    return _Replanned(
        schedule=schedule,
        annuity=annuity,
        changed=changed or created,
        stored_changes=merged.stored_changes,
        rows=rows,
        runs=merged.runs,
    )


def _columns(model: type[Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if not f.primary_key]


def _recompute(
    *,
    accounts: Sequence[Account],
    because: str,
    now: dt.datetime,
    as_of: dt.date,
    written: dict[int, list[Any]] | None = None,
    inputs: _Inputs | None = None,
    planned: dict[int, list[ScheduledPayment]] | None = None,
) -> list[PaymentSchedule]:
    """Recompute the annuity of each account (its benefit schedule opened if need be) in a fixed number of
    statements, whatever the number of accounts; returns the schedules created or changed. `written`: schedule id ->
    every payment of the schedule, oldest first, when the caller has just written them all (a take-over): they are
    not read back (`_Made` stands for a payment made). `inputs`: read by the caller for these accounts' participations.
    `planned`: filled with schedule id -> the payment rows this recomputation added (saved)."""
    if not accounts:
        return []
    with transaction.atomic():
        schedules: dict[int, PaymentSchedule] = {}
        for s in (
            PaymentSchedule.objects.select_for_update()
            .filter(account_id__in=[a.id for a in accounts], kind=PaymentSchedule.Kind.BENEFIT)
            .order_by("id")
        ):
            schedules.setdefault(s.account_id, s)
        created = [
            PaymentSchedule(
                participation_id=a.participation_id,
                account_id=a.id,
                revision=1,
                computed_at=now,
                computed_because=because[:200],
            )
            for a in accounts
            if a.id not in schedules
        ]
        insert_new(objs=created, model=PaymentSchedule, history=True)
        schedules.update({s.account_id: s for s in created})
        annuities = {a.schedule_id: a for a in Annuity.objects.filter(schedule__in=list(schedules.values()))}
        have: dict[int, list[ScheduledPayment]] = defaultdict(list)
        if written is not None:
            have.update(
                {
                    s.pk: [p for p in written.get(s.pk, []) if p.status != S.CANCELLED]
                    for s in schedules.values()
                }
            )
        else:
            for p in (
                ScheduledPayment.objects.filter(schedule__in=list(schedules.values()))
                .exclude(status=S.CANCELLED)
                .order_by("id")
            ):
                have[p.schedule_id].append(p)
        if inputs is None:
            inputs = _Inputs.read(
                {a.participation_id for a in accounts},
                known=[a.participation for a in accounts if Account.participation.is_cached(a)],
            )
        opened = {s.account_id for s in created}
        replanned = []
        dates: dict[dt.date, tuple[dt.date, dt.date]] = {}
        for account in accounts:
            schedule = schedules[account.id]
            annuity = annuities.get(schedule.pk) or Annuity(
                schedule=schedule, participation_id=schedule.participation_id, computed_at=now
            )
            replanned.append(
                _replan(
                    schedule,
                    annuity,
                    have[schedule.pk],
                    inputs,
                    created=account.id in opened,
                    because=because,
                    now=now,
                    as_of=as_of,
                    dates=dates,
                )
            )
        reconciliation_write(
            changed=[p for r in replanned for p in r.stored_changes],
            rows=[p for r in replanned for p in r.rows],
            runs={run for r in replanned for run in r.runs},
        )
        if planned is not None:
            for r in replanned:
                planned.setdefault(r.schedule.pk, []).extend(r.rows)
        saved = [r.schedule for r in replanned if r.changed]
        update_existing(objs=saved, model=PaymentSchedule, fields=_columns(PaymentSchedule))
        stored = [r.annuity for r in replanned if r.annuity.pk is not None]
        insert_new(objs=[r.annuity for r in replanned if r.annuity.pk is None], model=Annuity, history=True)
        update_existing(objs=stored, model=Annuity, fields=_columns(Annuity))
        return saved


def _merge(have: list[ScheduledPayment], dues: list[Due], *, because: str) -> Reconciliation:
    """Payments released or paid never change; unpaid ones no longer due are cancelled (kept, with the reason).
    The same reconciliation as the account schedules (payments/services/reconcile.py)."""
    return reconcile(
        have=have,
        planned=dues,
        stored_signature=_signature,
        because=because,
        computed_holds=COMPUTED_HOLDS | set(HOLD_CODES.values()),
    )


def _overpaid(have: list[ScheduledPayment], terms: Terms | None) -> str:
    """Payments already released to someone who had died by then: say so, so staff recover them."""
    if terms is None or terms.death is None:
        return ""
    last = first_of_month(terms.death)
    late = [
        p
        for p in have
        if p.status in STARTED
        and p.payee_name == terms.payee
        and p.payment_date > last
        and p.trigger == terms.trigger
    ]
    if not late:
        return ""
    total = sum((p.amount or 0 for p in late), Decimal(0))
    return (
        f" {len(late)} payment{'s' if len(late) != 1 else ''} ({total:,.2f}) released for months after the month of "
        f"death: recover {'them' if len(late) != 1 else 'it'}."
    )


# --- reactions, the daily job, staff actions -----------------------------------------------------------


def accounts_open_on_event(*, event: EmploymentEvent, actor: Actor) -> None:
    """A separation or death makes a defined benefit payable: open the plan's record account so the benefit has a
    schedule (registered before payments' own reaction, which then recomputes it)."""

    if event.kind not in (EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH):
        return
    for participation in Participation.objects.filter(
        person=event.person, plan__kind=Plan.Kind.DEFINED_BENEFIT
    ).select_related("plan"):
        _record_account(participation, event.effective_date)


def _record_accounts(opened: Sequence[tuple[Participation, dt.date]]) -> list[Account]:
    """The defined benefit plan's record account of each participation, which carries the benefit's schedule
    (opened on the event if need be), in `opened`'s order."""
    wanted = []
    for participation, on in opened:
        version = participation.plan.version_on(on)
        rule = next(
            (r for r in version.provision("distribution", []) or [] if r["trigger"] == "separation"), None
        )
        wanted.append(
            (participation, rule["accounts"][0] if rule else version.account_kinds()[0]["kind"], on)
        )
    return accounts_get_or_open(wanted=wanted)


def _record_account(participation: Participation, on: dt.date) -> Account:
    return _record_accounts([(participation, on)])[0]


@dataclass(frozen=True)
class AnnuityTakenOver:
    """A defined benefit another administrator began paying (a conversion): the terms it fixed at commencement
    (BRP 3.4(c)), and the Payment Date of the first payment it has not made."""

    participation: Participation
    form: str
    commencement: dt.date
    first_payment: dt.date
    monthly: Decimal
    next_payment: dt.date
    survivor_name: str = ""
    survivor_monthly: Decimal | None = None


class AnnuityTakeOverError(AnnuityError):
    """A benefit in pay that cannot be taken over; `taken` says which."""

    def __init__(self, message: str, *, taken: AnnuityTakenOver) -> None:
        super().__init__(message)
        self.taken = taken


def _latest_records(participation_ids: Collection[int], as_of: dt.date) -> dict[int, DefinedBenefitRecord]:
    """participation id -> its Pension Plan figures as last recorded on or before `as_of`."""
    out: dict[int, DefinedBenefitRecord] = {}
    for record in DefinedBenefitRecord.objects.filter(
        participation_id__in=participation_ids, as_of__lte=as_of
    ).order_by("participation_id", "-as_of", "-id"):
        out.setdefault(record.participation_id, record)
    return out


def annuities_take_over(
    *, taken: Sequence[AnnuityTakenOver], by: str, now: dt.datetime, as_of: dt.date
) -> list[list[ScheduledPayment]]:
    """Record each benefit in pay as fixed, with the payments the prior administrator made recorded as paid by it
    (they move nothing), then plan the rest as any annuity in pay (`annuities_recompute`, the stored terms). In a
    fixed number of statements whatever the number of benefits. Returns, in `taken`'s order, the payments still to
    make of each, first due first."""
    if not taken:
        return []
    inputs = _Inputs.read({t.participation.pk for t in taken}, known=[t.participation for t in taken])
    people = [inputs.participations[t.participation.pk] for t in taken]
    separations = []
    for t, participation in zip(taken, people, strict=True):
        sep = inputs.events.get(participation.person_id, {}).get(EmploymentEvent.Kind.SEPARATION)
        if sep is None:
            raise AnnuityTakeOverError(
                f"{participation} has no separation on file: a benefit in pay needs one", taken=t
            )
        separations.append(sep)
    accounts = _record_accounts(list(zip(people, separations, strict=True)))
    schedules = [
        PaymentSchedule(
            participation=t.participation,
            account=account,
            revision=1,
            computed_at=now,
            computed_because=by[:200],
        )
        for t, account in zip(taken, accounts, strict=True)
    ]
    insert_new(objs=schedules, model=PaymentSchedule, history=True)
    records = _latest_records({t.participation.pk for t in taken}, as_of)
    annuities = []
    for t, schedule, sep in zip(taken, schedules, separations, strict=True):
        detail = FORM_DETAILS.get(t.form, {"label": t.form})
        annuities.append(
            Annuity(
                schedule=schedule,
                participation=t.participation,
                status=Annuity.Status.IN_PAY,
                benefit="Supplemental Benefit",
                trigger="separation",
                event_date=sep,
                commencement_date=t.commencement,
                first_payment_date=t.first_payment,
                form=t.form,
                form_label=detail["label"][:120],
                monthly=t.monthly,
                survivor_percent=detail.get("survivor", 0),
                survivor_monthly=t.survivor_monthly,
                certain_months=detail.get("certain", 0),
                survivor_name=t.survivor_name[:200],
                record=records.get(t.participation.pk),
                basis=f"fixed at commencement by the prior administrator; taken over: {by}"[:300],
                fixed_on=t.first_payment,
                computed_at=now,
            )
        )
    insert_new(objs=annuities, model=Annuity, history=True)
    dates: dict[dt.date, tuple[dt.date, dt.date]] = {}
    paid_by = f"paid by the prior administrator ({by})"[:300]
    # The payments made, as the rows `_rows(..., paid_by=...)` would build, but as plain values: the values of each
    # payment, then its benefit's, then the call's (`core.bulk.insert_values`; a take-over writes some 80 a benefit).
    common = tuple(
        column_values(
            model=ScheduledPayment,
            values={
                "revision": 1,
                "share": ScheduledPayment.Share.DEFINED,
                "valuation_rule": "fixed_at_commencement",
                "created_at": now,
                "status": S.PAID,
                "withholding_basis": paid_by,
            },
        )
    )
    rows: list[tuple] = []
    made_of: list[tuple[int, list[Due]]] = []
    for t, participation, schedule, annuity in zip(taken, people, schedules, annuities, strict=True):
        terms = _stored(
            annuity,
            participation,
            inputs.events[participation.person_id],
            inputs.beneficiaries[participation.pk],
        ).terms
        assert terms is not None
        made, _ = plan_payments(t=terms, through=t.next_payment - dt.timedelta(days=1))
        made_of.append((schedule.pk, made))
        own = (schedule.pk, schedule.account_id, schedule.participation_id, t.commencement, *common)
        for d in made:
            release, valuable_on = _release(d.payment_date, dates)
            rows.append(
                (
                    str(d.trigger),
                    d.benefit[:120],
                    str(d.kind),
                    d.number,
                    d.of,
                    d.payment_date,
                    valuable_on,
                    release,
                    d.cite[:60],
                    d.reason[:300],
                    d.hold_code,
                    d.hold_reason,
                    d.amount,
                    d.payee[:200],
                    d.payment_date,
                    *own,
                )
            )
    ids = iter(insert_values(model=ScheduledPayment, columns=_MADE_COLUMNS, rows=rows, history=True))
    del rows  # written: not held through the recomputation (some 80 a benefit)
    # the schedules are new: these are all their payments, in the order of their ids
    written = {pk: [_Made(next(ids), d) for d in made] for pk, made in made_of}
    del made_of, ids
    planned: dict[int, list[ScheduledPayment]] = {}
    _recompute(
        accounts=accounts, because=by, now=now, as_of=as_of, written=written, inputs=inputs, planned=planned
    )
    # what is left to pay is what the recomputation added: the payments made are all paid
    mutable = set(ScheduledPayment.MUTABLE)
    return [
        sorted(
            (p for p in planned.get(s.pk, []) if p.status in mutable),
            key=lambda p: (p.payment_date, p.pk or 0),
        )
        for s in schedules
    ]


_MADE_COLUMNS = (
    "trigger",
    "benefit",
    "kind",
    "number",
    "of",
    "payment_date",
    "valuable_on",
    "release_date",
    "cite",
    "reason",
    "hold_code",
    "hold_reason",
    "amount",
    "payee_name",
    "paid_on",
    "schedule_id",
    "account_id",
    "participation_id",
    "valued_as_of",
    "revision",
    "share",
    "valuation_rule",
    "created_at",
    "status",
    "withholding_basis",
)


class _Made:
    """A payment a take-over has just recorded as made (paid by the prior administrator), as `_replan` reads the
    stored payments of a schedule: paid, it never changes, so no model instance is built for it."""

    __slots__ = (
        "id",
        "trigger",
        "kind",
        "number",
        "payment_date",
        "amount",
        "payee_name",
        "benefit",
        "hold_code",
    )
    status = S.PAID
    run_id = None

    def __init__(self, pk: int, d: Due) -> None:
        self.id = pk
        self.trigger, self.kind, self.number = d.trigger, d.kind, d.number
        self.payment_date, self.amount = d.payment_date, d.amount
        self.payee_name, self.benefit, self.hold_code = d.payee[:200], d.benefit[:120], d.hold_code

    @property
    def pk(self) -> int:
        return self.id


def annuity_take_over(
    *, taken: AnnuityTakenOver, by: str, now: dt.datetime, as_of: dt.date
) -> list[ScheduledPayment]:
    """One benefit in pay taken over (`annuities_take_over`); returns its payments still to make."""
    return annuities_take_over(taken=[taken], by=by, now=now, as_of=as_of)[0]


def annuities_not_commenced_open(
    *, participations: Sequence[Participation], by: str, now: dt.datetime, as_of: dt.date
) -> list[list[ScheduledPayment]]:
    """Separated participants' benefits not yet begun, taken over: open each record account and plan it as the
    screens do after a separation (`annuities_recompute`), the writes in a fixed number of statements. Returns, in
    `participations`' order, each one's payments first due first (none without a separation on file)."""
    inputs = _Inputs.read({p.pk for p in participations}, known=participations)
    separated = []
    for i, p in enumerate(participations):
        participation = inputs.participations[p.pk]
        sep = inputs.events.get(participation.person_id, {}).get(EmploymentEvent.Kind.SEPARATION)
        if sep is not None:
            separated.append((i, participation, sep))
    accounts = _record_accounts([(p, sep) for _, p, sep in separated])
    # none paid yet (a conversion's new accounts): every payment is one the recomputation adds, not read back
    fresh = not ScheduledPayment.objects.filter(account__in=accounts).exists()
    planned: dict[int, list[ScheduledPayment]] = {}
    # Each benefit is quoted afresh (BRP 3.2-4.2): within the call the same Key Employee list, dated IRS figures
    # and actuarial factors are read or computed once (core.memo; nothing here writes them).
    with memo.run_memo():
        # each one's Pension Plan figures in force on its own commencement: all read in one statement
        pension_records_seed(participations=[p for _, p, _ in separated])
        _recompute(accounts=accounts, because=by, now=now, as_of=as_of, inputs=inputs, planned=planned)
    left: dict[int, list[ScheduledPayment]] = defaultdict(list)
    if fresh:
        for rows in planned.values():  # each row holds its schedule, as select_related would
            for payment in rows:
                if payment.status in ScheduledPayment.MUTABLE:
                    left[payment.account_id].append(payment)
        for rows in left.values():
            rows.sort(key=lambda p: (p.payment_date, p.pk or 0))
    else:
        for payment in (
            ScheduledPayment.objects.filter(account__in=accounts, status__in=ScheduledPayment.MUTABLE)
            .select_related("schedule")
            .order_by("payment_date", "id")
        ):
            left[payment.account_id].append(payment)
    out: list[list[ScheduledPayment]] = [[] for _ in participations]
    for (i, _, _), account in zip(separated, accounts, strict=True):
        out[i] = left[account.pk]
    return out


def annuity_not_commenced_open(
    *, participation: Participation, by: str, now: dt.datetime, as_of: dt.date
) -> list[ScheduledPayment]:
    """One benefit not yet begun, taken over (`annuities_not_commenced_open`); returns its payments."""
    return annuities_not_commenced_open(participations=[participation], by=by, now=now, as_of=as_of)[0]


def annuities_extend(*, day: dt.date, now: dt.datetime) -> int:
    """Plan each annuity in pay twelve months ahead (the daily payment job; a rerun the same month does nothing)."""
    ids = list(
        Annuity.objects.filter(
            status=Annuity.Status.IN_PAY, scheduled_through__lt=horizon(day=day)
        ).values_list("schedule__account_id", flat=True)
    )
    accounts = list(
        Account.objects.filter(id__in=ids).select_related("participation__plan", "participation__person")
    )
    annuities_recompute(
        accounts=accounts, because="monthly annuity payments planned twelve months ahead", now=now, as_of=day
    )
    return len(accounts)


def annuity_survivor_death_record(
    *, annuity: Annuity, died_on: dt.date, actor: Actor, now: dt.datetime | None = None
) -> Annuity:
    """The survivor (or the Spouse receiving 5.1) died: their payments stop after the month of death."""
    now = now or timezone.now()
    if annuity.survivor_died_on is not None:
        raise AnnuityError(f"The survivor's death is already recorded ({_day(annuity.survivor_died_on)}).")
    if not (annuity.survivor_percent or annuity.form == "prsb"):
        raise AnnuityError(f"The {annuity.form_label or 'benefit'} pays no survivor benefit.")
    if annuity.event_date and died_on < annuity.event_date and annuity.form == "prsb":
        raise AnnuityError("The survivor's death cannot come before the participant's.")
    annuity.survivor_died_on = died_on
    annuity.save(update_fields=["survivor_died_on"])
    audit_record(
        action="annuity.survivor_death",
        actor=actor,
        at=now,
        obj=annuity,
        data={"died_on": died_on.isoformat()},
    )
    account = Account.objects.select_related("participation__plan", "participation__person").get(
        pk=annuity.schedule.account_id
    )
    annuities_recompute(
        accounts=[account], now=now, because=f"survivor's death on {died_on} recorded by {actor_label(actor)}"
    )
    annuity.refresh_from_db()
    return annuity


def annuities_of(*, person: Person) -> list[Annuity]:
    return list(
        Annuity.objects.filter(participation__person=person)
        .select_related("schedule", "participation__plan")
        .order_by("id")
    )


def annuity_payments(*, annuity: Annuity) -> dict[str, list[ScheduledPayment]]:
    rows = list(ScheduledPayment.objects.filter(schedule=annuity.schedule).order_by("payment_date", "id"))
    out: dict[str, list[ScheduledPayment]] = defaultdict(list)
    for p in rows:
        out["cancelled" if p.status == S.CANCELLED else "active"].append(p)
    return out


def in_pay_read(*, participation: Participation, out: dict, **_: object) -> None:
    """The benefit in pay and its payments, for the pensions pages (hook `benefit_in_pay_read`)."""
    annuity = Annuity.objects.filter(participation=participation).select_related("schedule").first()
    out["annuity"] = annuity
    out["payments"] = (
        list(
            ScheduledPayment.objects.filter(schedule=annuity.schedule)
            .exclude(status=S.CANCELLED)
            .order_by("payment_date", "id")
        )
        if annuity is not None
        else []
    )


def on_survivor_death(
    *, participation: Participation, died_on: dt.date, actor: Actor, now: dt.datetime, **_: object
) -> None:
    """The staff action of the pensions page (hook `benefit_survivor_death`); refusals are AnnuityError."""
    annuity = Annuity.objects.filter(participation=participation).first()
    if annuity is None:
        raise AnnuityError("No benefit is in pay.")
    annuity_survivor_death_record(annuity=annuity, died_on=died_on, actor=actor, now=now)


# --- BRP App. A 4: the Company cashes out the Pre-2005 Supplemental Benefit ----------------------------------


@dataclass
class Pre2005CashOutQuote:
    """What a cash-out decided on `as_of` would do: one lump sum on `value.on` to `payee` in place of `replaced`."""

    annuity: Annuity
    value: Pre2005CashOutValue
    payee: str
    replaced: list[ScheduledPayment]
    monthly: Decimal
    survivor_monthly: Decimal | None


def _pre_2005_rows(annuity: Annuity) -> list[ScheduledPayment]:
    return list(
        ScheduledPayment.objects.filter(schedule=annuity.schedule, benefit__startswith="Pre-2005")
        .exclude(status=S.CANCELLED)
        .order_by("payment_date", "id")
    )


def annuity_pre_2005_cash_out_quote(*, annuity: Annuity, as_of: dt.date) -> Pre2005CashOutQuote:
    """The lump sum, its basis and the payments it replaces; refused (AnnuityError, with the section) when the
    benefit has no Pre-2005 part, is not in pay and fixed, or was already paid out."""
    pre = annuity.pre_2005 or {}
    version = annuity.participation.plan.version_on(annuity.event_date or as_of)
    if not pre or not version.has("db_pre_2005"):
        raise AnnuityError("There is no Pre-2005 Supplemental Benefit to distribute.")
    cite = version.provision("db_pre_2005").get("cash_out_cite", version.cite("db_pre_2005"))
    if pre.get("cash_out"):
        done = pre["cash_out"]
        raise AnnuityError(
            f"The Pre-2005 Supplemental Benefit was already distributed: a lump sum of "
            f"{Decimal(done['amount']):,.2f} on {_day(dt.date.fromisoformat(done['on']))}; the Company has no "
            f"further liability for it ({cite}(b))."
        )
    # BRP 3.4(c): the figures are fixed once a payment of the benefit is released
    fixed = ScheduledPayment.objects.filter(schedule=annuity.schedule, status__in=STARTED).exists()
    if annuity.status != Annuity.Status.IN_PAY or not fixed:
        raise AnnuityError(
            f"The Pre-2005 Supplemental Benefit is not in pay with its amount fixed (a payment released): its "
            f"Actuarial Equivalent cannot be distributed yet ({cite}(a))."
        )
    start = dt.date.fromisoformat(pre["start"])
    rows = _pre_2005_rows(annuity)
    started = [p.payment_date for p in rows if p.status in STARTED]
    on = max(day_of_month_after(as_of, 1, 1), start)
    if started:
        on = max(on, add_months(first_of_month(max(started)), 1))
    death = _events(annuity.participation.person).get(EmploymentEvent.Kind.DEATH)
    alive = death is None or death >= on
    survivor_alive = annuity.survivor_died_on is None or annuity.survivor_died_on > on
    survivor_monthly = Decimal(pre["survivor_monthly"]) if pre.get("survivor_monthly") else None
    record = annuity.record
    try:
        value = pre_2005_cash_out_value(
            participation=annuity.participation,
            on=on,
            monthly=Decimal(pre["monthly"]),
            survivor_monthly=survivor_monthly,
            spouse_birth_date=record.spouse_birth_date if record is not None else None,
            participant_alive=alive,
            survivor_alive=survivor_alive,
        )
    except BenefitError as exc:
        raise AnnuityError(f"Not distributable: {exc}.") from exc
    return Pre2005CashOutQuote(
        annuity=annuity,
        value=value,
        payee="" if alive else annuity.survivor_name,
        replaced=[p for p in rows if p.payment_date >= on and p.status not in STARTED],
        monthly=Decimal(pre["monthly"]),
        survivor_monthly=survivor_monthly,
    )


def annuity_pre_2005_cash_out(*, annuity: Annuity, as_of: dt.date, actor: Actor, now: dt.datetime) -> Annuity:
    """BRP App. A 4: the Company distributes the Actuarial Equivalent of the Pre-2005 Supplemental Benefit in one
    lump sum on the next Payment Date. The later Pre-2005 payments not released are cancelled (with the reason),
    one lump sum payment goes through the payment runs like any other; released and paid payments never change."""
    with transaction.atomic():
        annuity = (
            Annuity.objects.select_for_update().select_related("participation__person").get(pk=annuity.pk)
        )
        quote = annuity_pre_2005_cash_out_quote(annuity=annuity, as_of=as_of)
        value = quote.value
        annuity.pre_2005 = {
            **annuity.pre_2005,
            "cash_out": {
                "on": value.on.isoformat(),
                "amount": str(value.amount),
                "payee": quote.payee,
                "cite": value.cite,
                "basis": value.basis,
                "steps": [list(s) for s in value.steps],
                "decided_on": as_of.isoformat(),
                "by": actor_label(actor),
            },
        }
        annuity.save(update_fields=["pre_2005"])
        audit_record(
            action="annuity.pre_2005_cash_out",
            actor=actor,
            at=now,
            obj=annuity,
            reason=f"the Actuarial Equivalent of the Pre-2005 Supplemental Benefit ({value.cite})",
            data={
                "on": value.on.isoformat(),
                "amount": str(value.amount),
                "basis": value.basis,
                "replaces": [p.pk for p in quote.replaced],
            },
        )
        account = Account.objects.select_related("participation__plan", "participation__person").get(
            pk=annuity.schedule.account_id
        )
        annuities_recompute(
            accounts=[account],
            now=now,
            as_of=as_of,
            because=f"Pre-2005 Supplemental Benefit cashed out by {actor_label(actor)} ({value.cite})",
        )
    annuity.refresh_from_db()
    return annuity


def pre_2005_cash_out_read(*, participation: Participation, as_of: dt.date, out: dict, **_: object) -> None:
    """The confirmation summary of the pensions page (hook `benefit_pre_2005_cash_out_read`): the quote, or why not."""
    annuity = Annuity.objects.filter(participation=participation).select_related("schedule", "record").first()
    if annuity is None:
        out["error"] = "No benefit is in pay."
        return
    try:
        out["cash_out"] = annuity_pre_2005_cash_out_quote(annuity=annuity, as_of=as_of)
    except AnnuityError as exc:
        out["error"] = str(exc)


def on_pre_2005_cash_out(
    *, participation: Participation, as_of: dt.date, actor: Actor, now: dt.datetime, **_: object
) -> None:
    """The staff action of the pensions page (hook `benefit_pre_2005_cash_out`); refusals are AnnuityError."""
    annuity = Annuity.objects.filter(participation=participation).first()
    if annuity is None:
        raise AnnuityError("No benefit is in pay.")
    annuity_pre_2005_cash_out(annuity=annuity, as_of=as_of, actor=actor, now=now)
