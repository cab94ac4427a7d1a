"""The BRP Supplemental Benefit (Articles III-V): a frozen defined-benefit restoration.

benefit (single life, annual) = (Pension Plan benefit without the Tax Limits + imputed service benefit)
                                 - the Pension Plan benefit payable                             (3.2)
  x the Pension Plan's early or late commencement adjustment                                    (3.3)
  capped at (Maximum Benefit - the annual Pension Plan benefit payable at that commencement: before Normal
  Retirement, after the same early factor), the Maximum Benefit (never actuarially adjusted) being
  $462,500 for 2008 raised each January 1 by the 415(b)(1)(A) percentage, fixed at commencement (3.4)
then converted to the elected form on the plan's actuarial basis                                 (4.1, 4.2(c)).
Commencement: the 1st day of the month after the month of separation (4.2(a)), later by the years an
election defers it (4.2(d)); a Key Employee starts the 1st day of the month after the six-month
anniversary, the first payment including the ones missed (4.3).
Pre-Retirement Survivor Benefit (5.1): the survivor part of a 50% Joint and Survivor Annuity computed
just before death, from the later of the 1st of the month after the earliest Early Retirement Date and
the 1st of the second month after the month of death.

Every figure is a step with its section, so the pages and the PDF can show how it was reached.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from books.models import DefinedBenefitRecord
from books.services.accounts import BooksError
from core import hooks, memo
from core.audit import actor_label, audit_record
from core.dates import add_years, day_of_month_after, first_day_of_month_after_anniversary, years_between
from core.errors import ApplicationError
from core.money import ZERO, money
from core.pdf import document_store
from participants.models import Participation, Person
from participants.selectors import key_employee_status
from plans import actuarial
from plans.selectors import MissingFigure, figure_for_year

if TYPE_CHECKING:
    from core.audit import Actor
    from core.models import Document
    from plans.models import PlanVersion

JOINT_FORMS = ("qjsa", "js_100", "js_75", "js_50")


def _day(d: dt.date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


class BenefitError(ApplicationError):
    """No benefit can be computed; the message says why, with the section. `code` tells a refusal under the
    plan's rules ("not_eligible") from missing inputs staff can record ("no_figures", "no_spouse", "no_limit")."""

    def __init__(self, message: str, code: str = "not_eligible") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class FormOption:
    """One form of benefit of 4.2(c), Actuarially Equivalent to the Single Life Annuity."""

    form: str
    label: str
    annual: Decimal | None = None
    monthly: Decimal | None = None
    factor: float | None = None
    survivor_percent: int = 0
    survivor_monthly: Decimal | None = None
    certain_months: int = 0
    is_default: bool = False
    is_elected: bool = False
    unavailable: str = ""


@dataclass
class BenefitQuote:
    participation: Participation
    separation_date: dt.date
    commencement_date: dt.date
    first_payment_date: dt.date
    form: str
    form_label: str
    single_life_annual: Decimal
    maximum_benefit: Decimal
    capped: bool
    annual: Decimal | None  # None: a joint form without the Spouse's date of birth
    monthly: Decimal | None
    missed_payments: int
    first_payment: Decimal | None
    lump_sum_value: Decimal
    basis: str
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (what, amount, citation)
    notes: list[str] = field(default_factory=list)
    forms: list[FormOption] = field(default_factory=list)
    default_form: str = ""
    record: DefinedBenefitRecord | None = None
    spouse_birth_date: dt.date | None = None
    defer_years: int = 0
    key_employee: bool = False
    key_employee_known: bool = True
    survivor_percent: int = 0
    survivor_monthly: Decimal | None = None
    certain_months: int = 0
    maximum_benefit_ceiling: Decimal = ZERO
    provisional: list[str] = field(default_factory=list)  # figures not yet recorded: the quote may change
    cites: dict[str, str] = field(default_factory=dict)
    # How the catalog supplied the actuarial basis (a table or rate carried from another year): for staff,
    # never in what a participant reads (issue 11).
    basis_notes: list[str] = field(default_factory=list)
    # Appendix A: the Pre-2005 Supplemental Benefit, paid apart (None without one); the form amounts above
    # (annual, monthly, forms, lump_sum_value) are then those of the Post-2004 Supplemental Benefit.
    pre_2005: Pre2005Part | None = None
    post_2004_single_life_annual: Decimal | None = None


@dataclass
class Pre2005Part:
    """BRP Appendix A 3: paid at the time and in the form of the Pension Plan benefit, outside 409A."""

    single_life_annual: Decimal
    start_date: dt.date
    form: str
    form_label: str
    annual: Decimal | None
    monthly: Decimal | None
    survivor_percent: int
    survivor_monthly: Decimal | None
    lump_sum_value: Decimal
    cite: str
    survivor_cite: str
    cash_out_cite: str
    post_2004_cite: str = ""


