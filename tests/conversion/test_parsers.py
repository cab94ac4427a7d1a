"""The per-column parsers the checks make once per file read every field as parse_value does (FORMAT.md 1, "Values").

They are a speed-up only (issue 14): the same value, or the same exception with the same message, for every text,
the first time a text is seen and when it is seen again (the kinds whose values repeat are looked up, not re-read).
"""

from __future__ import annotations

import functools
import gc
from pathlib import Path
from typing import Any

import pytest

from conversion import spec
from conversion.validate import _Unreadable, check_package, column_parser, parse_value

TEXTS = [
    "",
    " ",
    "\t",
    "x",
    " x ",
    "EDCP",
    " EDCP",
    "deferral",
    "deferral ",
    "lump_sum",
    "0",
    "7",
    " 7",
    "7\n",
    "007",
    "-1",
    "+1",
    "1e5",
    "1_000",
    "100",
    "101",
    "1.5",
    "1.23",
    "1.234",
    "12.3456789",
    " 12.50 ",
    "12.50\n",
    "99999999999999999999.99",
    "\u0661\u0662",  # Arabic-Indic digits: \d admits them, so does Decimal
    "\u0661\u0662.\u0663",
    "2024",
    " 2024",
    "24",
    "2020;2021",
    "2020; 2021",
    "2020;x",
    "2024-06",
    "2024-13",
    "2024-06-30",
    " 2024-06-30",
    "2024-02-30",
    "2024-6-30",
    "2024-06-30T00:00",
    "specified_date:2030-06",
    "C00001E001",
    "y" * 25,
    "z" * 101,
    "w" * 250,
    "\u00e9t\u00e9",
]


def _outcome(read: Any, text: str) -> tuple[str, Any, str]:
    try:
        value = read(text)
    except _Unreadable as exc:
        return ("unreadable", exc.code, exc.message)
    return ("value", type(value), repr(value))


@pytest.mark.parametrize("fspec", spec.FILES, ids=lambda f: f.name)
def test_every_column_parser_reads_as_parse_value(fspec: spec.FileSpec) -> None:
    for col in fspec.columns:
        parse = column_parser(col)
        for text in TEXTS:
            expected = _outcome(functools.partial(parse_value, col), text)
            assert _outcome(parse, text) == expected, (fspec.name, col.name, text)
            assert _outcome(parse, text) == expected, (fspec.name, col.name, text, "seen again")


@pytest.mark.django_db
def test_the_garbage_collector_is_resumed_as_it_was(tmp_path: Path) -> None:
    assert gc.isenabled()
    check_package(folder=tmp_path)  # an empty folder: every file missing
    assert gc.isenabled()
    gc.disable()
    try:
        check_package(folder=tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()
