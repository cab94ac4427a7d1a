"""The one money rule set (STYLE 4): Decimal everywhere, cents rounded half up, named precisions.

Remainders: a split pays the rounding difference on the last part; an installment series pays what
is left on the last installment (EDCP 5.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TypeVar

from core.errors import InvalidInput

CENT = Decimal("0.01")
UNIT_PRECISION = Decimal("0.000001")  # notional fund units
PRICE_PRECISION = Decimal("0.000001")  # fund prices
PERCENT_PRECISION = Decimal("0.0001")
ZERO = Decimal("0.00")
HUNDRED = Decimal("100")


def money(value: Decimal | int | str) -> Decimal:
    """Round to cents, half up."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def units(value: Decimal | int | str) -> Decimal:
    return Decimal(value).quantize(UNIT_PRECISION, rounding=ROUND_HALF_UP)


def price(value: Decimal | int | str) -> Decimal:
    return Decimal(value).quantize(PRICE_PRECISION, rounding=ROUND_HALF_UP)


def parse_decimal(raw: object, *, field: str = "amount") -> Decimal:
    """Parse a decimal string strictly: no floats, no blanks, no thousands separators."""
    if isinstance(raw, float):
        raise InvalidInput(f"{field} must be a decimal string, not a float ({raw!r})")
    if isinstance(raw, Decimal):
        value = raw
    else:
        text = str(raw).strip()
        if not text:
            raise InvalidInput(f"{field} is blank")
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise InvalidInput(f"{field} {text!r} is not a number")
    if not value.is_finite():
        raise InvalidInput(f"{field} {raw!r} is not a finite number")
    return value


def parse_money(raw: object, *, field: str = "amount") -> Decimal:
    value = parse_decimal(raw, field=field)
    if value != money(value):
        raise InvalidInput(f"{field} {raw!r} has more than two decimal places")
    return money(value)


def percent_of(amount: Decimal, percent: Decimal | int) -> Decimal:
    return money(Decimal(amount) * Decimal(percent) / HUNDRED)


Key = TypeVar("Key")


def split_by_percent(
    amount: Decimal, parts: Sequence[tuple[Key, Decimal | int]]
) -> list[tuple[Key, Decimal]]:
    """Split `amount` by whole or decimal percentages summing to 100; the last part takes the remainder."""
    total_percent = sum(Decimal(p) for _, p in parts)
    if total_percent != HUNDRED:
        raise ValueError(f"percentages sum to {total_percent}, not 100")
    out: list[tuple[Key, Decimal]] = []
    allotted = ZERO
    for index, (key, pct) in enumerate(parts):
        if index == len(parts) - 1:
            share = money(amount) - allotted
        else:
            share = percent_of(amount, pct)
            allotted += share
        out.append((key, share))
    return out


def installment(balance: Decimal, installments_left: int) -> Decimal:
    """EDCP 5.8: the balance divided by the installments left; the last one pays what is left."""
    if installments_left < 1:
        raise ValueError("no installments left")
    if installments_left == 1:
        return money(balance)
    return money(Decimal(balance) / Decimal(installments_left))


def total(values: Iterable[Decimal]) -> Decimal:
    return money(sum(values, ZERO))
