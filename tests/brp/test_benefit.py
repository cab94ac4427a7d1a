"""BRP Supplemental Benefit (3.1-3.4, 4.2, 4.3)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import DefinedBenefitRecord
from books.services.brp import BenefitError, brp_benefit_quote, maximum_benefit
from participants.services import key_employee_list_record
from plans.models import Plan
from tests.factories import ParticipationFactory, PersonFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def brp_participation():
    plan = Plan.objects.get(code="BRP")
    person = PersonFactory(birth_date=dt.date(1961, 3, 10), hire_date=dt.date(1990, 6, 1), marital_status="single")
    participation = ParticipationFactory(person=person, plan=plan, entered_on=dt.date(2002, 10, 1))
    DefinedBenefitRecord.objects.create(participation=participation, as_of=dt.date(2025, 12, 31),
                                        unlimited_annual_benefit=Decimal("180000.00"),
                                        payable_annual_benefit=Decimal("110000.00"),
                                        benefit_service_years=Decimal("18.50"), early_retirement_date=dt.date(2016, 3, 10),
                                        normal_retirement_date=dt.date(2026, 3, 10))
    return participation


def test_maximum_benefit_is_the_2008_figure_indexed_by_the_415b_limit():
    version = Plan.objects.get(code="BRP").version_on(dt.date(2026, 1, 1))
    assert maximum_benefit(version, 2008) == Decimal("462500.00")
    # 462,500 x 290,000 / 185,000 = 725,000.00
    assert maximum_benefit(version, 2026) == Decimal("725000.00")


def test_supplemental_benefit_is_the_unlimited_benefit_less_the_pension_plan_benefit(brp_participation):
    quote = brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 4, 20),
                              as_of=dt.date(2026, 4, 20))
    assert quote.single_life_annual == Decimal("70000.00")
    assert quote.commencement_date == dt.date(2026, 5, 1)  # BRP 4.2(a): 1st of the month after separation
    assert quote.form == "single_life" and quote.annual == Decimal("70000.00")
    assert quote.monthly == Decimal("5833.33")
    assert not quote.capped


def test_the_maximum_benefit_caps_the_supplemental_benefit(brp_participation):
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        unlimited_annual_benefit=Decimal("900000.00"))
    quote = brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 4, 20),
                              as_of=dt.date(2026, 4, 20))
    assert quote.capped and quote.single_life_annual == Decimal("615000.00")  # 725,000 - 110,000


def test_a_key_employee_starts_after_six_months_and_the_first_payment_catches_up(brp_participation):
    key_employee_list_record(identification_year=2024, people=[brp_participation.person], actor="test")
    quote = brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 1, 20),
                              as_of=dt.date(2026, 1, 20))
    assert quote.commencement_date == dt.date(2026, 2, 1)
    assert quote.first_payment_date == dt.date(2026, 8, 1)  # month after the 2026-07-20 anniversary
    assert quote.missed_payments == 6
    assert quote.first_payment == quote.monthly * 7


def test_no_benefit_without_15_years_or_a_retirement_date_reached(brp_participation):
    DefinedBenefitRecord.objects.filter(participation=brp_participation).update(
        benefit_service_years=Decimal("12"), early_retirement_date=None, normal_retirement_date=dt.date(2030, 1, 1))
    with pytest.raises(BenefitError, match="BRP 3.1"):
        brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20))


def test_a_married_participant_defaults_to_the_qjsa_and_needs_the_spouse_birth_date(brp_participation):
    person = brp_participation.person
    person.marital_status = "married"
    person.save()
    with pytest.raises(BenefitError, match="spouse"):
        brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 4, 20))
    quote = brp_benefit_quote(participation=brp_participation, separation_date=dt.date(2026, 4, 20),
                              as_of=dt.date(2026, 4, 20), spouse_birth_date=dt.date(1963, 1, 1))
    assert quote.form == "qjsa" and quote.annual < quote.single_life_annual