@dataclass
class SurvivorQuote:
    """BRP 5.1: the Pre-Retirement Survivor Benefit of a surviving Spouse."""

    participation: Participation
    death_date: dt.date
    start_date: dt.date
    single_life_annual: Decimal
    joint_annual: Decimal
    annual: Decimal
    monthly: Decimal
    spouse_birth_date: dt.date
    basis: str
    steps: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cite: str = ""
    record: DefinedBenefitRecord | None = None
    basis_notes: list[str] = field(default_factory=list)  # for staff only, as BenefitQuote's


# --- figures ----------------------------------------------------------------------------------------


def maximum_benefit(*, version: PlanVersion, year: int) -> Decimal:
    """BRP 3.4: the 2008 figure raised each January 1 by the 415(b)(1)(A) percentage (the ratio of the limits)."""
    rule = version.provision("db_maximum_benefit")
    base_year, base = rule["base_year"], Decimal(rule["base_amount"])
    index = rule["indexed_by"]
    return money(base * figure_for_year(code=index, year=year) / figure_for_year(code=index, year=base_year))


def maximum_benefit_for(*, version: PlanVersion, year: int) -> tuple[Decimal, str]:
    """(Maximum Benefit, note). A year whose 415(b)(1)(A) limit is not recorded yet uses the latest recorded
    year before it and says so; a benefit is not fixed on such a figure (BRP 3.4(c))."""
    try:
        return maximum_benefit(version=version, year=year), ""
    except MissingFigure:
        index = version.provision("db_maximum_benefit")["indexed_by"]
        for earlier in range(year - 1, version.provision("db_maximum_benefit")["base_year"] - 1, -1):
            try:
                return maximum_benefit(version=version, year=earlier), (
                    f"the {index} limit for {year} is not recorded: the Maximum Benefit of {earlier} is used "
                    f"until the Committee records it ({version.cite('db_maximum_benefit')})"
                )
            except MissingFigure:
                continue
        raise BenefitError(
            f"no {index} limit is recorded for {year} ({version.cite('db_maximum_benefit')})", "no_limit"
        )


def pension_figures(*, participation: Participation, as_of: dt.date) -> DefinedBenefitRecord | None:
    """The Pension Plan figures in force on `as_of`: the latest recorded as of that day or before (a report over
    many participants seeds these for the run: pension_figures_seed, or every record of each, pension_records_seed)."""
    records: list[DefinedBenefitRecord] | None = memo.recall(("pension_records", participation.pk))
    if records is not None:  # latest first, as the query below orders them
        return next((r for r in records if r.as_of <= as_of), None)
    return memo.remember(
        ("pension_figures", participation.pk, as_of),
        lambda: (
            DefinedBenefitRecord.objects.filter(participation=participation, as_of__lte=as_of)
            .order_by("-as_of", "-id")
            .first()
        ),
    )


def pension_figures_seed(*, participations: list[Participation], as_of: dt.date) -> None:
    """Read the figures in force on `as_of` of many participants at once, for the run (core.memo)."""
    latest: dict[int, DefinedBenefitRecord] = {}
    for record in DefinedBenefitRecord.objects.filter(
        participation__in=participations, as_of__lte=as_of
    ).order_by("participation_id", "-as_of", "-id"):
        latest.setdefault(record.participation_id, record)
    for participation in participations:
        memo.seed(("pension_figures", participation.pk, as_of), latest.get(participation.pk))


def pension_records_seed(*, participations: Sequence[Participation]) -> None:
    """Read every Pension Plan figures record of many participants at once, for the run (core.memo):
    `pension_figures` then finds the one in force on any day, for a batch that quotes each participant as of a day
    of their own (a benefit not yet begun, as of its commencement)."""
    if not memo.active():
        return
    records: dict[int, list[DefinedBenefitRecord]] = {p.pk: [] for p in participations}
    for record in DefinedBenefitRecord.objects.filter(participation_id__in=list(records)).order_by(
        "participation_id", "-as_of", "-id"
    ):
        records[record.participation_id].append(record)
    for pk, of_one in records.items():
        memo.seed(("pension_records", pk), of_one)


def benefit_commencement_date(*, separation_date: dt.date, defer_years: int = 0) -> dt.date:
    """BRP 1.3(b), 4.2(a): the 1st day of the month after the month of separation, later by any deferral (4.2(d))."""
    return add_years(day_of_month_after(separation_date, 1, 1), defer_years)


