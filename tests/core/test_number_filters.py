"""Issue 11: one filter per kind of number, so every portal page writes them the same way."""

from __future__ import annotations

from decimal import Decimal

from core.templatetags.numbers import dollars, money, price, units


def test_money_has_thousands_separators_and_cents_rounded_half_up():
    assert money(Decimal("143340.925")) == "143,340.93"
    assert money("1000000") == "1,000,000.00"
    assert dollars(Decimal("10837.5")) == "$10,837.50"
    assert dollars(Decimal("-5")) == "-$5.00"


def test_units_keep_four_decimals_and_prices_two():
    assert units(Decimal("1234.567891")) == "1,234.5679"
    assert price(Decimal("12.345678")) == "12.35"


def test_nothing_to_format_stays_empty():
    assert money(None) == "" and dollars("") == "" and units("n/a") == "n/a"
