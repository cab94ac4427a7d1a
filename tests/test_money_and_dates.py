from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from core.dates import add_months, day_of_month_after, first_day_of_month_after_anniversary
from core.money import installment, money, split_by_percent


def test_money_rounds_half_up_to_the_cent():
    assert money(Decimal("2.345")) == Decimal("2.35")
    assert money(Decimal("-2.345")) == Decimal("-2.35")
    assert money(Decimal("833.335")) == Decimal("833.34")


@given(
    amount=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("10000000"), places=2),
    cut=st.integers(min_value=1, max_value=99),
)
def test_a_split_always_adds_back_to_the_amount(amount, cut):
    parts = split_by_percent(amount, [("a", cut), ("b", 100 - cut)])
    assert sum(p for _, p in parts) == amount


@given(
    balance=st.decimals(min_value=Decimal("0.00"), max_value=Decimal("10000000"), places=2),
    n=st.integers(min_value=1, max_value=10),
)
def test_installments_pay_the_balance_exactly_with_the_remainder_last(balance, n):
    paid, left = [], balance
    for k in range(n, 0, -1):
        amount = installment(left, k)
        paid.append(amount)
        left -= amount
    assert sum(paid) == balance and left == 0


def test_installments_of_2500_in_three_are_833_33_833_34_833_33():
    left, paid = Decimal("2500.00"), []
    for k in (3, 2, 1):
        paid.append(installment(left, k))
        left -= paid[-1]
    assert paid == [Decimal("833.33"), Decimal("833.34"), Decimal("833.33")]


def test_add_months_clips_to_the_end_of_a_short_month():
    assert add_months(dt.date(2024, 1, 31), 1) == dt.date(2024, 2, 29)
    assert add_months(dt.date(2024, 2, 29), 12) == dt.date(2025, 2, 28)


def test_key_employee_edcp_date_is_first_day_of_seventh_month_after_the_month_of_separation():
    assert day_of_month_after(dt.date(2026, 4, 10), 1, 7) == dt.date(2026, 11, 1)


def test_rrp_key_employee_date_is_first_of_month_after_six_month_anniversary():
    assert first_day_of_month_after_anniversary(dt.date(2026, 8, 19), 6) == dt.date(2027, 3, 1)
    assert first_day_of_month_after_anniversary(dt.date(2027, 9, 2), 6) == dt.date(2028, 4, 1)