def _record_or_error(
    participation: Participation, as_of: dt.date, version: PlanVersion
) -> DefinedBenefitRecord:
    record = pension_figures(participation=participation, as_of=as_of)
    if record is None:
        raise BenefitError(
            f"no Pension Plan figures are recorded for {participation.person} ({version.cite('db_benefit')})",
            "no_figures",
        )
    return record


def _supplemental(
    version: PlanVersion, record: DefinedBenefitRecord, commencement: dt.date
) -> tuple[Decimal, Decimal, Decimal, bool, list[tuple[str, str, str]], list[str]]:
    """BRP 3.2-3.4: (single life annual, Maximum Benefit, ceiling, capped, steps, notes)."""
    cite = version.cite("db_benefit")
    steps = [
        ("Pension Plan benefit without the Tax Limits", str(record.unlimited_annual_benefit), cite + "(a)")
    ]
    if record.imputed_annual_benefit:
        steps.append(
            (
                "plus imputed Benefit Service",
                str(record.imputed_annual_benefit),
                version.cite("db_benefit") + "(a)(ii), 3.5",
            )
        )
    steps.append(("less the Pension Plan benefit payable", str(record.payable_annual_benefit), cite + "(b)"))
    gross = max(
        ZERO, record.unlimited_annual_benefit + record.imputed_annual_benefit - record.payable_annual_benefit
    )
    steps.append(("Supplemental Benefit before adjustment", str(money(gross)), cite))
    adjusted = money(gross * record.early_adjustment_factor)
    if record.early_adjustment_factor != 1:
        steps.append(
            (
                f"early/late commencement adjustment x {record.early_adjustment_factor}",
                str(adjusted),
                version.provision("db_benefit").get("cite_early", cite),
            )
        )
    max_benefit, note = maximum_benefit_for(version=version, year=commencement.year)
    max_cite = version.cite("db_maximum_benefit")
    # BRP 3.4(a): the ceiling subtracts the Pension Plan benefit *payable* at this commencement: before Normal
    # Retirement, after the same early factor 3.3 applies; the Maximum Benefit itself is never adjusted (3.4(b)).
    payable = record.payable_annual_benefit
    early = record.normal_retirement_date is not None and commencement < record.normal_retirement_date
    if early and record.early_adjustment_factor != 1:
        payable = money(payable * record.early_adjustment_factor)
    steps.append((f"Maximum Benefit for {commencement.year}", str(max_benefit), max_cite + "(b)"))
    if payable != record.payable_annual_benefit:
        steps.append(
            (
                f"Pension Plan benefit payable from {_day(commencement)}, before Normal Retirement: "
                f"{record.payable_annual_benefit} x {record.early_adjustment_factor}",
                str(payable),
                max_cite + "(a), " + version.provision("db_benefit").get("cite_early", cite),
            )
        )
    ceiling = max(ZERO, max_benefit - payable)
    capped = adjusted > ceiling
    sla = min(adjusted, ceiling)
    steps.append(
        ("less the annual Pension Plan benefit payable: the ceiling", str(ceiling), max_cite + "(a)")
    )
    steps.append(
        (
            "Supplemental Benefit, Single Life Annuity (annual)"
            + (", capped at the ceiling" if capped else ""),
            str(sla),
            version.provision("db_benefit").get("cite_computation", cite),
        )
    )
    return sla, max_benefit, ceiling, capped, steps, [note] if note else []


def _eligibility(
    version: PlanVersion,
    record: DefinedBenefitRecord,
    person: Person,
    separation_date: dt.date,
    commencement: dt.date,
) -> None:
    """BRP 3.1: (i) 15 years of Benefit Service or the Early or Normal Retirement Date reached at termination, and
    (ii) for distributions beginning on or after January 1, 2008, termination after meeting Early or Normal Retirement."""
    rule = version.provision("db_eligibility")
    cite = version.cite("db_eligibility")
    reached = [
        d for d in (record.early_retirement_date, record.normal_retirement_date) if d and d <= separation_date
    ]
    if record.benefit_service_years < rule["benefit_service_years"] and not reached:
        raise BenefitError(
            f"{person} has {record.benefit_service_years} years of Benefit Service and had reached neither the Early "
            f"nor the Normal Retirement Date at termination: no Supplemental Benefit ({cite})"
        )
    required_from = rule.get("retirement_required_from")
    if required_from and commencement >= dt.date.fromisoformat(str(required_from)) and not reached:
        first = min(d for d in (record.early_retirement_date, record.normal_retirement_date) if d)
        raise BenefitError(
            f"{person} terminated on {_day(separation_date)}, before meeting the requirements for Early or Normal "
            f"Retirement under the Pension Plan (the earliest, {_day(first)}): a distribution beginning on or after "
            f"{_day(dt.date.fromisoformat(str(required_from)))} is not payable ({cite}(ii))"
        )


