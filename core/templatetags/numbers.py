"""Numbers as participants read them (issue 11): money with thousands separators and cents, fund units to
4 decimals, prices to 2. One filter per kind of number, so every page formats them the same way."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template

register = template.Library()


def _decimal(value: object) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def _fixed(value: object, places: int) -> str:
    number = _decimal(value)
    if number is None:
        return "" if value is None else str(value)
    quantum = Decimal(1).scaleb(-places)
    return f"{number.quantize(quantum, rounding=ROUND_HALF_UP):,.{places}f}"


@register.filter
def money(value: object) -> str:
    """12345.6 -> "12,345.60" (cents, ROUND_HALF_UP, as core.money)."""
    return _fixed(value, 2)


@register.filter
def dollars(value: object) -> str:
    """12345.6 -> "$12,345.60"; a negative amount keeps its sign before the dollar sign."""
    text = _fixed(value, 2)
    if not text or _decimal(value) is None:
        return text
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


@register.filter
def units(value: object) -> str:
    """Notional fund units in the portal: 4 decimals (staff pages keep full precision)."""
    return _fixed(value, 4)


@register.filter
def price(value: object) -> str:
    """Fund prices in the portal: 2 decimals."""
    return _fixed(value, 2)
