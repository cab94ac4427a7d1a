"""core.bulk.insert_new: the rows, ids and history rows bulk_create_with_history would write (COPY on PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from simple_history.utils import bulk_create_with_history

from core.bulk import analyze, insert_new
from participants.models import KeyEmployeeList, Participation, Person
from plans.models import Fund, FundPrice

pytestmark = pytest.mark.django_db


def _person(number: str, **extra) -> Person:
    return Person(
        employee_number=number,
        first_name="Ana",
        last_name="O'Brien, Jr.",  # a quote and a comma: COPY's text format
        birth_date=dt.date(1970, 1, 2),
        hire_date=dt.date(2000, 3, 4),
        marital_status=Person.MaritalStatus.MARRIED,
        address_line2="Apt\t4\\b",  # a tab and a backslash
        **extra,
    )


def _tracked(history_row, fields) -> dict:
    return {f.attname: getattr(history_row, f.attname) for f in fields}


def test_rows_ids_and_history_rows_are_those_of_bulk_create_with_history(edcp):
    ours = insert_new(objs=[_person("A1"), _person("A2")], model=Person, history=True)
    theirs = bulk_create_with_history([_person("B1"), _person("B2")], Person)
    assert [p.pk for p in ours] == list(
        Person.objects.filter(employee_number__in=["A1", "A2"])
        .order_by("employee_number")
        .values_list("pk", flat=True)
    )
    assert all(not p._state.adding for p in ours)
    stored = Person.objects.get(pk=ours[0].pk)
    assert (stored.last_name, stored.address_line2, stored.marital_status) == (
        "O'Brien, Jr.",
        "Apt\t4\\b",
        "married",
    )
    fields = Person.history.model.tracked_fields
    for mine, other in zip(ours, theirs, strict=True):
        (h_mine,) = Person.history.filter(id=mine.pk)
        (h_other,) = Person.history.filter(id=other.pk)
        assert h_mine.history_type == h_other.history_type == "+"
        assert h_mine.history_user_id is h_other.history_user_id is None
        assert h_mine.history_change_reason == h_other.history_change_reason
        expected = _tracked(h_other, fields) | {"id": mine.pk, "employee_number": mine.employee_number}
        assert _tracked(h_mine, fields) == expected


def test_a_related_object_saved_after_it_was_assigned_gives_its_id(edcp):
    person = _person("C1")
    participation = Participation(person=person, plan=edcp, entered_on=dt.date(2010, 1, 1))
    insert_new(objs=[person], model=Person)
    (saved,) = insert_new(objs=[participation], model=Participation)
    assert Participation.objects.get(pk=saved.pk).person_id == person.pk


def test_decimals_and_a_refused_row_as_bulk_create(edcp):
    fund = Fund.objects.create(plan=edcp, code="BULKT", name="Bulk test fund", is_default=False)
    (price,) = insert_new(
        objs=[
            FundPrice(
                fund=fund,
                date=dt.date(2026, 11, 30),
                price=Decimal("12.345678"),
                loaded_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
                source="test",
            )
        ],
        model=FundPrice,
    )
    assert FundPrice.objects.get(pk=price.pk).price == Decimal("12.345678")
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_new(objs=[_person("D1"), _person("D1")], model=Person)
    assert not Person.objects.filter(employee_number="D1").exists()


def _reltuples(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="planner statistics are PostgreSQL's")
def test_analyze_counts_the_rows_the_transaction_has_written():
    """What the planner knows of the tables written in the (test's) transaction: nothing until `analyze`, their rows
    after it, the many-to-many table of a model with it."""
    people = insert_new(objs=[_person(f"S{i:05d}") for i in range(3000)], model=Person)
    kel = KeyEmployeeList.objects.create(
        identification_year=2031, recorded_at=dt.datetime(2032, 1, 5, tzinfo=dt.UTC), recorded_by="t"
    )
    kel.members.set(people[:1200])
    members = KeyEmployeeList.members.through._meta.db_table
    people_now = Person.objects.count()
    assert _reltuples("participants_person") < people_now
    assert _reltuples(members) < 1200

    analyze(models=[Person, KeyEmployeeList])

    assert _reltuples("participants_person") == people_now
    assert _reltuples(members) == KeyEmployeeList.members.through.objects.count()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="planner statistics are PostgreSQL's")
def _pages(table: str) -> tuple[int, int]:
    """(the table's pages at its last ANALYZE, its pages now)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relpages, pg_relation_size(oid) / current_setting('block_size')::int FROM pg_class "
            "WHERE relname = %s",
            [table],
        )
        return cursor.fetchone()


def test_analyze_grown_refreshes_only_the_tables_that_doubled_since_their_last_analyze():
    """`grown=2`: a table written into is analyzed once it is twice the size its last ANALYZE saw, not before; a
    table not written into is left alone."""
    insert_new(objs=[_person(f"G{i:05d}") for i in range(3000)], model=Person)
    analyze(models=[Person, FundPrice])
    counted = _reltuples("participants_person")
    assert counted == Person.objects.count()

    insert_new(objs=[_person(f"H{i:05d}") for i in range(200)], model=Person)
    then, now = _pages("participants_person")
    assert now < 2 * then
    assert analyze(models=[Person, FundPrice], grown=2) == []
    assert _reltuples("participants_person") == counted

    batch = 0
    while now < 2 * then:
        batch += 1
        insert_new(objs=[_person(f"J{batch:03d}{i:04d}") for i in range(1000)], model=Person)
        _, now = _pages("participants_person")
    assert analyze(models=[Person, FundPrice], grown=2) == ["participants_person"]
    assert _reltuples("participants_person") == Person.objects.count()
