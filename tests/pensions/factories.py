"""BRP participants with Pension Plan figures, and a tiny mortality basis whose factors can be checked by hand.

The toy table: nobody dies before 66 and everybody dies during age 66 (q66 = 1), at 0% interest.
A life aged exactly 65 then receives 12 certain monthly payments and, during age 66, survives month k
with probability 1 - k/12 (UDD), so ä(12)65 = (12 + 6.5) / 12 = 18.5 / 12. A Spouse aged 60 receives 72
certain payments and then the same 6.5: ä(12)60 = 78.5 / 12; the joint life ä(12)65:60 = 18.5 / 12.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from books.models import DefinedBenefitRecord
from core.audit import actor_label
from participants.models import KeyEmployeeList, Participation
from plans import actuarial
from plans.models import Plan
from tests.conftest import eastern
from tests.factories import ParticipationFactory, PersonFactory

TOY = actuarial.MortalityTable("toy table", tuple([0.0] * 66 + [1.0]))
A_65 = Decimal(18.5) / 12  # ä(12) of a life aged 65 on the toy table
A_60 = Decimal(78.5) / 12


def brp_participation(
    *,
    birth=dt.date(1961, 5, 1),
    marital="single",
    spouse_birth=None,
    spouse_name="",
    unlimited="180000.00",
    payable="110000.00",
    service="18.50",
    erd=dt.date(2016, 5, 1),
    nrd=dt.date(2026, 5, 1),
    factor="1",
    as_of=dt.date(2025, 12, 31),
    **person,
) -> Participation:
    """A BRP participant aged exactly 65 on May 1, 2026, with a Supplemental Benefit of 70,000 a year."""
    who = PersonFactory(birth_date=birth, hire_date=dt.date(1990, 6, 1), marital_status=marital, **person)
    participation = ParticipationFactory(
        person=who, plan=Plan.objects.get(code="BRP"), entered_on=dt.date(2002, 10, 1)
    )
    DefinedBenefitRecord.objects.create(
        participation=participation,
        as_of=as_of,
        unlimited_annual_benefit=Decimal(unlimited),
        payable_annual_benefit=Decimal(payable),
        benefit_service_years=Decimal(service),
        early_retirement_date=erd,
        normal_retirement_date=nrd,
        early_adjustment_factor=Decimal(factor),
        spouse_name=spouse_name,
        spouse_birth_date=spouse_birth,
    )
    return participation


def key_employees(year: int, *people) -> KeyEmployeeList:
    lst, _ = KeyEmployeeList.objects.get_or_create(
        identification_year=year, defaults={"recorded_at": timezone.now(), "recorded_by": actor_label("test")}
    )
    lst.members.set(people)
    return lst


def separate(
    participation: Participation, day: dt.date, *, kind: str = "separation", at: dt.datetime | None = None
):
    from participants.services import employment_event_record

    return employment_event_record(
        person=participation.person,
        kind=kind,
        effective_date=day,
        reason="retirement" if kind == "separation" else "",
        actor="test",
        now=at or eastern(day.year, day.month, day.day, 17),
    )
