"""factory_boy factories for the tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import factory
from django.utils import timezone

from core.notices import CONSENT_VERSION, delivery_choose
from participants.models import Participation, Person
from plans.models import Fund, FundPrice, Plan


class PersonFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Person

    employee_number = factory.Sequence(lambda n: f"E{n:05d}")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    birth_date = dt.date(1970, 5, 17)
    hire_date = dt.date(2010, 3, 1)
    address_line1 = "100 Main Street"
    city = "Richmond"
    state = "VA"
    postal_code = "23219"


class ParticipationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Participation

    person = factory.SubFactory(PersonFactory)
    plan = factory.LazyFunction(lambda: Plan.objects.get(code="EDCP"))
    entered_on = dt.date(2011, 1, 1)


class FundFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Fund

    plan = factory.LazyFunction(lambda: Plan.objects.get(code="EDCP"))
    code = factory.Sequence(lambda n: f"F{n}")
    name = factory.LazyAttribute(lambda o: f"Fund {o.code}")
    is_default = False


def price(fund: Fund, day: dt.date, value: str) -> FundPrice:
    return FundPrice.objects.create(
        fund=fund, date=day, price=Decimal(value), loaded_at=timezone.now(), source="test"
    )


def consent_to_email(person: Person, *, at: dt.datetime | None = None) -> None:
    """The person consents to electronic delivery of notices (core.notices; paper is the default)."""
    delivery_choose(
        person=person,
        delivery="electronic",
        consented=True,
        consent_version=CONSENT_VERSION,
        actor="test",
        as_of=at or dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
    )
