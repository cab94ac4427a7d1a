"""Payroll files: validated whole, applied whole through pay_record, never twice."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import PayrollDeferral, PayrollRecord, PendingTransaction
from core.models import ImportBatch
from participants.services import employment_event_record
from tests.imports.conftest import reasons, run

pytestmark = pytest.mark.django_db
PAYROLL = ImportBatch.Kind.PAYROLL
HEADER = "employee_number,pay_date,component,gross"


def test_a_payroll_file_is_applied_and_credits_the_deferral_in_force(employees):
    batch = run(
        PAYROLL, HEADER, "E100,2024-05-31,base_salary,10000.00", "E300,2024-05-31,base_salary,5000.00"
    )
    assert batch.status == ImportBatch.Status.APPLIED, batch.errors
    assert (batch.rows_total, batch.rows_applied, batch.rows_skipped) == (2, 2, 0)
    record = PayrollRecord.objects.get(person=employees["E100"])
    assert (record.batch_id, record.line_number, record.gross) == (batch.pk, 2, Decimal("10000.00"))
    assert PayrollDeferral.objects.get(record=record).deferral == Decimal("1000.00")
    assert PendingTransaction.objects.get().amount == Decimal("1000.00")


def test_a_payroll_file_with_one_bad_row_applies_nothing_and_names_the_row(employees):
    batch = run(
        PAYROLL,
        HEADER,
        "E100,2024-05-31,base_salary,10000.00",
        "E200,2024-05-31,base_salary,ten thousand",
        "E300,2024-05-31,base_salary,5000.00",
    )
    assert batch.status == ImportBatch.Status.REFUSED
    assert batch.errors == [
        {
            "line": 3,
            "column": "gross",
            "reason": batch.errors[0]["reason"],
            "message": "Line 3: gross 'ten thousand' is not a number (write it like 1234.56, "
            "without $ or commas)",
        }
    ]
    assert PayrollRecord.objects.count() == 0
    assert PendingTransaction.objects.count() == 0


def test_every_bad_payroll_row_is_listed_with_its_line_number_and_reason(employees):
    employment_event_record(
        person=employees["E200"],
        kind="separation",
        effective_date=dt.date(2024, 3, 31),
        reason="resignation",
        actor="test",
    )
    batch = run(
        PAYROLL,
        HEADER + ",sequence",
        "E100,2024-05-31,base_salary,10000.00,",  # 2 good
        "E999,2024-05-31,base_salary,100.00,",  # 3 unknown employee
        "E100,2024-02-30,base_salary,100.00,",  # 4 bad date
        "E100,2024-05-31,base_salary,12x,2",  # 5 non-numeric amount
        "E100,2024-05-31,base_salary,-5.00,3",  # 6 negative
        "E100,2024-05-31,base_salary,1.005,4",  # 7 fraction of a cent
        "E200,2024-05-31,base_salary,100.00,",  # 8 separated before the pay date
        "E100,2024-05-31,base_salary,10000.00,",  # 9 repeats line 2
        "E100,2024-05-31,bonsu,100.00,",  # 10 unknown component
        "E100,2014-05-31,base_salary,100.00,",  # 11 before hire
        ",2024-05-31,base_salary,1.00,",  # 12 no employee
        "E100,2024-05-31,base_salary,1.00,0",
    )  # 13 sequence below 1
    assert batch.status == ImportBatch.Status.REFUSED
    found = reasons(batch)
    assert sorted(found) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert "employee E999 is not on file" in found[3][0]
    assert "pay date '2024-02-30' is not a date" in found[4][0]
    assert "gross '12x' is not a number" in found[5][0]
    assert "gross -5.00 is negative" in found[6][0]
    assert "more than 2 decimal places" in found[7][0]
    assert found[8] == [
        "Line 8: employee E200 was not employed on the pay date 2024-05-31 (separation from service "
        "2024-03-31)"
    ]
    assert "repeats the base_salary pay of employee E100 on 2024-05-31 given on line 2" in found[9][0]
    assert "pay component 'bonsu' is unknown" in found[10][0]
    assert "hired 2015-01-05" in found[11][0]
    assert found[12] == ["Line 12: employee number is missing"]
    assert "sequence 0 is outside 1 to 1000" in found[13][0]
    assert all(m.startswith(f"Line {line}: ") for line, ms in found.items() for m in ms)
    assert PayrollRecord.objects.count() == 0


def test_reimporting_the_same_payroll_file_applies_it_once(employees):
    lines = (HEADER, "E100,2024-05-31,base_salary,10000.00", "E200,2024-05-31,base_salary,8000.00")
    first = run(PAYROLL, *lines)
    second = run(PAYROLL, *lines)
    assert first.status == ImportBatch.Status.APPLIED
    assert second.status == ImportBatch.Status.DUPLICATE
    assert (second.rows_applied, second.rows_skipped) == (0, 2)
    assert "already applied" in second.errors[0]["message"]
    assert PayrollRecord.objects.count() == 2
    assert PendingTransaction.objects.count() == 2


def test_lines_already_recorded_by_another_file_are_skipped_and_counted(employees):
    run(PAYROLL, HEADER, "E100,2024-05-31,base_salary,10000.00")
    batch = run(
        PAYROLL,
        HEADER,
        "E100,2024-05-31,base_salary,10000.00",
        "E200,2024-05-31,base_salary,8000.00",
        name="june.csv",
    )
    assert batch.status == ImportBatch.Status.APPLIED
    assert (batch.rows_applied, batch.rows_skipped) == (1, 1)
    assert PayrollRecord.objects.count() == 2
    assert PendingTransaction.objects.count() == 2


def test_a_recorded_pay_line_with_another_gross_is_a_conflict(employees):
    run(PAYROLL, HEADER, "E100,2024-05-31,base_salary,10000.00")
    batch = run(
        PAYROLL, HEADER, "E100,2024-05-31,base_salary,10500.00", "E200,2024-05-31,base_salary,8000.00"
    )
    assert batch.status == ImportBatch.Status.REFUSED
    assert reasons(batch) == {
        2: [
            "Line 2: employee E100 already has base_salary pay of 10000.00 recorded on "
            "2024-05-31 (sequence 1); this file says 10500.00. A recorded pay line is never "
            "changed"
        ]
    }
    assert PayrollRecord.objects.count() == 1


def test_lines_are_paid_in_pay_date_order_whatever_their_order_in_the_file(employees):
    batch = run(PAYROLL, HEADER, "E100,2024-05-31,base_salary,100.00", "E100,2024-04-30,base_salary,100.00")
    assert batch.status == ImportBatch.Status.APPLIED
    assert list(PayrollRecord.objects.order_by("id").values_list("line_number", flat=True)) == [3, 2]


def test_a_line_the_books_refuse_while_applying_refuses_the_whole_file(employees, rrp):
    from tests.factories import ParticipationFactory

    ParticipationFactory(person=employees["E300"], plan=rrp, entered_on=dt.date(2015, 1, 5))
    # No 401(a)(17) figure is recorded for 2040: RRP Plan Compensation cannot be computed for that pay.
    batch = run(
        PAYROLL, HEADER, "E100,2024-05-31,base_salary,10000.00", "E300,2040-05-31,base_salary,5000.00"
    )
    assert batch.status == ImportBatch.Status.REFUSED
    assert list(reasons(batch)) == [3]
    assert "401(a)(17)" in reasons(batch)[3][0]
    assert PayrollRecord.objects.count() == 0
    assert PendingTransaction.objects.count() == 0


def test_a_file_with_a_missing_column_or_an_unknown_one_is_refused_at_the_header(employees):
    batch = run(PAYROLL, "employee_number,pay_date,gross,bonus_flag", "E100,2024-05-31,1.00,y")
    assert batch.status == ImportBatch.Status.REFUSED
    messages = [e["message"] for e in batch.errors]
    assert any("unknown column 'bonus_flag'" in m for m in messages)
    assert any("no 'component' column" in m for m in messages)
    assert all(m.startswith("Line 1: ") for m in messages)


def test_a_line_with_too_many_values_and_a_file_that_is_not_utf8_are_refused(employees):
    batch = run(PAYROLL, HEADER, "E100,2024-05-31,base_salary,1,000.00")
    assert reasons(batch) == {2: ["Line 2: this line has 5 values but the header names 4 columns"]}
    from core.imports import import_file
    from tests.imports.conftest import NOW

    latin = import_file(
        kind=PAYROLL,
        file_name="x.csv",
        now=NOW,
        actor="t",
        content=(HEADER + "\nE100,2024-05-31,base_salary,1.00\nE\xe9,2024-05-31,base_salary,1\n").encode(
            "latin-1"
        ),
    )
    assert latin.status == ImportBatch.Status.REFUSED
    assert latin.errors[0]["message"].startswith("Line 3: the file is not UTF-8 text")


def test_an_imported_file_credits_what_pay_record_credits_line_by_line(rrp):
    """The import's prefetched context changes the queries, not the results (RRP pay above 401(a)(17))."""
    from books.services.payroll import pay_record
    from elections.models import Channel, DeferralElection, DeferralElectionLine, Status
    from tests.conftest import eastern
    from tests.factories import ParticipationFactory, PersonFactory

    people = []
    for number in ("R1", "R2"):
        person = PersonFactory(employee_number=number, hire_date=dt.date(2015, 1, 5))
        participation = ParticipationFactory(person=person, plan=rrp, entered_on=dt.date(2015, 1, 5))
        election = DeferralElection.objects.create(
            participation=participation,
            plan_year=2024,
            status=Status.ACCEPTED,
            submitted_at=eastern(2023, 12, 1),
            channel=Channel.STAFF,
            actor="t",
        )
        DeferralElectionLine.objects.create(
            election=election, component="plan_compensation", percent=Decimal("6")
        )
        people.append(person)
    pays = [(dt.date(2024, m, 28), "90000.00") for m in range(1, 7)]
    for day, gross in pays:
        pay_record(person=people[0], pay_date=day, component="base_salary", gross=Decimal(gross), actor="t")
    batch = run(PAYROLL, HEADER, *[f"R2,{day},base_salary,{gross}" for day, gross in reversed(pays)])
    assert batch.status == ImportBatch.Status.APPLIED, batch.errors

    def credited(person):
        return [
            (d.record.pay_date, d.plan_compensation, d.deferral, d.matching)
            for d in PayrollDeferral.objects.filter(record__person=person).order_by("record__pay_date")
        ]

    assert credited(people[1]) == credited(people[0])
    assert credited(people[0])[0][1] == Decimal("0.00")  # below the limit in January
    assert any(row[2] > 0 for row in credited(people[0]))
