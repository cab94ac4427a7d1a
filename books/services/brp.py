"""The BRP Supplemental Benefit (Articles III-IV): a frozen defined-benefit restoration.

benefit (single life, annual) = (Pension Plan benefit without the Tax Limits + imputed service benefit)
                                 - the Pension Plan benefit payable                             (3.2)
  x the Pension Plan's early or late commencement adjustment                                    (3.3)
  capped at (Maximum Benefit - the annual Pension Plan benefit), the Maximum Benefit being
  $462,500 for 2008 raised each January 1 by the 415(b)(1)(A) percentage, fixed at commencement (3.4)
then converted to the elected form on the plan's actuarial basis                                 (4.1, 4.2(c)).
Commencement: the 1st day of the month after the month of separation (4.2(a)); a Key Employee
starts the 1st day of the month after the six-month anniversary, the first payment including the
ones missed (4.3).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from books.models import DefinedBenefitRecord
from core.dates import day_of_month_after, first_day_of_month_after_anniversary, years_between
from core.money import ZERO, money
from participants.models import Participation
from participants.selectors import key_employee_status
from plans import actuarial
from plans.selectors import figure_for_year


class BenefitError(ValueError):
    pass


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
    annual: Decimal
    monthly: Decimal
    missed_payments: int
    first_payment: Decimal
    lump_sum_value: Decimal
    basis: str
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (what, amount, citation)
    notes: list[str] = field(default_factory=list)


def maximum_benefit(version, year: int) -> Decimal:
    """BRP 3.4: the 2008 figure raised each January 1 by the 415(b)(1)(A) percentage (the ratio of the limits)."""
    rule = version.provision("db_maximum_benefit")
    base_year, base = rule["base_year"], Decimal(rule["base_amount"])
    index = rule["indexed_by"]
    return money(base * figure_for_year(index, year) / figure_for_year(index, base_year))


def brp_benefit_quote(*, participation: Participation, separation_date: dt.date, as_of: dt.date,
                      form: str | None = None, spouse_birth_date: dt.date | None = None) -> BenefitQuote:
    plan = participation.plan
    version = plan.version_on(separation_date)
    record = (DefinedBenefitRecord.objects.filter(participation=participation, as_of__lte=as_of)
              .order_by("-as_of").first())
    if record is None:
        raise BenefitError(f"no Pension Plan figures are recorded for {participation.person} ({version.cite('db_benefit')})")
    person = participation.person
    eligibility = version.provision("db_eligibility")
    reached = [d for d in (record.early_retirement_date, record.normal_retirement_date) if d and d <= separation_date]
    if record.benefit_service_years < eligibility["benefit_service_years"] and not reached:
        raise BenefitError(
            f"{person} has {record.benefit_service_years} years of Benefit Service and had reached neither the Early "
            f"nor the Normal Retirement Date at termination: no Supplemental Benefit ({version.cite('db_eligibility')})")
    commencement = day_of_month_after(separation_date, 1, 1)  # 4.2(a)
    steps = []
    first_payment_date = commencement
    ke = version.provision("key_employee")
    status = key_employee_status(person, separation_date, effective_month=ke["effective_month"],
                                 effective_day=ke["effective_day"])
    delay_rule = next((r for r in version.provision("distribution", []) if r.get("key_employee_delay")), None)
    if status.key and delay_rule:
        first_payment_date = max(commencement, first_day_of_month_after_anniversary(
            separation_date, delay_rule["key_employee_delay"]["months"]))
    gross = record.unlimited_annual_benefit + record.imputed_annual_benefit - record.payable_annual_benefit
    steps.append(("Pension Plan benefit without the Tax Limits", str(record.unlimited_annual_benefit), version.cite("db_benefit")))
    if record.imputed_annual_benefit:
        steps.append(("plus imputed service benefit", str(record.imputed_annual_benefit), version.cite("db_benefit")))
    steps.append(("less Pension Plan benefit payable", str(record.payable_annual_benefit), version.cite("db_benefit")))
    adjusted = money(max(ZERO, gross) * record.early_adjustment_factor)
    if record.early_adjustment_factor != 1:
        steps.append((f"early/late commencement adjustment x {record.early_adjustment_factor}", str(adjusted),
                      version.provision("db_benefit").get("cite_early", version.cite("db_benefit"))))
    max_benefit = maximum_benefit(version, commencement.year)
    ceiling = max(ZERO, max_benefit - record.payable_annual_benefit)
    sla = min(adjusted, ceiling)
    steps.append((f"capped at the Maximum Benefit {max_benefit} less the Pension Plan benefit", str(sla),
                  version.cite("db_maximum_benefit")))
    forms = version.provision("db_forms")
    married = person.marital_status == person.MaritalStatus.MARRIED
    form = form or (forms["default_married"] if married else forms["default_single"])
    if form not in forms["forms"]:
        raise BenefitError(f"{form!r} is not a form of benefit under {version.cite('db_forms')}")
    basis_rule = version.provision("actuarial_basis")
    table, table_note = actuarial.mortality_table(commencement.year)
    interest, rate_note = actuarial.segment_rates_for(commencement, basis_rule.get("lookback_months", 1))
    life = actuarial.Life.on(person.birth_date, commencement)
    spouse = actuarial.Life.on(spouse_birth_date, commencement) if spouse_birth_date else None
    if form in ("qjsa", "js_100", "js_75", "js_50") and spouse is None:
        raise BenefitError(f"the {actuarial.FORM_DETAILS[form]['label']} needs the spouse's date of birth ({version.cite('db_forms')})")
    quote = actuarial.convert(single_life_annual=sla, form=form, table=table, basis=interest, participant=life, spouse=spouse)
    lump = actuarial.convert(single_life_annual=sla, form="lump_sum", table=table, basis=interest, participant=life)
    missed = (first_payment_date.year - commencement.year) * 12 + first_payment_date.month - commencement.month
    monthly = quote.monthly if form != "lump_sum" else quote.annual
    first_payment = monthly * (missed + 1) if form != "lump_sum" else quote.annual
    notes = [n for n in (table_note, rate_note) if n]
    if status.key:
        notes.append(f"Key Employee: payments start {first_payment_date:%B %d, %Y}; the first includes {missed} missed "
                     f"monthly payment{'s' if missed != 1 else ''} ({delay_rule['key_employee_delay']['cite']})")
    if not status.known:
        notes.append(f"no Key Employee list is recorded for {status.identification_year}: the start date may change")
    age = years_between(person.birth_date, commencement)
    return BenefitQuote(
        participation=participation, separation_date=separation_date, commencement_date=commencement,
        first_payment_date=first_payment_date, form=form, form_label=actuarial.FORM_DETAILS[form]["label"],
        single_life_annual=sla, maximum_benefit=max_benefit, capped=adjusted > ceiling, annual=quote.annual,
        monthly=monthly, missed_payments=missed, first_payment=money(first_payment), lump_sum_value=lump.annual,
        basis=f"{table.name}; {interest.label}; age {age}", steps=steps, notes=notes,
    )
