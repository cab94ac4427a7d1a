"""Taking over BRP benefits in pay (a conversion, issue 14): every benefit of a package in one call whose number of
statements does not grow with the number of benefits, each planned as the per-benefit service plans it.

Figures on the toy basis of tests/pensions/factories.py: a Single Life Annuity of 5,833.33 a month.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from participants.models import EmploymentEvent
from payments.models import Annuity, PaymentSchedule, ScheduledPayment
from payments.services.annuities import (
    AnnuityTakenOver,
    AnnuityTakeOverError,
    annuities_take_over,
    annuity_take_over,
)
from tests.pensions.factories import brp_participation

pytestmark = pytest.mark.django_db
S = ScheduledPayment.Status
SEPARATION = dt.date(2020, 4, 20)
AS_OF = dt.date(2026, 11, 30)
NOW = dt.datetime(2026, 11, 30, 22, tzinfo=dt.UTC)
BY = "taken over from conversion package TEST"


def benefit_in_pay(*, separated: bool = True) -> AnnuityTakenOver:
    """A BRP participant separated on 2020-04-20 whose prior administrator has paid May 2020 to November 2026 (the
    separation recorded as a conversion records it: no reaction plans anything before the take-over)."""
    participation = brp_participation()
    if separated:
        EmploymentEvent.objects.create(
            person=participation.person,
            kind=EmploymentEvent.Kind.SEPARATION,
            reason="retirement",
            effective_date=SEPARATION,
            recorded_at=timezone.now(),
            recorded_by="test",
        )
    return AnnuityTakenOver(
        participation=participation,
        form="single_life",
        commencement=dt.date(2020, 5, 1),
        first_payment=dt.date(2020, 5, 1),
        monthly=Decimal("5833.33"),
        next_payment=dt.date(2026, 12, 1),
    )


def take_over(taken: list[AnnuityTakenOver]) -> tuple[int, list[list[ScheduledPayment]]]:
    with CaptureQueriesContext(connection) as queries:
        left = annuities_take_over(taken=taken, by=BY, now=NOW, as_of=AS_OF)
    return len(queries), left


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite caps a statement's parameters, so bulk_create splits the same rows into more statements",
)
def test_taking_over_twenty_benefits_in_pay_takes_as_many_statements_as_taking_over_two(toy_basis):
    take_over([benefit_in_pay()])  # the first call also fills the process's caches (the valuation calendar)
    two, left_two = take_over([benefit_in_pay() for _ in range(2)])
    twenty, left_twenty = take_over([benefit_in_pay() for _ in range(20)])
    assert twenty == two, (two, twenty)
    for left in left_two + left_twenty:
        # BRP 3.4(c): the amount fixed at commencement; the next payment is the first the prior one did not make
        assert left[0].payment_date == dt.date(2026, 12, 1) and left[0].number == 80
        assert {p.amount for p in left} == {Decimal("5833.33")}
    paid = ScheduledPayment.objects.filter(status=S.PAID)
    assert paid.count() == 23 * 79  # May 2020 to November 2026, recorded as paid by the prior administrator
    assert Annuity.objects.filter(status=Annuity.Status.IN_PAY, fixed_on=dt.date(2020, 5, 1)).count() == 23


def test_one_benefit_taken_over_alone_is_planned_as_in_a_package(toy_basis):
    alone = benefit_in_pay()
    together = [benefit_in_pay() for _ in range(3)]
    left_alone = annuity_take_over(taken=alone, by=BY, now=NOW, as_of=AS_OF)
    left_together = annuities_take_over(taken=together, by=BY, now=NOW, as_of=AS_OF)

    def shape(rows: list[ScheduledPayment]) -> list[tuple]:
        return [(p.number, p.payment_date, p.amount, p.status, p.revision, p.cite) for p in rows]

    for left in left_together:
        assert shape(left) == shape(left_alone)
    schedules = PaymentSchedule.objects.filter(
        participation__in=[t.participation for t in [alone, *together]]
    )
    assert {(s.revision, s.computed_because) for s in schedules} == {(2, BY)}


def test_a_benefit_in_pay_without_a_separation_on_file_names_itself_and_takes_nothing_over(toy_basis):
    fine, unseparated = benefit_in_pay(), benefit_in_pay(separated=False)
    with pytest.raises(AnnuityTakeOverError) as refused:
        annuities_take_over(taken=[fine, unseparated], by=BY, now=NOW, as_of=AS_OF)
    assert refused.value.taken is unseparated and "no separation on file" in str(refused.value)
    assert not PaymentSchedule.objects.exists()