def _basis(
    version: PlanVersion, commencement: dt.date, person: Person
) -> tuple[actuarial.MortalityTable, actuarial.InterestBasis, str, list[str]]:
    rule = version.provision("actuarial_basis")
    table, table_note = actuarial.mortality_table(commencement.year)
    interest, rate_note = actuarial.segment_rates_for(
        commencement,
        rule.get("lookback_months", 1),
        rule.get("segment_boundaries_years", actuarial.DEFAULT_SEGMENT_BOUNDARIES),
    )
    age = years_between(person.birth_date, commencement)
    return (
        table,
        interest,
        f"{table.name}; {interest.label}; age {age}",
        [n for n in (table_note, rate_note) if n],
    )


def _forms(
    version: PlanVersion,
    sla: Decimal,
    table: actuarial.MortalityTable,
    interest: actuarial.InterestBasis,
    life: actuarial.Life,
    spouse: actuarial.Life | None,
    default: str,
    elected: str,
    every_form: bool = True,
) -> tuple[list[FormOption], Decimal]:
    """Every form of 4.2(c) side by side, and the lump sum; without `every_form`, only the elected form and the
    lump sum (what the liability report values, BRP 8.1)."""
    out = []
    lump = ZERO
    for form in version.provision("db_forms")["forms"]:
        if not every_form and form not in (elected, "lump_sum"):
            continue
        detail = actuarial.FORM_DETAILS.get(form, {"label": form})
        option = FormOption(
            form=form,
            label=detail["label"],
            is_default=form == default,
            is_elected=form == elected,
            survivor_percent=detail.get("survivor", 0),
            certain_months=detail.get("certain", 0),
        )
        if form in JOINT_FORMS and spouse is None:
            option.unavailable = "needs the Spouse's (or survivor's) date of birth"
            out.append(option)
            continue
        q = actuarial.convert(
            single_life_annual=sla,
            form=form,
            table=table,
            basis=interest,
            participant=life,
            spouse=spouse if form in JOINT_FORMS else None,
        )
        option.annual, option.factor = q.annual, q.factor
        if form == "lump_sum":
            lump = q.annual
            option.monthly = None
        else:
            option.monthly = money(q.annual / 12)
            if option.survivor_percent:
                option.survivor_monthly = money(q.annual * option.survivor_percent / 100 / 12)
        out.append(option)
    return out, lump


# --- the quote --------------------------------------------------------------------------------------


