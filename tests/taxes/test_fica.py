"""FICA special timing (RULES.md "FICA special timing and year-end tax reporting"): graded vesting, nonduplication,
an idempotent job with correcting rows, and the feed of each pay date."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import PendingTransaction
from books.services.contributions import company_contribution_credit
from books.services.payroll import pay_record
from participants.services import vesting_service_record
from plans.models import PlanTable
from taxes.models import FeedTake, FicaWage
from taxes.selectors import feed_changes, year_figures
from taxes.services.fica import fica_wages_record
from taxes.services.files import feed_take
from tests.conftest import eastern
from tests.factories import ParticipationFactory

pytestmark = pytest.mark.django_db
NOW = eastern(2027, 1, 29)


def graded(edcp) -> None:
    """The Retirement Savings Plan's matching schedule made graded: 20% a year of vesting service."""
    table = (
        PlanTable.objects.filter(plan=edcp, code="rsp_matching_vesting").order_by("-effective_date").first()
    )
    table.rows = [[0, "0"], [1, "20"], [2, "40"], [3, "60"], [4, "80"], [5, "100"]]
    table.save()


def credit(part, amount: str, plan_year: int, on: dt.date) -> None:
    company_contribution_credit(
        participation=part, kind="matching", amount=Decimal(amount), plan_year=plan_year, on=on, actor="t"
    )


def rows(part) -> list[tuple[dt.date, str, Decimal, Decimal]]:
    return [
        (r.date, r.kind, r.amount, r.prior_years_amount)
        for r in FicaWage.objects.filter(participation=part).order_by("date", "id")
    ]


def test_graded_vesting_takes_each_newly_vested_percentage_once(edcp):
    graded(edcp)
    part = ParticipationFactory(plan=edcp)
    vesting_service_record(person=part.person, through_year=2025, years=1)  # 20% in 2026
    credit(part, "1000.00", 2025, dt.date(2026, 1, 2))
    vesting_service_record(person=part.person, through_year=2026, years=2)  # 40% from the end of 2026
    credit(part, "500.00", 2026, dt.date(2026, 12, 31))
    fica_wages_record(through=dt.date(2027, 1, 29), now=NOW, participations=[part])
    assert rows(part) == [
        # the 20% already vested of the credit, when credited
        (dt.date(2026, 1, 2), "credit", Decimal("200.00"), Decimal("0.00")),
        (dt.date(2026, 12, 31), "credit", Decimal("100.00"), Decimal("0.00")),
        # 20% more of the whole account on the day the second year of service ends; the 2025 credit's part is
        # for earlier years' services (box 11), the 2026 credit's is not
        (dt.date(2026, 12, 31), "vesting", Decimal("300.00"), Decimal("200.00")),
    ]
    fig = year_figures(year=2026, person_ids=[part.person_id])[part.person_id]
    assert fig.fica_wages == Decimal("600.00")
    assert fig.w2_box_11 == Decimal("200.00")  # no distributions: what vested for earlier years' services


def test_an_unvested_credit_forfeited_is_never_fica_wages_and_a_rerun_writes_nothing(edcp):
    part = ParticipationFactory(plan=edcp)
    vesting_service_record(person=part.person, through_year=2025, years=0)
    credit(part, "900.00", 2025, dt.date(2026, 2, 27))
    first = fica_wages_record(through=dt.date(2026, 12, 31), now=NOW, participations=[part])
    again = fica_wages_record(through=dt.date(2026, 12, 31), now=NOW, participations=[part])
    assert rows(part) == []
    assert (first.written, again.written, again.corrections) == (0, 0, 0)


def test_deferrals_are_wages_on_the_pay_date_and_a_reversed_credit_gets_a_correcting_row(edcp):
    from tests.books.test_contributions_and_vesting import elect

    part = ParticipationFactory(plan=edcp)
    elect(part, 2026, {"base_salary": 10})
    for day in (dt.date(2026, 1, 15), dt.date(2026, 1, 30)):
        pay_record(
            person=part.person, pay_date=day, component="base_salary", gross=Decimal("10000.00"), actor="t"
        )
    result = fica_wages_record(through=dt.date(2026, 1, 31), now=NOW, participations=[part])
    assert result.written == 2
    assert [(r[0], r[1], r[2]) for r in rows(part)] == [
        (dt.date(2026, 1, 15), "deferral", Decimal("1000.00")),
        (dt.date(2026, 1, 30), "deferral", Decimal("1000.00")),
    ]
    assert fica_wages_record(through=dt.date(2026, 1, 31), now=NOW, participations=[part]).written == 0
    # the books cancel the second deferral before it is invested: the feed gets a correcting row, the first stays
    pending = PendingTransaction.objects.filter(account__participation=part).order_by("id").last()
    PendingTransaction.objects.filter(pk=pending.pk).update(status=PendingTransaction.Status.CANCELLED)
    result = fica_wages_record(through=dt.date(2026, 1, 31), now=NOW, participations=[part])
    assert result.corrections == 1
    assert sum(r[2] for r in rows(part)) == Decimal("1000.00")
    assert FicaWage.objects.filter(participation=part).count() == 3


