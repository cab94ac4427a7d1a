"""The liability report's defined benefit lines for many participants at once (issue 15): the same answers, to
the cent, as one participant at a time, in a number of queries that does not grow with the participants (the
figures, events, benefits in pay and payments read once; Key Employee lists, IRS figures and actuarial factors
once per run, core.memo). On the real actuarial basis of the catalog, not the toy one."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from books.liability import plan_liability
from books.models import DefinedBenefitRecord
from core import memo
from participants.models import Participation
from payments.liability import defined_benefit_value
from plans.models import Plan
from tests.pensions.factories import brp_participation, key_employees, separate

pytestmark = pytest.mark.django_db
AS_OF = dt.date(2026, 6, 1)


def _employed(i: int) -> Participation:
    return brp_participation(birth=dt.date(1961, 5, 1 + i))


def _employed_married_pre_2005(i: int) -> Participation:
    participation = brp_participation(
        birth=dt.date(1960, 3, 1 + i), marital="married", spouse_birth=dt.date(1963, 7, 1), spouse_name="Pat"
    )
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    return participation


def _in_pay_single(i: int) -> Participation:
    participation = brp_participation(birth=dt.date(1961, 4, 1 + i))
    separate(participation, dt.date(2026, 4, 20))
    return participation


def _in_pay_joint_then_died(i: int) -> Participation:
    participation = brp_participation(
        birth=dt.date(1961, 2, 1 + i), marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Pat"
    )
    separate(participation, dt.date(2026, 4, 20))
    if i % 2:
        separate(participation, dt.date(2026, 5, 10), kind="death")
    return participation


def _not_eligible(i: int) -> Participation:
    return brp_participation(
        service="5.00", erd=dt.date(2031, 5, 1), nrd=dt.date(2036, 5, 1), birth=dt.date(1971, 5, 1 + i)
    )


KINDS = (_employed, _employed_married_pre_2005, _in_pay_single, _in_pay_joint_then_died, _not_eligible)


def _population(per_kind: int) -> list[Participation]:
    key_employees(2024)
    people = [kind(i) for i in range(per_kind) for kind in KINDS]
    key_employees(2025, people[0].person)  # one Key Employee: his payments start later (BRP 4.3)
    return people


def _line(b) -> tuple:
    return (b.participation.pk, b.status, b.value, b.method, b.cite, b.note)


def test_the_lines_of_all_at_once_are_the_lines_one_at_a_time_to_the_cent(db):
    people = _population(2)
    together = plan_liability(plan=Plan.objects.get(code="BRP"), as_of=AS_OF).benefits
    assert not memo.active()  # the run's memo ended with the report
    one_by_one = {
        p.pk: defined_benefit_value(
            participation=Participation.objects.select_related("person", "plan").get(pk=p.pk), as_of=AS_OF
        )
        for p in people
    }
    assert len(together) == len(people) == 10
    assert [_line(b) for b in together] == [_line(one_by_one[b.participation.pk]) for b in together]
    valued = [b for b in together if b.value is not None]
    assert len(valued) == 8 and all(b.value > 0 for b in valued if b.status != "ended at death")
    assert {b.status for b in together} >= {"employed", "in pay", "in pay to the survivor"}


def _queries(brp: Plan) -> int:
    with CaptureQueriesContext(connection) as queries:
        plan_liability(plan=brp, as_of=AS_OF)
    return len(queries)


def test_the_queries_do_not_grow_with_the_participants(db):
    brp = Plan.objects.get(code="BRP")
    _population(1)  # 5 participants, one of each kind
    few = _queries(Plan.objects.get(pk=brp.pk))
    for i in range(1, 3):
        for kind in KINDS:
            kind(i)
    assert Participation.objects.filter(plan=brp).count() == 15
    assert _queries(Plan.objects.get(pk=brp.pk)) == few
