"""BRP Supplemental Benefit (3.1-3.4, 4.2, 4.3)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import DefinedBenefitRecord
from core import memo
from participants.services import key_employee_list_record
from pensions.services.benefit import (
    BenefitError,
    brp_benefit_quote,
    maximum_benefit,
    pension_figures,
    pension_records_seed,
)
from plans.models import Plan
from tests.factories import ParticipationFactory, PersonFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def brp_participation():
    plan = Plan.objects.get(code="BRP")
    person = PersonFactory(
        birth_date=dt.date(1961, 3, 10), hire_date=dt.date(1990, 6, 1), marital_status="single"
    )
    participation = ParticipationFactory(person=person, plan=plan, entered_on=dt.date(2002, 10, 1))
    DefinedBenefitRecord.objects.create(
        participation=participation,
        as_of=dt.date(2025, 12, 31),
        unlimited_annual_benefit=Decimal("180000.00"),
        payable_annual_benefit=Decimal("110000.00"),
        benefit_service_years=Decimal("18.50"),
        early_retirement_date=dt.date(2016, 3, 10),
        normal_retirement_date=dt.date(2026, 3, 10),
    )
    return participation


def test_maximum_benefit_is_the_2008_figure_indexed_by_the_415b_limit():
    version = Plan.objects.get(code="BRP").version_on(dt.date(2026, 1, 1))
    assert maximum_benefit(version=version, year=2008) == Decimal("462500.00")
    # 462,500 x 290,000 / 185,000 = 725,000.00
    assert maximum_benefit(version=version, year=2026) == Decimal("725000.00")


def test_supplemental_benefit_is_the_unlimited_benefit_less_the_pension_plan_benefit(brp_participation):
    quote = brp_benefit_quote(
        participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20)
    )
    assert quote.single_life_annual == Decimal("70000.00")
    assert quote.commencement_date == dt.date(2026, 5, 1)  # BRP 4.2(a): 1st of the month after separation
    assert quote.form == "single_life" and quote.annual == Decimal("70000.00")
    assert quote.monthly == Decimal("5833.33")
    assert not quote.capped


def test_the_maximum_benefit_caps_the_supplemental_benefit(brp_participation):
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        unlimited_annual_benefit=Decimal("900000.00")
    )
    quote = brp_benefit_quote(
        participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20)
    )
    assert quote.capped and quote.single_life_annual == Decimal("615000.00")  # 725,000 - 110,000


def test_brp_3_4_a_the_ceiling_before_normal_retirement_subtracts_the_early_reduced_pension_plan_benefit(
    brp_participation,
):
    # Normal Retirement March 10, 2026; separation January 20 -> commencement February 1, 2026 (early).
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        unlimited_annual_benefit=Decimal("1000000.00"), early_adjustment_factor=Decimal("0.8")
    )
    quote = brp_benefit_quote(
        participation=brp_participation, separation_date=dt.date(2026, 1, 20), as_of=dt.date(2026, 1, 20)
    )
    # 3.2, 3.3: (1,000,000 - 110,000) x 0.8 = 712,000
    # 3.4(a): 725,000 (never adjusted, 3.4(b)) - 110,000 x 0.8 = 725,000 - 88,000 = 637,000 (not 615,000)
    assert quote.maximum_benefit == Decimal("725000.00")
    assert quote.maximum_benefit_ceiling == Decimal("637000.00")
    assert quote.capped and quote.single_life_annual == Decimal("637000.00")
    assert any(s[1] == "88000.00" and "BRP 3.4(a)" in s[2] for s in quote.steps)


def test_brp_3_4_a_at_normal_retirement_the_ceiling_subtracts_the_unreduced_pension_plan_benefit(
    brp_participation,
):
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        unlimited_annual_benefit=Decimal("1000000.00")
    )
    quote = brp_benefit_quote(
        participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20)
    )
    assert quote.maximum_benefit_ceiling == Decimal("615000.00")  # 725,000 - 110,000


def test_a_key_employee_starts_after_six_months_and_the_first_payment_catches_up(brp_participation):
    key_employee_list_record(identification_year=2024, people=[brp_participation.person], actor="test")
    quote = brp_benefit_quote(
        participation=brp_participation, separation_date=dt.date(2026, 1, 20), as_of=dt.date(2026, 1, 20)
    )
    assert quote.commencement_date == dt.date(2026, 2, 1)
    assert quote.first_payment_date == dt.date(2026, 8, 1)  # month after the 2026-07-20 anniversary
    assert quote.missed_payments == 6
    assert quote.first_payment == quote.monthly * 7


def test_no_benefit_without_15_years_or_a_retirement_date_reached(brp_participation):
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        benefit_service_years=Decimal("12"),
        early_retirement_date=None,
        normal_retirement_date=dt.date(2030, 1, 1),
    )
    with pytest.raises(BenefitError, match="BRP 3.1"):
        brp_benefit_quote(
            participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20)
        )


def test_a_married_participant_defaults_to_the_qjsa_and_needs_the_spouse_birth_date(brp_participation):
    person = brp_participation.person
    person.marital_status = "married"
    person.save()
    with pytest.raises(BenefitError, match="spouse"):
        brp_benefit_quote(
            participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20)
        )
    quote = brp_benefit_quote(
        participation=brp_participation,
        separation_date=dt.date(2026, 4, 20),
        as_of=dt.date(2026, 4, 20),
        spouse_birth_date=dt.date(1963, 1, 1),
    )
    assert quote.form == "qjsa" and quote.annual < quote.single_life_annual


# --- every rule on the toy basis (tests/pensions/factories.py): hand-checked figures ---------------------------


def sheet(participation, **kw):
    from pensions.services.benefit import brp_benefit_sheet

    return brp_benefit_sheet(
        participation=participation,
        separation_date=kw.pop("separation", dt.date(2026, 4, 20)),
        as_of=dt.date(2026, 4, 20),
        **kw,
    )


def test_every_form_is_quoted_side_by_side_and_actuarially_equivalent(toy_basis):
    from tests.pensions.factories import brp_participation

    quote = sheet(brp_participation(marital="married", spouse_birth=dt.date(1966, 5, 1)))
    forms = {o.form: o for o in quote.forms}
    assert quote.default_form == "qjsa" and forms["qjsa"].is_default and forms["qjsa"].is_elected
    assert (forms["single_life"].annual, forms["single_life"].monthly) == (
        Decimal("70000.00"),
        Decimal("5833.33"),
    )
    # factors: ä65 = 18.5/12; 60 certain payments at 0% = 5; J&S f: 18.5/12 + f x (78.5 - 18.5)/12
    assert forms["period_certain_60"].annual == Decimal("21583.33")  # 70,000 x (18.5/12) / 5
    assert forms["js_50"].annual == forms["qjsa"].annual == Decimal("26701.03")  # 70,000 x 18.5 / 48.5
    assert forms["js_75"].annual == Decimal("20393.70")  # 70,000 x 18.5 / (18.5 + 0.75 x 60)
    assert forms["js_100"].annual == Decimal("16496.82")  # 70,000 x 18.5 / (18.5 + 60)
    assert forms["js_100"].survivor_monthly == forms["js_100"].monthly == Decimal("1374.74")
    assert forms["lump_sum"].annual == quote.lump_sum_value == Decimal("107916.67")  # 70,000 x 18.5/12
    assert quote.basis == "toy table; 0.0% flat; age 65"


def test_a_joint_form_needs_the_survivors_birth_date(toy_basis):
    from tests.pensions.factories import brp_participation

    quote = sheet(brp_participation())
    forms = {o.form: o for o in quote.forms}
    assert forms["js_75"].annual is None and "date of birth" in forms["js_75"].unavailable
    assert quote.form == "single_life" and quote.annual == Decimal("70000.00")


def test_the_early_reduction_of_the_pension_plan_applies_before_the_cap(toy_basis):
    from tests.pensions.factories import brp_participation

    quote = sheet(brp_participation(factor="0.8"))
    assert quote.single_life_annual == Decimal("56000.00")  # 70,000 x 0.8 (BRP 3.3)
    assert ("early/late commencement adjustment x 0.800000", "56000.00", "BRP 3.3") in quote.steps


def test_imputed_benefit_service_adds_to_the_unlimited_benefit(toy_basis):
    participation = ParticipationFactory(
        person=PersonFactory(birth_date=dt.date(1961, 5, 1)), plan=Plan.objects.get(code="BRP")
    )
    DefinedBenefitRecord.objects.create(
        participation=participation,
        as_of=dt.date(2025, 12, 31),
        unlimited_annual_benefit=Decimal("180000.00"),
        imputed_annual_benefit=Decimal("5000.00"),
        payable_annual_benefit=Decimal("110000.00"),
        benefit_service_years=Decimal("20"),
        early_retirement_date=dt.date(2016, 5, 1),
        normal_retirement_date=dt.date(2026, 5, 1),
    )
    quote = sheet(participation)
    assert quote.single_life_annual == Decimal("75000.00")  # 180,000 + 5,000 - 110,000 (BRP 3.2(a)(ii), 3.5)
    assert any(cite == "BRP 3.2(a)(ii), 3.5" for _, _, cite in quote.steps)


def test_fifteen_years_of_service_do_not_pay_a_distribution_before_early_retirement(toy_basis):
    from tests.pensions.factories import brp_participation

    with pytest.raises(BenefitError, match=r"BRP 3.1\(ii\)"):
        sheet(brp_participation(service="25", erd=dt.date(2027, 5, 1), nrd=dt.date(2031, 5, 1)))


def test_a_year_without_a_415b_limit_uses_the_latest_recorded_and_says_so(toy_basis):
    from tests.pensions.factories import brp_participation

    quote = sheet(brp_participation(), separation=dt.date(2026, 12, 10))
    assert quote.commencement_date == dt.date(2027, 1, 1) and quote.maximum_benefit == Decimal("725000.00")
    assert any(
        "the 415(b)(1)(A) limit for 2027 is not recorded: the Maximum Benefit of 2026 is used" in p
        for p in quote.provisional
    )


def test_an_elected_deferral_moves_the_benefit_commencement_date(toy_basis):
    from tests.pensions.factories import brp_participation

    quote = sheet(brp_participation(), defer_years=5, separation=dt.date(2020, 4, 20))
    assert quote.commencement_date == dt.date(2025, 5, 1) and quote.first_payment_date == dt.date(2025, 5, 1)
    assert any("deferred 5 years by election (BRP 4.2(d))" == n for n in quote.notes)


def test_the_pre_retirement_survivor_benefit_quote_shows_its_steps(toy_basis):
    from pensions.services.benefit import brp_survivor_quote
    from tests.pensions.factories import brp_participation

    participation = brp_participation(marital="married", spouse_birth=dt.date(1966, 5, 1))
    quote = brp_survivor_quote(
        participation=participation, death_date=dt.date(2026, 4, 10), as_of=dt.date(2026, 4, 30)
    )
    assert quote.start_date == dt.date(2026, 6, 1) and quote.monthly == Decimal("1112.54")
    assert ("survivor part (50%), annual", "13350.52", "BRP 5.1(b)") in quote.steps


def test_the_shipped_basis_quotes_every_form_in_a_fraction_of_a_second():
    """The IRS 2026 table and the April 2026 segment rates: the lump sum is the single life annuity times its factor."""
    import time

    from tests.pensions.factories import brp_participation

    participation = brp_participation(marital="married", spouse_birth=dt.date(1963, 2, 14))
    started = time.perf_counter()
    quote = sheet(participation)
    assert time.perf_counter() - started < 2
    forms = {o.form: o for o in quote.forms}
    assert "IRS 417(e) unisex 2026" in quote.basis and "segment rates of April 2026" in quote.basis
    assert forms["lump_sum"].annual == (
        Decimal("70000.00") * Decimal(str(forms["single_life"].factor))
    ).quantize(Decimal("0.01"))
    assert forms["js_100"].annual < forms["js_75"].annual < forms["qjsa"].annual < forms["single_life"].annual
    assert forms["single_life"].annual < forms["period_certain_180"].annual / Decimal("0.9")


def test_brp_appendix_a_the_quote_shows_the_pre_2005_and_post_2004_parts_apart(toy_basis):
    from tests.pensions.factories import brp_participation

    participation = brp_participation(marital="married", spouse_birth=dt.date(1966, 5, 1))
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    quote = sheet(participation)
    # 70,000 in all: 20,000 Pre-2005 (App. A) and 50,000 Post-2004 (1.3(o)); the forms quoted are of the Post-2004
    assert quote.single_life_annual == Decimal("70000.00")
    assert quote.pre_2005.single_life_annual == Decimal("20000.00")
    assert quote.post_2004_single_life_annual == Decimal("50000.00")
    forms = {o.form: o for o in quote.forms}
    assert forms["single_life"].annual == Decimal("50000.00")
    # the Pension Plan's form (married: its 50% joint and survivor annuity): 20,000 x 18.5/48.5 = 7,628.87
    assert (quote.pre_2005.form, quote.pre_2005.annual, quote.pre_2005.monthly) == (
        "qjsa",
        Decimal("7628.87"),
        Decimal("635.74"),
    )
    assert quote.pre_2005.start_date == quote.commencement_date and quote.pre_2005.cite == "BRP App. A 3(b)"
    # App. A 4: the Company may cash it out: 20,000 x 18.5/12 = 30,833.33
    assert quote.pre_2005.lump_sum_value == Decimal("30833.33")


def test_seeded_records_give_the_figures_in_force_on_each_day_without_a_statement(
    brp_participation, django_assert_num_queries
):
    """A batch quoting each benefit as of its own commencement reads every record once (pension_records_seed):
    the figures in force on a day are still the latest recorded on or before it, none before the first."""
    later = DefinedBenefitRecord.objects.create(
        participation=brp_participation,
        as_of=dt.date(2026, 12, 31),
        unlimited_annual_benefit=Decimal("190000.00"),
        payable_annual_benefit=Decimal("115000.00"),
        benefit_service_years=Decimal("19.50"),
        early_retirement_date=dt.date(2016, 3, 10),
        normal_retirement_date=dt.date(2026, 3, 10),
    )
    with memo.run_memo():
        pension_records_seed(participations=[brp_participation])
        with django_assert_num_queries(0):
            in_2026 = pension_figures(participation=brp_participation, as_of=dt.date(2026, 6, 30))
            in_2027 = pension_figures(participation=brp_participation, as_of=dt.date(2027, 1, 1))
            before = pension_figures(participation=brp_participation, as_of=dt.date(2025, 12, 30))
    assert in_2026 is not None and in_2026.as_of == dt.date(2025, 12, 31)
    assert in_2027 == later
    assert before is None