def brp_benefit_sheet(
    *,
    participation: Participation,
    separation_date: dt.date,
    as_of: dt.date,
    form: str | None = None,
    spouse_birth_date: dt.date | None = None,
    defer_years: int = 0,
    every_form: bool = True,
) -> BenefitQuote:
    """The Supplemental Benefit of a separation on `separation_date`, every form side by side. The chosen form
    (`form`, else the default of 4.2(c)) may be unavailable (a joint form without the survivor's birth date):
    then its amounts are None and `forms` says why; `brp_benefit_quote` refuses that case. Without `every_form`
    `forms` holds only the chosen form and the lump sum (the liability report of every participant, BRP 8.1)."""
    plan = participation.plan
    version = plan.version_on(separation_date)
    person = participation.person
    record = _record_or_error(participation, as_of, version)
    commencement = benefit_commencement_date(separation_date=separation_date, defer_years=defer_years)
    _eligibility(version, record, person, separation_date, commencement)
    cites = {
        "commencement": version.cite("db_commencement"),
        "forms": version.cite("db_forms"),
        "maximum": version.cite("db_maximum_benefit"),
        "benefit": version.cite("db_benefit"),
        "eligibility": version.cite("db_eligibility"),
        "basis": version.cite("actuarial_basis"),
        "change": version.cite("db_election_change"),
        "key": version.cite("key_employee"),
    }
    first_payment_date = commencement
    ke = version.provision("key_employee")
    status = key_employee_status(
        person=person,
        on=separation_date,
        effective_month=ke["effective_month"],
        effective_day=ke["effective_day"],
    )
    delay_rule = next((r for r in version.provision("distribution", []) if r.get("key_employee_delay")), None)
    if delay_rule:
        cites["key_delay"] = delay_rule["key_employee_delay"].get("cite", cites["key"])
    if status.key and delay_rule:
        first_payment_date = max(
            commencement,
            first_day_of_month_after_anniversary(separation_date, delay_rule["key_employee_delay"]["months"]),
        )
    sla, max_benefit, ceiling, capped, steps, notes = _supplemental(version, record, commencement)
    provisional = list(notes)
    forms = version.provision("db_forms")
    married = person.marital_status == person.MaritalStatus.MARRIED
    default = forms["default_married"] if married else forms["default_single"]
    form = form or default
    if form not in forms["forms"]:
        raise BenefitError(f"{form!r} is not a form of benefit under {cites['forms']}")
    spouse_birth_date = spouse_birth_date or record.spouse_birth_date
    table, interest, basis, basis_notes = _basis(version, commencement, person)
    life = actuarial.Life.on(person.birth_date, commencement)
    spouse = actuarial.Life.on(spouse_birth_date, commencement) if spouse_birth_date else None
    pre_2005, post_sla = None, None
    if version.has("db_pre_2005") and record.pre_2005_annual_benefit > 0:
        pre_2005, post_sla = _pre_2005(
            version,
            record,
            sla,
            commencement if not defer_years else benefit_commencement_date(separation_date=separation_date),
            table,
            interest,
            life,
            spouse,
            default,
            steps,
        )
    options, lump = _forms(
        version,
        post_sla if post_sla is not None else sla,
        table,
        interest,
        life,
        spouse,
        default,
        form,
        every_form=every_form,
    )
    chosen = next(o for o in options if o.form == form)
    missed = (
        (first_payment_date.year - commencement.year) * 12 + first_payment_date.month - commencement.month
    )
    annual: Decimal | None
    monthly: Decimal | None
    first: Decimal | None
    if form == "lump_sum":
        annual = monthly = first = lump
    elif chosen.annual is None or chosen.monthly is None:
        annual = monthly = first = None
    else:
        annual, monthly = chosen.annual, chosen.monthly
        first = money(monthly * (missed + 1))
    if status.key:
        notes.append(
            f"Key Employee: payments start {_day(first_payment_date)}; the first includes {missed} missed "
            f"monthly payment{'s' if missed != 1 else ''} ({cites['key_delay']})"
        )
    if not status.known:
        provisional.append(
            f"no Key Employee list is recorded for {status.identification_year}: the start date may change "
            f"({cites['key']})"
        )
    notes += [p for p in provisional if p not in notes]
    if defer_years:
        notes.append(f"deferred {defer_years} years by election ({cites['change']})")
    return BenefitQuote(
        participation=participation,
        separation_date=separation_date,
        commencement_date=commencement,
        first_payment_date=first_payment_date,
        form=form,
        form_label=chosen.label,
        single_life_annual=sla,
        maximum_benefit=max_benefit,
        capped=capped,
        annual=annual,
        monthly=monthly,
        missed_payments=missed,
        first_payment=first,
        lump_sum_value=lump,
        basis=basis,
        steps=steps,
        notes=notes,
        forms=options,
        default_form=default,
        record=record,
        spouse_birth_date=spouse_birth_date,
        defer_years=defer_years,
        key_employee=status.key,
        key_employee_known=status.known,
        survivor_percent=chosen.survivor_percent,
        survivor_monthly=chosen.survivor_monthly,
        certain_months=chosen.certain_months,
        maximum_benefit_ceiling=ceiling,
        provisional=provisional,
        basis_notes=basis_notes,
        cites=cites,
        pre_2005=pre_2005,
        post_2004_single_life_annual=post_sla,
    )


def _pre_2005(
    version: PlanVersion,
    record: DefinedBenefitRecord,
    sla: Decimal,
    start: dt.date,
    table: actuarial.MortalityTable,
    interest: actuarial.InterestBasis,
    life: actuarial.Life,
    spouse: actuarial.Life | None,
    pension_form: str,
    steps: list[tuple[str, str, str]],
) -> tuple[Pre2005Part, Decimal]:
    """BRP Appendix A: the Pre-2005 Supplemental Benefit (at Normal Retirement, with the same 3.3 factor), carved
    out of the Supplemental Benefit and paid from the Pension Plan's start in the Pension Plan's form (App. A 3(b));
    the rest is the Post-2004 Supplemental Benefit of 4.2 (1.3(o))."""
    rule = version.provision("db_pre_2005")
    cite = version.cite("db_pre_2005")
    pre = min(sla, money(record.pre_2005_annual_benefit * record.early_adjustment_factor))
    post = sla - pre
    steps.append(("of which the Pre-2005 Supplemental Benefit (single life, annual)", str(pre), cite))
    post_cite = rule.get("post_2004_cite", cite)
    steps.append(("of which the Post-2004 Supplemental Benefit (single life, annual)", str(post), post_cite))
    if pension_form in JOINT_FORMS and spouse is None:
        pension_form = (
            "single_life"  # the Spouse's birth date is missing: the quote says so on the joint forms
        )
    q = actuarial.convert(
        single_life_annual=pre,
        form=pension_form,
        table=table,
        basis=interest,
        participant=life,
        spouse=spouse if pension_form in JOINT_FORMS else None,
    )
    lump = actuarial.convert(
        single_life_annual=pre, form="lump_sum", table=table, basis=interest, participant=life
    ).annual
    detail = actuarial.FORM_DETAILS[pension_form]
    survivor = detail.get("survivor", 0)
    return (
        Pre2005Part(
            single_life_annual=pre,
            start_date=start,
            form=pension_form,
            form_label=detail["label"],
            annual=q.annual,
            monthly=money(q.annual / 12),
            survivor_percent=survivor,
            survivor_monthly=money(q.annual * survivor / 100 / 12) if survivor else None,
            lump_sum_value=lump,
            cite=rule.get("timing_cite", cite),
            survivor_cite=rule.get("survivor_cite", cite),
            cash_out_cite=rule.get("cash_out_cite", cite),
            post_2004_cite=post_cite,
        ),
        post,
    )


