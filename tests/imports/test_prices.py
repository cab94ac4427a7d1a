"""Fund price files: one price per fund and Valuation Date; a loaded price is never changed."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from core.models import ImportBatch
from plans.models import FundPrice
from tests.factories import FundFactory, price
from tests.imports.conftest import reasons, run

pytestmark = pytest.mark.django_db
PRICES = ImportBatch.Kind.PRICES


def test_a_price_file_loads_every_price(funds):
    batch = run(
        PRICES, "fund,date,price", "SV,2024-05-30,10.000000", "EQ,2024-05-30,21.5", "SV,2024-05-31,10.01"
    )
    assert batch.status == ImportBatch.Status.APPLIED
    assert (batch.rows_applied, batch.rows_skipped) == (3, 0)
    assert FundPrice.objects.get(fund=funds["EQ"], date=dt.date(2024, 5, 30)).price == Decimal("21.5")
    assert FundPrice.objects.filter(source__startswith=f"import #{batch.pk}").count() == 3


def test_every_bad_price_row_is_listed_and_nothing_is_loaded(funds):
    batch = run(
        PRICES,
        "fund,date,price",
        "SV,2024-05-30,10.00",  # 2 good
        "XX,2024-05-30,10.00",  # 3 unknown fund
        "SV,30/05/2024,10.00",  # 4 bad date
        "EQ,2024-05-30,0",  # 5 zero
        "EQ,2024-05-31,-1.5",  # 6 negative
        "EQ,2024-06-03,abc",  # 7 non-numeric
        "EQ,2024-06-01,10.00",  # 8 a Saturday
        "SV,2024-05-30,10.00",  # 9 repeats line 2
        "EQ,2024-06-04,1.0000001",
    )  # 10 seven decimals
    assert batch.status == ImportBatch.Status.REFUSED
    found = reasons(batch)
    assert sorted(found) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert found[3] == ["Line 3: there is no fund 'XX'"]
    assert "date '30/05/2024' is not a date: write dates as YYYY-MM-DD" in found[4][0]
    assert found[5] == ["Line 5: price must be more than zero, not 0"]
    assert found[6] == ["Line 6: price must be more than zero, not -1.5"]
    assert "price 'abc' is not a number" in found[7][0]
    assert "2024-06-01 is not a Valuation Date" in found[8][0]
    assert "repeats the price of SV on 2024-05-30 already given on line 2" in found[9][0]
    assert "more than 6 decimal places" in found[10][0]
    assert FundPrice.objects.count() == 0


def test_a_price_that_conflicts_with_one_already_loaded_is_refused(funds):
    price(funds["SV"], dt.date(2024, 5, 30), "10.00")
    batch = run(PRICES, "fund,date,price", "SV,2024-05-30,10.50", "SV,2024-05-31,10.60")
    assert batch.status == ImportBatch.Status.REFUSED
    assert reasons(batch) == {
        2: [
            "Line 2: EDCP fund SV already has a price of 10 on 2024-05-30; this file says "
            "10.5. A loaded price is never changed."
        ]
    }
    assert FundPrice.objects.count() == 1


def test_a_price_identical_to_one_already_loaded_is_skipped(funds):
    price(funds["SV"], dt.date(2024, 5, 30), "10.00")
    batch = run(PRICES, "fund,date,price", "SV,2024-05-30,10.000000", "SV,2024-05-31,10.60")
    assert batch.status == ImportBatch.Status.APPLIED
    assert (batch.rows_applied, batch.rows_skipped) == (1, 1)
    assert FundPrice.objects.count() == 2


def test_reimporting_the_same_price_file_applies_it_once(funds):
    lines = ("fund,date,price", "SV,2024-05-30,10.00", "EQ,2024-05-30,20.00")
    assert run(PRICES, *lines).status == ImportBatch.Status.APPLIED
    again = run(PRICES, *lines, name="renamed.csv")
    assert again.status == ImportBatch.Status.DUPLICATE
    assert FundPrice.objects.count() == 2


def test_a_fund_code_on_two_menus_needs_the_plan_column(funds, rrp):
    FundFactory(plan=rrp, code="SV", name="RRP SV")
    ambiguous = run(PRICES, "fund,date,price", "SV,2024-05-30,10.00")
    assert (
        "fund 'SV' is on more than one plan's menu (EDCP, RRP): add a plan column"
        in ambiguous.errors[0]["message"]
    )
    batch = run(PRICES, "plan,fund,date,price", "RRP,SV,2024-05-30,10.00", "EDCP,SV,2024-05-30,11.00")
    assert batch.status == ImportBatch.Status.APPLIED
    assert FundPrice.objects.get(fund__plan=rrp).price == Decimal("10")


def test_a_refused_file_can_be_corrected_and_uploaded_again(funds):
    assert run(PRICES, "fund,date,price", "SV,2024-05-30,-1").status == ImportBatch.Status.REFUSED
    assert run(PRICES, "fund,date,price", "SV,2024-05-30,-1").status == ImportBatch.Status.REFUSED
    assert run(PRICES, "fund,date,price", "SV,2024-05-30,1").status == ImportBatch.Status.APPLIED


def test_an_empty_file_and_a_header_only_file_are_refused(funds):
    assert run(PRICES, "").errors[0]["message"].startswith("Line 1: the file is empty")
    assert run(PRICES, "fund,date,price").errors[0]["message"] == "Line 2: the file has a header but no rows"
