"""Issue 12, finding 5: every CSV export escapes cells a spreadsheet would read as formulas (one helper)."""

from __future__ import annotations

import io
import re
from decimal import Decimal
from pathlib import Path

import pytest

from core.csv_export import CsvDictWriter, CsvWriter, csv_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_text_cell_beginning_like_a_formula_is_prefixed_with_a_quote(start):
    assert csv_cell(f"{start}SUM(A1:A9)") == f"'{start}SUM(A1:A9)"


def test_ordinary_text_and_numbers_are_written_as_they_are():
    assert [csv_cell(v) for v in ("Ann Heir", "a=b", Decimal("-12.50"), -3, None)] == [
        "Ann Heir",
        "a=b",
        Decimal("-12.50"),
        -3,
        None,
    ]


def test_both_writers_escape_every_cell():
    out = io.StringIO()
    CsvWriter(out).writerow(["=1+1", "@cmd", "ok"])
    dict_out = io.StringIO()
    writer = CsvDictWriter(dict_out, fieldnames=["name"])
    writer.writeheader()
    writer.writerow({"name": "+1"})
    assert out.getvalue() == "'=1+1,'@cmd,ok\n"
    assert dict_out.getvalue().splitlines() == ["name", "'+1"]


def test_no_export_writes_csv_without_the_helper():
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.glob("*/**/*.py")
        if ".venv" not in path.parts
        and "tests" not in path.parts
        and "bench"
        not in path.parts  # a benchmark writes its input files (a conversion package), not exports
        and path.name != "csv_export.py"
        and re.search(r"csv\.(writer|DictWriter)\(", path.read_text())
    ]
    assert offenders == []