@dataclass
class Pre2005CashOutValue:
    """BRP App. A 4(a): the Actuarial Equivalent, on the day it is paid, of the Pre-2005 payments still to come."""

    on: dt.date
    amount: Decimal
    basis: str
    steps: list[tuple[str, str, str]]
    cite: str


def pre_2005_cash_out_value(
    *,
    participation: Participation,
    on: dt.date,
    monthly: Decimal,
    survivor_monthly: Decimal | None,
    spouse_birth_date: dt.date | None,
    participant_alive: bool,
    survivor_alive: bool,
) -> Pre2005CashOutValue:
    """The lump sum that replaces the Pre-2005 monthly payments from `on` (the payment of `on` included): the
    participant's `monthly` for life and, after the participant's death, the survivor's `survivor_monthly` for
    the survivor's life (only the survivor's, when the participant has died), on the plan's actuarial basis on
    `on` (App. A 4(a), 4.2(c), 5.3). Factors are rounded to 9 decimals before they multiply money."""
    version = participation.plan.version_on(on)
    cite = version.provision("db_pre_2005").get("cash_out_cite", version.cite("db_pre_2005"))
    rule = version.provision("actuarial_basis")
    table, _ = actuarial.mortality_table(on.year)
    interest, _ = actuarial.segment_rates_for(
        on,
        rule.get("lookback_months", 1),
        rule.get("segment_boundaries_years", actuarial.DEFAULT_SEGMENT_BOUNDARIES),
    )
    basis_cite = version.cite("actuarial_basis")
    life = actuarial.Life.on(participation.person.birth_date, on)
    survivor = survivor_monthly if survivor_monthly and survivor_alive else None
    if survivor is not None and spouse_birth_date is None:
        raise BenefitError(
            f"the survivor's part cannot be valued without the survivor's date of birth ({cite})", "no_spouse"
        )
    spouse = actuarial.Life.on(spouse_birth_date, on) if spouse_birth_date else None
    steps: list[tuple[str, str, str]] = []
    amount = ZERO
    if participant_alive:
        a_x = _factor(12 * actuarial.annuity_life(table, life, interest))
        amount += monthly * a_x
        steps.append(
            (f"{monthly:,.2f} a month for life: x 12 ä(12) = {a_x}", str(money(monthly * a_x)), cite)
        )
        if survivor is not None and spouse is not None:
            reversion = _factor(
                12
                * (
                    actuarial.annuity_life(table, spouse, interest)
                    - actuarial.annuity_joint(table, life, spouse, interest)
                )
            )
            amount += survivor * reversion
            steps.append(
                (
                    f"{survivor:,.2f} a month to the survivor after the participant's death: "
                    f"x 12 (ä(12)y - ä(12)xy) = {reversion}",
                    str(money(survivor * reversion)),
                    cite,
                )
            )
    elif survivor is not None and spouse is not None:
        a_y = _factor(12 * actuarial.annuity_life(table, spouse, interest))
        amount += survivor * a_y
        steps.append(
            (
                f"{survivor:,.2f} a month for the survivor's life: x 12 ä(12)y = {a_y}",
                str(money(survivor * a_y)),
                cite,
            )
        )
    else:
        raise BenefitError(f"no Pre-2005 payment is still to come to value ({cite})")
    age = years_between(participation.person.birth_date, on)
    basis = f"{table.name}; {interest.label}; age {age} on {_day(on)} ({basis_cite})"
    return Pre2005CashOutValue(on=on, amount=money(amount), basis=basis, steps=steps, cite=cite)


FACTOR_PLACES = 9


def _factor(value: float) -> Decimal:
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-FACTOR_PLACES))


