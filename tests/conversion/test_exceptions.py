"""Every exception code of FORMAT.md section 4, planted in a copy of the clean sample and found exactly, at its line.

Each plant keeps the control file balanced (or adjusts it as the prior recordkeeper would), so the
planted exception is the only one. conflicts_with_records is planted against the database in
test_convert.py (a person on file, a failure while writing).
"""

from __future__ import annotations

import csv
import datetime as dt
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from conversion.models import ConversionException, ConversionRun
from conversion.services import conversion_run
from conversion.validate import check_package

PACKAGE = Path(__file__).parent / "sample" / "package"
NOW = dt.datetime(2026, 12, 1, 17, 0, tzinfo=dt.UTC)


def _read(folder: Path, name: str) -> list[list[str]]:
    with (folder / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _write(folder: Path, name: str, rows: list[list[str]]) -> None:
    with (folder / name).open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


def cell(name: str, line: int, column: str, value: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        rows = _read(folder, name)
        rows[line - 1][rows[0].index(column)] = value
        _write(folder, name, rows)

    return edit


def control(line: int, delta: str) -> Callable[[Path], None]:
    """Move a control total, as a balancing report that agrees with the edited file would."""

    def edit(folder: Path) -> None:
        rows = _read(folder, "control.csv")
        total = Decimal(rows[line - 1][-1]) + Decimal(delta)
        rows[line - 1][-1] = f"{total:f}"
        _write(folder, "control.csv", rows)

    return edit


def rows_control(name: str, delta: int) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        rows = _read(folder, "control.csv")
        for row in rows:
            if row[0] == name and row[1] == "rows":
                row[-1] = str(int(row[-1]) + delta)
        _write(folder, "control.csv", rows)

    return edit


def drop_line(name: str, line: int) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        rows = _read(folder, name)
        del rows[line - 1]
        _write(folder, name, rows)

    return edit


def append(name: str, text: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        with (folder / name).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")

    return edit


def raw_replace(name: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / name
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return edit


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


PLANTS: dict[str, tuple[list[Callable[[Path], None]], tuple[str, int, str]]] = {
    "file_missing": ([remove("investment_elections.csv")], ("investment_elections.csv", 0, "file_missing")),
    "header_invalid": (
        [raw_replace("investment_elections.csv", "percent,", "pct,")],
        ("investment_elections.csv", 1, "header_invalid"),
    ),
    "row_malformed": (
        [raw_replace("fund_prices.csv", "EDCP,SV,2025-01-03,11.207207", "EDCP,SV,2025-01-03,11.207207,x")],
        ("fund_prices.csv", 3, "row_malformed"),
    ),
    "value_invalid": (
        [cell("participants.csv", 2, "state", "Virginia")],
        ("participants.csv", 2, "value_invalid"),
    ),
    "date_invalid": (
        [cell("participants.csv", 2, "birth_date", "1982-02-30")],
        ("participants.csv", 2, "date_invalid"),
    ),
    "duplicate_row": (
        [append("fund_prices.csv", "EDCP,SV,2025-01-02,11.205863"), rows_control("fund_prices.csv", 1)],
        ("fund_prices.csv", 6708, "duplicate_row"),
    ),
    "unknown_plan": ([cell("fund_prices.csv", 2, "plan", "ZZZ")], ("fund_prices.csv", 2, "unknown_plan")),
    "missing_participant": (
        [cell("pension_figures.csv", 5, "employee_number", "9999999")],
        ("pension_figures.csv", 5, "missing_participant"),
    ),
    "not_in_plan": (
        [
            append("beneficiaries.csv", "0630072,RRP,primary,100,George Watson,spouse,1976-09-14,2025-10-20"),
            rows_control("beneficiaries.csv", 1),
        ],
        ("beneficiaries.csv", 84, "not_in_plan"),
    ),
    "participation_invalid": (
        [cell("participations.csv", 2, "entry_date", "2004-01-01")],
        ("participations.csv", 2, "participation_invalid"),
    ),
    "unknown_account": (
        [cell("distribution_elections.csv", 4, "account", "specified_date:2031-9x")],
        ("distribution_elections.csv", 4, "unknown_account"),
    ),
    "unknown_fund": (
        [cell("investment_elections.csv", 2, "fund", "NOPE")],
        ("investment_elections.csv", 2, "unknown_fund"),
    ),
    "price_missing": (
        [drop_line("fund_prices.csv", 480), rows_control("fund_prices.csv", -1)],
        ("funds.csv", 2, "price_missing"),
    ),
    "price_mismatch": (
        [cell("positions.csv", 2, "price", "11.867383")],
        ("positions.csv", 2, "price_mismatch"),
    ),
    "units_price_value_mismatch": (
        [cell("positions.csv", 2, "units", "34165.253498"), control(47, "1")],
        ("positions.csv", 2, "units_price_value_mismatch"),
    ),
    "account_total_mismatch": (
        [cell("accounts.csv", 3, "vested_value", "201035.47"), control(107, "-0.01")],
        ("accounts.csv", 3, "account_total_mismatch"),
    ),
    "vesting_mismatch": (
        [cell("participants.csv", 2, "vesting_service_years", "1")],
        ("accounts.csv", 3, "vesting_mismatch"),
    ),
    "contribution_invalid_for_plan": (
        [cell("compensation.csv", 2, "rsp_elective_deferrals", "99000.00")],
        ("compensation.csv", 2, "contribution_invalid_for_plan"),
    ),
    "election_invalid_for_plan": (
        [cell("deferral_elections.csv", 2, "percent", "80")],
        ("deferral_elections.csv", 2, "election_invalid_for_plan"),
    ),
    "beneficiary_percent_not_100": (
        [cell("beneficiaries.csv", 4, "percent", "35")],
        ("beneficiaries.csv", 4, "beneficiary_percent_not_100"),
    ),
    "schedule_inconsistent": (
        [cell("payment_schedules.csv", 2, "payee", "beneficiaries")],
        ("payment_schedules.csv", 2, "schedule_inconsistent"),
    ),
    "schedule_inconsistent_with_balance": (
        [drop_line("payment_schedules.csv", 2), rows_control("payment_schedules.csv", -1)],
        ("accounts.csv", 16, "schedule_inconsistent_with_balance"),
    ),
    "brp_figures_incomplete": (
        [cell("pension_figures.csv", 2, "unlimited_annual_benefit", "")],
        ("pension_figures.csv", 2, "brp_figures_incomplete"),
    ),
    "brp_benefit_inconsistent": (
        [cell("db_benefits.csv", 2, "payments_made", "1")],
        ("db_benefits.csv", 2, "brp_benefit_inconsistent"),
    ),
    "control_count_mismatch": ([control(3, "1")], ("control.csv", 3, "control_count_mismatch")),
    "control_total_mismatch": ([control(105, "0.01")], ("control.csv", 105, "control_total_mismatch")),
}


def test_every_code_of_the_format_has_a_plant():
    codes = {
        "file_missing",
        "header_invalid",
        "row_malformed",
        "value_invalid",
        "date_invalid",
        "duplicate_row",
        "unknown_plan",
        "missing_participant",
        "not_in_plan",
        "participation_invalid",
        "unknown_account",
        "unknown_fund",
        "price_missing",
        "price_mismatch",
        "units_price_value_mismatch",
        "account_total_mismatch",
        "vesting_mismatch",
        "contribution_invalid_for_plan",
        "election_invalid_for_plan",
        "beneficiary_percent_not_100",
        "schedule_inconsistent",
        "schedule_inconsistent_with_balance",
        "brp_figures_incomplete",
        "brp_benefit_inconsistent",
        "control_count_mismatch",
        "control_total_mismatch",
        "conflicts_with_records",
    }
    # conflicts_with_records is planted against the database: tests/conversion/test_convert.py
    assert codes - {"conflicts_with_records"} == set(PLANTS)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    folder = tmp_path / "package"
    shutil.copytree(PACKAGE, folder)
    return folder


@pytest.mark.django_db
@pytest.mark.parametrize("code", sorted(PLANTS))
def test_a_planted_exception_is_found_exactly_at_its_line(code, package):
    edits, expected = PLANTS[code]
    for edit in edits:
        edit(package)
    result = check_package(folder=package)
    assert [(f.file, f.line, f.code) for f in result.findings] == [expected], [
        (f.file, f.line, f.code, f.message) for f in result.findings
    ]
    assert result.findings[0].message


@pytest.mark.django_db
def test_a_refused_package_applies_nothing_and_keeps_its_exceptions_page_by_page(package):
    rows = _read(package, "fund_prices.csv")
    for row in rows[1:2001]:
        row[3] = "0"  # two thousand prices not more than zero
    _write(package, "fund_prices.csv", rows)
    outcome = conversion_run(folder=package, dry_run=False, actor="conversion", now=NOW)
    assert outcome.status == "refused"
    run = ConversionRun.objects.get()
    assert run.exception_count == ConversionException.objects.filter(run=run).count() >= 2000
    page = list(ConversionException.objects.filter(run=run).order_by("file", "line", "code")[100:200])
    assert len(page) == 100
    from participants.models import Person  # noqa: PLC0415 - only this test looks at people

    assert not Person.objects.exists()


@pytest.mark.django_db
def test_a_participation_in_a_plan_the_catalog_lacks_is_reported_not_a_crash(package):
    """participations.csv naming a plan of neither plans.csv nor the catalog is `unknown_plan` on its line; the checks
    that ask the plan's provisions (compensation.csv's Plan Compensation, RRP 1.21) pass over it instead of failing."""
    cell("participations.csv", 2, "plan", "ZZZ")(package)
    result = check_package(folder=package)
    assert ("participations.csv", 2, "unknown_plan") in [(f.file, f.line, f.code) for f in result.findings]
