"""The parallel run after a conversion (docs/parallel-run.md): the prior recordkeeper's daily valuation against
this system's Valuation Date results. A file that cannot be read is refused whole, naming every bad row; a read
file is compared position by position, above the Committee's tolerance, and the comparison is kept."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from books.models import DailyValuation, ParallelRun, ParallelRunDifference, Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from books.services.parallel import (
    ParallelFileError,
    parallel_run_compare,
    tolerance_in_force,
    tolerance_set,
    valuation_file_read,
)
from core.models import AuditEvent
from tests.elections.factories import user_with_role
from tests.factories import FundFactory, ParticipationFactory, price
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

JAN15, JAN16, JAN20 = dt.date(2026, 1, 15), dt.date(2026, 1, 16), dt.date(2026, 1, 20)
HEADER = "valuation_date,employee_number,plan,account,fund,units,value"


@pytest.fixture
def books(edcp):
    """Two participants credited on January 15 and 16 (EDCP 7.2: units at the Valuation Date's price)."""
    sv = FundFactory(plan=edcp, code="SV", is_default=True)
    for day, p in ((JAN15, "20.00"), (JAN16, "22.00"), (JAN20, "19.00")):
        price(sv, day, p)
    people = []
    for n, amount in enumerate(("1000.00", "2500.00")):
        participation = ParticipationFactory(plan=edcp)
        credit_create(
            participation=participation,
            account_name="retirement_termination" if n == 0 else "specified_date:2030-01",
            source=Source.DEFERRAL,
            amount=Decimal(amount),
            effective_date=JAN15,
            idempotency_key=f"parallel:{n}",
            actor="test",
        )
        people.append(participation.person)
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    return people


def our_lines(day: dt.date) -> list[str]:
    """This system's valuation of `day`, written as the prior recordkeeper would."""
    lines = []
    for v in DailyValuation.objects.filter(valuation_date=day).select_related(
        "account__participation__person", "account__participation__plan", "fund"
    ):
        account = v.account
        lines.append(
            f"{day},{account.participation.person.employee_number},{account.participation.plan.code},"
            f"{account.name},{v.fund.code},{v.units},{v.value}"
        )
    return sorted(lines)


def read(lines: list[str], name: str = "valuation.csv"):
    return valuation_file_read(stream=io.BytesIO(("\n".join([HEADER, *lines]) + "\n").encode()), name=name)


def compare(lines: list[str], tolerance: Decimal | None = None) -> ParallelRun:
    return parallel_run_compare(valuation=read(lines), actor="test", at=timezone.now(), tolerance=tolerance)


def test_the_same_valuation_agrees_and_the_totals_of_each_day_are_kept(books):
    run = compare(our_lines(JAN15) + our_lines(JAN16))
    assert run.differences == 0
    days = list(run.days.order_by("valuation_date"))
    assert [(d.valuation_date, d.prior_positions, d.our_positions) for d in days] == [
        (JAN15, 2, 2),
        (JAN16, 2, 2),
    ]
    assert days[0].prior_value == days[0].our_value == Decimal("3500.00")
    assert days[1].our_value == Decimal("3850.00")  # 175 units at 22.00
    assert len(run.sha256) == 64 and run.tolerance == Decimal("0.01")
    assert AuditEvent.objects.filter(action="parallel_run.compared", object_id=str(run.pk)).exists()


def test_a_value_off_by_more_than_the_tolerance_is_listed_at_its_line(books):
    lines = our_lines(JAN16)
    day, employee, plan, account, fund, units, value = lines[1].split(",")
    lines[1] = ",".join([day, employee, plan, account, fund, units, str(Decimal(value) + Decimal("0.02"))])
    run = compare(lines)
    (diff,) = run.difference_rows.all()
    assert (diff.kind, diff.line, diff.employee_number, diff.account) == ("differs", 3, employee, account)
    assert diff.value_difference == Decimal("-0.02")
    assert run.days.get().differences == 1
    assert compare(lines, tolerance=Decimal("0.02")).differences == 0  # not more than the tolerance
    assert compare(lines, tolerance=Decimal("0.01")).differences == 1


def test_units_that_differ_are_listed_even_when_the_value_agrees(books):
    lines = our_lines(JAN16)
    day, employee, plan, account, fund, units, value = lines[0].split(",")
    lines[0] = ",".join(
        [day, employee, plan, account, fund, str(Decimal(units) + Decimal("0.000001")), value]
    )
    (diff,) = compare(lines).difference_rows.all()
    assert diff.kind == "differs" and diff.units_difference == Decimal("-0.000001")


def test_a_position_one_side_lacks_is_listed_with_the_side_that_lacks_it(books):
    lines = our_lines(JAN16)
    dropped = lines.pop(0)
    lines.append(f"{JAN16},NOT-HERE,EDCP,retirement_termination,SV,10.000000,220.00")
    run = compare(lines)
    kinds = {d.kind: d for d in run.difference_rows.all()}
    assert set(kinds) == {ParallelRunDifference.Kind.MISSING_HERE, ParallelRunDifference.Kind.MISSING_THERE}
    assert kinds["missing_here"].employee_number == "NOT-HERE" and kinds["missing_here"].line == 3
    assert kinds["missing_there"].employee_number == dropped.split(",")[1]
    assert kinds["missing_there"].line is None


def test_a_date_not_yet_credited_here_is_kept_uncompared(books):
    lines = [line.replace(str(JAN16), str(JAN20)) for line in our_lines(JAN16)]
    run = compare(lines)
    day = run.days.get()
    assert (day.valuation_date, day.credited_here, day.prior_positions, day.differences) == (
        JAN20,
        False,
        2,
        0,
    )
    assert run.differences == 0
    credit_valuation_date(valuation_date=JAN20)
    assert compare(lines).differences == 2  # compared once credited: 175 units are 3,325.00, not 3,850.00


def test_a_file_with_bad_rows_is_refused_whole_naming_every_bad_line_and_nothing_is_kept(books):
    good = our_lines(JAN16)
    bad = [
        good[0],
        "2026-01-17,E1,EDCP,retirement_termination,SV,1.000000,22.00",  # a Saturday
        "2026-01-16,E1,EDCP,savings,SV,1.000000,22.00",  # no such account in the EDCP
        "2026-01-16,E1,EDCP,retirement_termination,SV,1.0000001,22.00",  # seven decimals
        "2026-01-16,E1,EDCP,specified_date:2030-13,SV,1.000000,22.00",  # no month 13
        "2026-01-16,E1,RRP,elective_deferral,SV,1.000000,22.00",  # SV is not on the RRP menu
        "2026-01-16,E1,EDCP,retirement_termination,SV,1.000000,22.001",  # a tenth of a cent
        good[0],  # the same position twice
        "2026-01-16,E1,EDCP",  # columns missing
    ]
    with pytest.raises(ParallelFileError) as refused:
        read(bad)
    lines = [e.split(":")[0] for e in refused.value.errors]
    assert lines == [f"line {n}" for n in range(3, 11)]
    assert "not a Valuation Date" in refused.value.errors[0]
    assert "is also on line 2" in refused.value.errors[6]
    assert ParallelRun.objects.count() == 0


def test_a_file_with_the_wrong_columns_is_refused():
    with pytest.raises(ParallelFileError, match="the columns must be"):
        valuation_file_read(stream=io.BytesIO(b"date,employee,units\n"), name="x.csv")


def test_the_committee_sets_the_tolerance_and_each_setting_is_kept(books):
    assert tolerance_in_force() == Decimal("0.01")
    tolerance_set(amount=Decimal("0.05"), actor="committee", at=timezone.now(), note="minute 12")
    assert tolerance_in_force() == Decimal("0.05")
    assert compare(our_lines(JAN16)).tolerance == Decimal("0.05")
    with pytest.raises(ValueError):
        tolerance_set(amount=Decimal("0.001"), actor="committee", at=timezone.now())


def test_the_command_prints_the_days_and_exits_by_what_it_found(books, tmp_path, capsys):
    path = tmp_path / "daily.csv"
    path.write_text("\n".join([HEADER, *our_lines(JAN16)]) + "\n")
    call_command("parallel_run", str(path), "--json")
    assert '"status": "agrees"' in capsys.readouterr().out
    lines = our_lines(JAN16)
    lines.pop()
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    with pytest.raises(SystemExit) as found:
        call_command("parallel_run", str(path))
    assert found.value.code == 1
    assert "DIFFERS 2026-01-16" in capsys.readouterr().out
    path.write_text(HEADER + "\n2026-01-17,E1,EDCP,retirement_termination,SV,1.000000,22.00\n")
    with pytest.raises(SystemExit) as refused:
        call_command("parallel_run", str(path))
    assert refused.value.code == 2
    assert ParallelRun.objects.count() == 2


def test_staff_compare_on_the_page_and_each_capability_is_kept_to_its_role(books, client):
    administrator = user_with_role("pr-admin", "administrator")
    auditor = user_with_role("pr-auditor", "auditor")
    committee = user_with_role("pr-committee", "committee")
    url = reverse("books_staff:parallel_runs")
    body = ("\n".join([HEADER, *our_lines(JAN16)[:1]]) + "\n").encode()

    sign_in(client, administrator)
    response = client.post(url, {"compare": "1", "file": SimpleUploadedFile("daily.csv", body)})
    run = ParallelRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "books_staff:parallel_run", args=[run.pk]
    )
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"On this system, not in the prior recordkeeper" in page.content
    csv = client.get(response["Location"] + "?format=csv")
    assert csv.status_code == 200 and b"missing_there" in csv.content
    refused = client.post(url, {"compare": "1", "file": SimpleUploadedFile("bad.csv", b"nonsense\n")})
    assert refused.status_code == 400 and b"the columns must be" in refused.content
    assert client.post(url, {"tolerance": "1", "amount": "1.00"}).status_code == 403  # the Committee's

    sign_in(client, auditor)
    assert client.get(url).status_code == 200
    assert client.post(url, {"compare": "1", "file": SimpleUploadedFile("d.csv", body)}).status_code == 403

    sign_in(client, committee)
    assert client.post(url, {"tolerance": "1", "amount": "0.25", "note": "minute 3"}).status_code == 302
    assert tolerance_in_force() == Decimal("0.25")
    assert ParallelRun.objects.count() == 1