def brp_benefit_quote(
    *,
    participation: Participation,
    separation_date: dt.date,
    as_of: dt.date,
    form: str | None = None,
    spouse_birth_date: dt.date | None = None,
    defer_years: int = 0,
) -> BenefitQuote:
    """The benefit in one form (the elected one, else the default of 4.2(c)); refused when it cannot be computed."""
    quote = brp_benefit_sheet(
        participation=participation,
        separation_date=separation_date,
        as_of=as_of,
        form=form,
        spouse_birth_date=spouse_birth_date,
        defer_years=defer_years,
    )
    if quote.annual is None:
        raise BenefitError(
            f"the {quote.form_label} needs the spouse's (or survivor's) date of birth "
            f"({quote.cites['forms']})",
            "no_spouse",
        )
    return quote


def brp_survivor_quote(*, participation: Participation, death_date: dt.date, as_of: dt.date) -> SurvivorQuote:
    """BRP 5.1: the surviving Spouse of a Participant with 10+ years of Benefit Service who dies before the benefit
    begins receives the survivor part of a 50% Joint and Survivor Annuity computed immediately before death
    (reading: on the ages and basis of the 1st of the month after death), from the later of the 1st of the month
    after the earliest Early Retirement Date and the 1st of the second month after the month of death."""
    version = participation.plan.version_on(death_date)
    person = participation.person
    rule = version.provision("db_survivor")
    cite = version.cite("db_survivor")
    record = _record_or_error(participation, as_of, version)
    if record.benefit_service_years < rule["benefit_service_years"]:
        raise BenefitError(
            f"{person} had {record.benefit_service_years} years of Benefit Service at death, fewer than "
            f"{rule['benefit_service_years']}: no Pre-Retirement Survivor Benefit ({cite})"
        )
    if person.marital_status != Person.MaritalStatus.MARRIED:
        raise BenefitError(
            f"{person} left no surviving Spouse entitled to a Qualified Pre-Retirement Survivor Annuity: "
            f"no Pre-Retirement Survivor Benefit ({cite})"
        )
    if record.spouse_birth_date is None:
        raise BenefitError(
            f"the Pre-Retirement Survivor Benefit needs the Spouse's date of birth ({cite})", "no_spouse"
        )
    computed_on = day_of_month_after(death_date, 1, 1)
    sla, max_benefit, ceiling, capped, steps, notes = _supplemental(version, record, computed_on)
    table, interest, basis, basis_notes = _basis(version, computed_on, person)
    percent = int(Decimal(str(rule["survivor_percent"])))
    form = next(
        (
            f
            for f, d in actuarial.FORM_DETAILS.items()
            if f.startswith("js_") and d.get("survivor") == percent
        ),
        "js_50",
    )
    joint = actuarial.convert(
        single_life_annual=sla,
        form=form,
        table=table,
        basis=interest,
        participant=actuarial.Life.on(person.birth_date, computed_on),
        spouse=actuarial.Life.on(record.spouse_birth_date, computed_on),
    )
    annual = money(joint.annual * percent / 100)
    earliest_retirement = record.early_retirement_date or record.normal_retirement_date
    start = max(day_of_month_after(earliest_retirement, 1, 1), day_of_month_after(death_date, 1, 2))
    steps.append(
        (
            f"{actuarial.FORM_DETAILS[form]['label']} computed just before death",
            str(joint.annual),
            cite + "(b)",
        )
    )
    steps.append((f"survivor part ({percent}%), annual", str(annual), cite + "(b)"))
    notes.append(
        f"starts the later of the 1st of the month after the earliest Early Retirement Date "
        f"({_day(day_of_month_after(earliest_retirement, 1, 1))}) and the 1st of the second month after the "
        f"month of death ({_day(day_of_month_after(death_date, 1, 2))}) ({cite}(b))"
    )
    return SurvivorQuote(
        participation=participation,
        death_date=death_date,
        start_date=start,
        single_life_annual=sla,
        joint_annual=joint.annual,
        annual=annual,
        monthly=money(annual / 12),
        spouse_birth_date=record.spouse_birth_date,
        basis=basis,
        steps=steps,
        notes=notes,
        cite=cite,
        record=record,
        basis_notes=basis_notes,
    )


# --- recording the Pension Plan figures -------------------------------------------------------------

FIGURE_FIELDS = (
    "unlimited_annual_benefit",
    "imputed_annual_benefit",
    "payable_annual_benefit",
    "benefit_service_years",
    "early_retirement_date",
    "normal_retirement_date",
    "early_adjustment_factor",
    "pre_2005_annual_benefit",
    "spouse_name",
    "spouse_birth_date",
)


