"""Pension Plan figure files: validated whole (every bad line named, nothing applied), never applied twice."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from books.models import DefinedBenefitRecord
from core.imports import batch_messages, import_file
from core.models import ImportBatch
from payments.models import ScheduledPayment
from tests.factories import ParticipationFactory
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation, separate
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
KIND = ImportBatch.Kind.PENSION_FIGURES
HEADER = (
    "employee_number,as_of,unlimited_annual_benefit,payable_annual_benefit,benefit_service_years,"
    "normal_retirement_date,early_retirement_date,spouse_name,spouse_birth_date\n"
)


def load(text: str, name: str = "figures.csv") -> ImportBatch:
    return import_file(kind=KIND, file_name=name, content=text.encode(), actor="test", now=timezone.now())


@pytest.fixture
def two(db):
    first, second = brp_participation(), brp_participation(marital="married")
    DefinedBenefitRecord.objects.all().delete()
    return first, second


def good(first, second) -> str:
    return (
        HEADER
        + f"{first.person.employee_number},2026-03-31,180000.00,110000.00,18.50,2026-05-01,2016-05-01,,\n"
        + f"{second.person.employee_number},2026-03-31,250000.00,120000.00,22,2027-01-01,,Dana Roe,1966-05-01\n"
    )


def test_a_good_file_records_every_line_with_its_history(two):
    first, second = two
    batch = load(good(first, second))
    assert batch.status == ImportBatch.Status.APPLIED and batch.rows_applied == 2
    record = DefinedBenefitRecord.objects.get(participation=second)
    assert record.unlimited_annual_benefit == Decimal("250000.00") and record.spouse_birth_date == dt.date(
        1966, 5, 1
    )
    assert record.early_adjustment_factor == Decimal("1") and record.source.startswith(f"import #{batch.pk}")
    assert record.history.count() == 1


def test_the_same_file_again_applies_nothing(two):
    first, second = two
    load(good(first, second))
    again = load(good(first, second), name="again.csv")
    assert (
        again.status == ImportBatch.Status.DUPLICATE
        and "nothing was applied again" in batch_messages(again)[0]
    )
    assert DefinedBenefitRecord.objects.count() == 2


def test_lines_already_on_file_are_skipped_and_only_new_ones_applied(two):
    first, second = two
    load(good(first, second))
    more = (
        good(first, second)
        + f"{first.person.employee_number},2026-06-30,181000.00,110000.00,18.50,2026-05-01,,,\n"
    )
    batch = load(more, name="more.csv")
    assert (batch.rows_applied, batch.rows_skipped) == (1, 2)
    assert DefinedBenefitRecord.objects.count() == 3


def test_every_bad_line_is_named_and_nothing_is_applied(two):
    first, second = two
    load(
        HEADER + f"{second.person.employee_number},2026-03-31,250000.00,120000.00,22,2027-01-01,,,\n",
        name="old.csv",
    )
    edcp = ParticipationFactory()
    bad = (
        HEADER
        + f"{first.person.employee_number},2026-03-31,180000.00,110000.00,18.50,2026-05-01,2016-05-01,,\n"  # fine
        + "NOBODY,2026-03-31,1.00,1.00,1,2030-01-01,,,\n"
        + f"{edcp.person.employee_number},2026-03-31,1.00,1.00,1,2030-01-01,,,\n"
        + f"{first.person.employee_number},2026-31-03,180000.00,110000.00,18.50,2026-05-01,,,\n"
        + f"{first.person.employee_number},2026-04-30,-5.00,110000.00,18.50,2026-05-01,,,\n"
        + f"{first.person.employee_number},2026-05-31,180000.00,110000.00,18.50,2026-05-01,2027-01-01,,\n"
        + f"{first.person.employee_number},2026-03-31,180000.00,110000.00,18.50,2026-05-01,2016-05-01,,\n"
        + f"{second.person.employee_number},2026-03-31,260000.00,120000.00,22,2027-01-01,,,\n"
        + f"{first.person.employee_number},2026-06-30,180000.00,110000.00,eighteen,2026-05-01,,,\n"
    )
    batch = load(bad, name="bad.csv")
    assert batch.status == ImportBatch.Status.REFUSED and batch.rows_applied == 0
    messages = batch_messages(batch)
    assert [e["line"] for e in batch.errors] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "Line 3: employee NOBODY is not a participant in a defined benefit plan (the BRP)" in messages
    assert messages[1].startswith(f"Line 4: employee {edcp.person.employee_number} is not a participant")
    assert messages[2].startswith("Line 5: as of '2026-31-03' is not a date")
    assert messages[3] == "Line 6: unlimited annual benefit -5.00 is negative"
    assert messages[4] == "Line 7: the Early Retirement Date is after the Normal Retirement Date"
    assert (
        messages[5]
        == f"Line 8: repeats the figures of employee {first.person.employee_number} as of 2026-03-31, already given on line 2"
    )
    assert (
        "already has Pension Plan figures as of 2026-03-31 and this line differs (unlimited annual benefit)"
        in messages[6]
    )
    assert messages[7].startswith("Line 10: benefit service years 'eighteen' is not a number")
    assert not DefinedBenefitRecord.objects.filter(participation=first).exists()


def test_a_file_without_a_required_column_is_refused_whole(two):
    batch = load("employee_number,as_of\nE1,2026-03-31\n")
    assert batch.status == ImportBatch.Status.REFUSED
    assert "unlimited_annual_benefit" in batch_messages(batch)[0]


def test_figures_arriving_after_separation_fix_the_waiting_benefit(two, toy_basis, no_key_employees):
    first, second = two
    separate(first, dt.date(2026, 4, 20))
    assert ScheduledPayment.objects.get(participation=first).hold_code == "pension_figures"
    load(good(first, second))
    planned = (
        ScheduledPayment.objects.filter(participation=first)
        .exclude(status="cancelled")
        .order_by("payment_date")
    )
    assert planned[0].status == "scheduled" and planned[0].amount == Decimal("5833.33")


def test_the_command_imports_and_exits_1_on_a_refused_file(two, tmp_path, capsys):
    first, second = two
    path = tmp_path / "figures.csv"
    path.write_text(good(first, second))
    call_command("import_pension_figures", str(path))
    assert "2 lines applied" in capsys.readouterr().out
    path.write_text(HEADER + "NOBODY,2026-03-31,1.00,1.00,1,2030-01-01,,,\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_pension_figures", str(path))
    assert refused.value.returncode == 1
    assert "Line 2: employee NOBODY" in capsys.readouterr().err


def test_the_api_takes_an_upload_from_those_who_import_and_refuses_an_auditor(two):
    first, second = two
    url = "/api/pensions/imports/pension-figures/?name=figures.csv"
    auditor, administrator = Client(), Client()
    sign_in(auditor, staff_user("aud", "auditor"))
    sign_in(administrator, staff_user("adm", "administrator"))
    assert auditor.post(url, good(first, second), content_type="text/csv").status_code == 403
    response = administrator.post(url, good(first, second), content_type="text/csv")
    assert response.status_code == 201 and response.json()["rows_applied"] == 2
    assert administrator.post(url, good(first, second), content_type="text/csv").status_code == 200
    refused = administrator.post(
        url, HEADER + "NOBODY,2026-03-31,1.00,1.00,1,2030-01-01,,,\n", content_type="text/csv"
    )
    assert refused.status_code == 400 and refused.json()["errors"][0]["line"] == 2
    assert auditor.get("/api/pensions/imports/pension-figures/").status_code == 200
