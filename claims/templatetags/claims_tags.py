"""Days left before a claims deadline, and the colour the staff queue gives it."""

from __future__ import annotations

import datetime as dt

from django import template

from claims.selectors import WARN_DAYS

register = template.Library()


@register.filter
def days_left(deadline, today: dt.date) -> int | None:
    if deadline is None or today is None or deadline.due_on is None:  # no due date while tolled
        return None
    return (deadline.due_on - today).days


@register.filter
def urgency(days: int | None) -> str:
    """A badge class: red when past, amber within WARN_DAYS (the daily job emails the reviewer then too)."""
    if days is None:
        return ""
    if days < 0:
        return "denied"
    if days <= WARN_DAYS:
        return "warning"
    return "pending"