def pension_figures_refusal(*, participation: Participation, values: dict) -> str:
    """Why these figures cannot be recorded (with the section), or ''."""
    version = participation.plan.version_on(values["as_of"])
    if not version.has("db_benefit"):
        return f"{participation.plan.code} is not a defined benefit plan: it has no Pension Plan figures ({version.cite('accounts')})"
    for name in (
        "unlimited_annual_benefit",
        "payable_annual_benefit",
        "imputed_annual_benefit",
        "pre_2005_annual_benefit",
    ):
        value = values.get(name)
        if value is not None and value < 0:
            return f"{name.replace('_', ' ')} cannot be negative ({version.cite('db_benefit')})"
    years = values.get("benefit_service_years")
    if years is not None and not (0 <= years <= 80):
        return f"benefit service years {years} is outside 0 to 80 ({version.cite('db_eligibility')})"
    factor = values.get("early_adjustment_factor")
    if factor is not None and not (0 < factor <= 5):
        return f"the early/late adjustment factor {factor} must be more than 0 and at most 5 ({version.cite('db_benefit')})"
    person = participation.person
    erd, nrd = values.get("early_retirement_date"), values.get("normal_retirement_date")
    if nrd and nrd <= person.birth_date:
        return "the Normal Retirement Date is not after the birth date"
    if erd and nrd and erd > nrd:
        return "the Early Retirement Date is after the Normal Retirement Date"
    spouse = values.get("spouse_birth_date")
    if spouse and spouse > values["as_of"]:
        return "the Spouse's date of birth is after the date of the figures"
    return ""


@transaction.atomic
def pension_figures_record(
    *,
    participation: Participation,
    as_of: dt.date,
    actor: Actor,
    now: dt.datetime | None = None,
    source: str = "",
    **values: Decimal | dt.date | str | None,
) -> DefinedBenefitRecord:
    """Record the Pension Plan figures of `as_of` (a correction of the same date replaces them; history keeps the
    old ones) and let the payment schedule follow (a benefit already in pay stays fixed, BRP 3.4(c))."""

    now = now or timezone.now()
    unknown = set(values) - set(FIGURE_FIELDS)
    if unknown:
        raise TypeError(f"unknown figure(s): {', '.join(sorted(unknown))}")
    refusal = pension_figures_refusal(participation=participation, values={**values, "as_of": as_of})
    if refusal:
        raise BooksError(refusal)
    defaults = {
        k: v
        for k, v in values.items()
        if v is not None or k in ("early_retirement_date", "spouse_birth_date")
    }
    defaults.setdefault("imputed_annual_benefit", ZERO)
    defaults.setdefault("early_adjustment_factor", Decimal(1))
    defaults.setdefault("pre_2005_annual_benefit", ZERO)
    defaults["source"] = (source or f"recorded by {actor_label(actor)}")[:200]
    record, created = DefinedBenefitRecord.objects.update_or_create(
        participation=participation, as_of=as_of, defaults=defaults
    )
    audit_record(
        action="pension_figures.record" if created else "pension_figures.correct",
        actor=actor,
        at=now,
        obj=record,
        data={k: str(v) for k, v in defaults.items()},
    )
    hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=now)
    return record


@transaction.atomic
def spouse_death_before_commencement_record(
    *, participation: Participation, died_on: dt.date, actor: Actor, now: dt.datetime
) -> Person:
    """The Spouse dies before the benefit begins: the participant is widowed, so the default form is the Single Life
    Annuity (4.2(c)) and no Pre-Retirement Survivor Benefit is owed (5.1); the schedule follows."""
    person = participation.person
    if person.marital_status != Person.MaritalStatus.MARRIED:
        raise BenefitError(
            f"{person} has no Spouse on record ({participation.plan.version_on(died_on).cite('db_forms')})"
        )
    person.marital_status = Person.MaritalStatus.WIDOWED
    person.save(update_fields=["marital_status"])
    audit_record(
        action="person.spouse_death", actor=actor, at=now, obj=person, data={"died_on": died_on.isoformat()}
    )
    hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=now)
    return person


# --- the statement a committee signs -----------------------------------------------------------------

QUOTE_KIND = "brp_benefit_statement"


def brp_quote_document(*, quote: BenefitQuote, as_of: dt.date, actor: Actor, now: dt.datetime) -> Document:
    """The PDF of a quote: its steps and sections, every form side by side, the basis, the dates, the provisions
    quoted and lines for the Committee's signatures (stored by content hash: the same quote gives the same file)."""
    # pensions.pdf renders the quotes this module makes (it imports BenefitQuote from here): a circle inside one app
    from pensions.pdf import TEMPLATE, quote_context

    context = quote_context(quote, as_of=as_of)
    return document_store(
        kind=QUOTE_KIND,
        title=context["title"],
        template=TEMPLATE,
        context=context,
        actor=actor_label(actor),
        person=quote.participation.person,
        obj=quote.participation,
        now=now,
    )