def test_vesting_between_pay_dates_goes_to_the_next_feed_and_the_page_knows_what_changed(edcp):
    from tests.books.test_contributions_and_vesting import elect

    part = ParticipationFactory(plan=edcp)
    elect(part, 2026, {"base_salary": 10})
    for day in (dt.date(2026, 1, 15), dt.date(2026, 1, 30)):
        pay_record(
            person=part.person, pay_date=day, component="base_salary", gross=Decimal("10000.00"), actor="t"
        )
    vesting_service_record(
        person=part.person, through_year=2025, years=5
    )  # vested: credits count when credited
    credit(part, "700.00", 2025, dt.date(2026, 1, 20))  # between the two pay dates
    fica_wages_record(through=dt.date(2026, 1, 31), now=NOW, participations=[part])
    feed = {r.date: r.feed_date for r in FicaWage.objects.filter(participation=part)}
    assert feed == {
        dt.date(2026, 1, 15): dt.date(2026, 1, 15),
        dt.date(2026, 1, 20): dt.date(2026, 1, 30),
        dt.date(2026, 1, 30): dt.date(2026, 1, 30),
    }
    take, taken = feed_take(feed_date=dt.date(2026, 1, 30), actor="payroll", now=NOW, via="csv")
    assert take.total == Decimal("1700.00") and take.rows == 2 and len(taken) == 2
    assert feed_changes(feed_date=dt.date(2026, 1, 30)) == (take, [])
    # an amount found after the feed was taken goes to the next open feed, not the one payroll already has
    pay_record(
        person=part.person,
        pay_date=dt.date(2026, 2, 13),
        component="base_salary",
        gross=Decimal("10000.00"),
        actor="t",
    )
    credit(part, "50.00", 2024, dt.date(2026, 1, 29))  # a late true-up for an earlier year
    fica_wages_record(through=dt.date(2026, 2, 13), now=NOW, participations=[part])
    late = FicaWage.objects.get(participation=part, date=dt.date(2026, 1, 29))
    assert late.feed_date == dt.date(2026, 2, 13)
    assert FeedTake.objects.count() == 1


def test_a_graded_table_version_recorded_by_the_committee_vests_on_its_effective_date(edcp):
    """A new dated version of the vesting table (plans.services.table_set, as on the staff table page) raises the
    vested percentage on its effective date: that day's newly vested percentage of the account's value is FICA
    wages that day, and each later rise counts only what it adds."""
    from plans.services import table_set

    part = ParticipationFactory(plan=edcp)
    vesting_service_record(person=part.person, through_year=2025, years=1)  # 1 year: 0% on the shipped table
    credit(part, "1000.00", 2025, dt.date(2026, 1, 2))
    current = PlanTable.objects.filter(plan=edcp, code="rsp_matching_vesting").first()
    table_set(
        plan=edcp,
        code="rsp_matching_vesting",
        effective_date=dt.date(2026, 7, 1),
        rows=[["0", "0"], ["1", "20"], ["2", "40"], ["3", "60"], ["4", "80"], ["5", "100"]],
        citation=current.citation,
        description=current.description,
        actor="committee",
        now=NOW,
    )
    vesting_service_record(person=part.person, through_year=2026, years=2)  # 40% from the end of 2026
    fica_wages_record(through=dt.date(2027, 1, 29), now=NOW, participations=[part])
    assert rows(part) == [
        # nothing vested when credited (0%); 20% of 1,000 on the day the graded version takes effect
        (dt.date(2026, 7, 1), "vesting", Decimal("200.00"), Decimal("200.00")),
        # 20% more at the end of the second year of service
        (dt.date(2026, 12, 31), "vesting", Decimal("200.00"), Decimal("200.00")),
    ]


def _people(edcp, n: int) -> list:
    """n participants with the same history: a Year of Vesting Service, a deferral-free company credit in 2026
    (20% vested when credited under a graded table), a second year at the end of 2026 (40%)."""
    graded(edcp)
    parts = [ParticipationFactory(plan=edcp) for _ in range(n)]
    for part in parts:
        vesting_service_record(person=part.person, through_year=2025, years=1)
        vesting_service_record(person=part.person, through_year=2026, years=2)
        credit(part, "1000.00", 2025, dt.date(2026, 3, 2))
    return parts


def test_the_job_reads_the_books_for_all_participants_at_once(edcp):
    """The FICA job is set-based: no more queries for 12 participants than for 3 (the first run may read a date the
    books keep cached afterwards, so it may need one more)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n in (3, 12):
        parts = _people(edcp, n)
        with CaptureQueriesContext(connection) as queries:
            result = fica_wages_record(through=dt.date(2027, 1, 29), now=NOW, participations=parts)
        assert result.written == 2 * n  # the credit at 20% and the vesting of 20% more, for each
        counts.append(len(queries))
        assert {tuple(r[:3]) for p in parts for r in [tuple(x) for x in rows(p)]} == {
            (dt.date(2026, 3, 2), "credit", Decimal("200.00")),
            (dt.date(2026, 12, 31), "vesting", Decimal("200.00")),
        }
    assert counts[1] <= counts[0], counts
