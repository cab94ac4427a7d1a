"""Money as people read it: thousands separators and two decimals ("143,340.92"), never a float."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template

from core.money import money

register = template.Library()


@register.filter
def usd(value) -> str:
    """`{{ amount|usd }}`: 1234567.891 -> "1,234,567.89" (cents, the one rounding rule of core.money)."""
    if value is None or value == "":
        return ""
    try:
        amount = money(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return str(value)
    return f"{amount:,.2f}"
