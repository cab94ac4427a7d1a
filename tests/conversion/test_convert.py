"""The convert command on the sample package of ../shared/conversion (copied to tests/conversion/sample)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from books.liability import plan_liability
from books.models import DailyValuation, LedgerEntry
from books.services.verify import books_verify
from conversion import apply as conversion_apply
from conversion.models import ConversionException, ConversionRun
from conversion.services import conversion_run
from core.models import AuditEvent
from participants.models import KeyEmployeeList, Participation, Person
from plans.models import Fund, FundPrice, Plan

SAMPLE = Path(__file__).parent / "sample"
PACKAGE = SAMPLE / "package"
EXPECTED = json.loads((SAMPLE / "expected_result.json").read_text())
NOW = dt.datetime(2026, 12, 1, 17, 0, tzinfo=dt.UTC)


def _compared(result: dict) -> dict:
    """What FORMAT.md 5 compares: counts, control, and file/line/code of each exception."""
    return {
        "participants": result["participants"],
        "positions": result["positions"],
        "control": result["control"],
        "exceptions": [(e["file"], e["line"], e["code"]) for e in result["exceptions"]],
    }


def _convert_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("convert", str(PACKAGE), "--json", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_the_dry_run_prints_the_expected_result_and_writes_nothing():
    result = _convert_json("--dry-run")
    assert _compared(result) == _compared(EXPECTED)
    assert result["status"] == "validated"
    assert not Person.objects.exists() and not LedgerEntry.objects.exists()
    run = ConversionRun.objects.get()
    assert run.dry_run and run.status == "validated" and run.package_id == "HRS-20261130-S7-N25"
    assert set(run.file_hashes) == {p.name for p in PACKAGE.glob("*.csv")}


@pytest.mark.slow
@pytest.mark.django_db
def test_the_dry_run_gives_the_same_result_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'scratch.sqlite3'}"
    for command in (["migrate", "-v0"], ["load_catalog"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=settings.BASE_DIR,
            env=env,
            check=True,
            capture_output=True,
        )
    child = subprocess.run(
        [sys.executable, "manage.py", "convert", str(PACKAGE), "--dry-run", "--json"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
    )
    assert child.returncode == 0, child.stderr
    assert _compared(json.loads(child.stdout)) == _compared(EXPECTED)
    if connection.vendor == "postgresql":
        assert _compared(_convert_json("--dry-run")) == _compared(EXPECTED)


@pytest.mark.django_db
def test_apply_records_the_package_and_the_books_tie_to_the_control_totals():
    result = _convert_json()
    assert result["status"] == "applied" and result["exceptions"] == []
    assert Person.objects.count() == 25
    assert Participation.objects.count() == 32
    assert LedgerEntry.objects.count() == 144 and DailyValuation.objects.count() == 144
    assert books_verify() == []
    cd = dt.date(2026, 11, 30)
    # the liability report on the conversion date equals accounts.csv's control totals, plan by plan
    control: dict[str, Decimal] = {}
    for line in (PACKAGE / "control.csv").read_text().splitlines()[1:]:
        file, measure, plan, account, *_rest, total = line.split(",")
        if file == "accounts.csv" and measure == "value":
            control[plan] = control.get(plan, Decimal(0)) + Decimal(total)
    for code, total in control.items():
        report = plan_liability(plan=Plan.objects.get(code=code), as_of=cd)
        assert sum(line.value for line in report.accounts) == total
    assert KeyEmployeeList.objects.filter(identification_year__range=(2014, 2025)).count() == 12
    assert Fund.objects.filter(plan__code="EDCP", is_default=True).get().code == "SV"
    event = AuditEvent.objects.get(action="conversion.apply")
    assert event.data["package_id"] == "HRS-20261130-S7-N25"
    assert len(event.data["files"]) == 20 and all(len(h) == 64 for h in event.data["files"].values())


@pytest.mark.django_db
def test_a_rerun_of_an_applied_package_is_already_applied_and_changes_nothing():
    _convert_json()
    counts = (Person.objects.count(), LedgerEntry.objects.count(), FundPrice.objects.count())
    again = _convert_json()
    assert again["status"] == "already_applied" and again["exceptions"] == []
    assert _compared(again) == _compared(EXPECTED)
    assert _convert_json("--dry-run")["status"] == "already_applied"
    assert (Person.objects.count(), LedgerEntry.objects.count(), FundPrice.objects.count()) == counts


@pytest.mark.django_db
def test_a_failure_while_writing_leaves_nothing(monkeypatch):
    real = conversion_apply._apply_accounts

    def accounts_then_fail(**kwargs):
        real(**kwargs)
        raise conversion_apply.ApplyFailure("accounts.csv", 2, "injected failure while writing")

    monkeypatch.setattr(conversion_apply, "_apply_accounts", accounts_then_fail)
    outcome = conversion_run(folder=PACKAGE, dry_run=False, actor="conversion", now=NOW)
    assert outcome.status == "refused"
    assert [(f.file, f.line, f.code) for f in outcome.result.findings] == [
        ("accounts.csv", 2, "conflicts_with_records")
    ]
    assert not Person.objects.exists() and not Participation.objects.exists()
    assert not Fund.objects.exists() and not FundPrice.objects.exists()
    assert not AuditEvent.objects.filter(action="conversion.apply").exists()
    assert ConversionException.objects.get().code == "conflicts_with_records"


@pytest.mark.django_db
def test_a_person_on_file_with_another_identity_conflicts_with_records():
    Person.objects.create(
        employee_number="0630072",
        first_name="Other",
        last_name="Person",
        birth_date=dt.date(1980, 1, 1),
        hire_date=dt.date(2005, 7, 14),
    )
    outcome = conversion_run(folder=PACKAGE, dry_run=True, actor="conversion", now=NOW)
    assert [(f.file, f.line, f.code) for f in outcome.result.findings] == [
        ("participants.csv", 2, "conflicts_with_records")
    ]
    assert "0630072" in outcome.result.findings[0].message


@pytest.mark.django_db
def test_converted_participants_are_credited_on_the_next_valuation_date():
    from books.services.crediting import credit_valuation_date  # noqa: PLC0415 - only this test credits

    _convert_json()
    next_day = dt.date(2026, 12, 1)
    for fund in Fund.objects.all():
        last = FundPrice.objects.get(fund=fund, date=dt.date(2026, 11, 30)).price
        FundPrice.objects.create(
            fund=fund,
            date=next_day,
            price=(last * Decimal("1.01")).quantize(Decimal("0.000001")),
            loaded_at=timezone.now(),
        )
    run = credit_valuation_date(valuation_date=next_day)
    assert run.status == "done", run.message
    assert DailyValuation.objects.filter(valuation_date=next_day).count() == 144
    earned = sum(v.earnings for v in DailyValuation.objects.filter(valuation_date=next_day))
    assert earned > 0
    assert books_verify() == []


@pytest.mark.django_db
def test_converted_elections_and_beneficiaries_govern_what_comes_next():
    from elections.selectors import deferral_line_in_force, investment_in_force  # noqa: PLC0415 - only here
    from participants.models import BeneficiaryDesignation  # noqa: PLC0415 - only here

    _convert_json()
    edcp = Participation.objects.get(person__employee_number="0630072", plan__code="EDCP")
    # the next pay (December 2026) is deferred at the converted 2026 election; January's at the 2027 one
    line = deferral_line_in_force(
        participation=edcp, component="base_salary", plan_year=2026, pay_date=dt.date(2026, 12, 15)
    )
    assert line is not None and line.percent == 20 and line.election.plan_year == 2026
    assert line.election.channel == "import" and line.election.status == "accepted"
    nxt = deferral_line_in_force(
        participation=edcp, component="base_salary", plan_year=2027, pay_date=dt.date(2027, 1, 15)
    )
    assert nxt is not None and nxt.election.plan_year == 2027
    invest = investment_in_force(participation=edcp, as_of=dt.date(2026, 12, 1))
    assert not invest.is_default
    assert sorted((fund.code, pct) for fund, pct in invest.lines) == [("REIT", 15), ("SMCAP", 70), ("SV", 15)]
    designation = BeneficiaryDesignation.objects.get(person=edcp.person, plan=edcp.plan)
    assert designation.received_at.date() == dt.date(2025, 10, 20)
    assert sorted((b.tier, b.name, b.percent) for b in designation.beneficiaries.all()) == [
        ("contingent", "Nicholas Watson", 100),
        ("primary", "George Watson", 100),
    ]


@pytest.mark.django_db
def test_exit_status_two_for_a_folder_that_is_not_there_and_one_for_exceptions(tmp_path, capsys):
    with pytest.raises(SystemExit) as missing:
        call_command("convert", str(tmp_path / "nowhere"), "--dry-run", "--json")
    assert missing.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "not a readable folder" in captured.err
    out = io.StringIO()
    with pytest.raises(SystemExit) as refused:
        call_command("convert", str(tmp_path), "--dry-run", stdout=out)  # an empty folder: every file missing
    assert refused.value.code == 1
    text = out.getvalue()
    assert "status: refused" in text and "package.csv:0 file_missing" in text
    assert ConversionException.objects.filter(code="file_missing").count() == 20


@pytest.mark.django_db
def test_brp_figures_and_elected_forms_are_recorded():
    from books.models import DefinedBenefitRecord  # noqa: PLC0415 - only here
    from elections.models import AnnuityElection  # noqa: PLC0415 - only here

    _convert_json()
    assert DefinedBenefitRecord.objects.count() == 13
    figures = DefinedBenefitRecord.objects.filter(participation__person__employee_number="5434012")
    assert sorted(f.early_adjustment_factor for f in figures) == [Decimal("0.786667"), Decimal("1.000000")]
    election = AnnuityElection.objects.get(participation__person__employee_number="3746328")
    assert election.form == "period_certain_60" and election.status == "accepted"
