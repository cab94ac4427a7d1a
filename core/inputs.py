"""Reading what a person typed into a query string or a form field that is not a Django form.

Views use these instead of catching ValueError themselves: a malformed value is either absent (None,
the page shows its default) or an `InvalidInput` naming the field (a refusal the page shows).
"""

from __future__ import annotations

import datetime as dt

from core.errors import InvalidInput


def int_or_none(text: object) -> int | None:
    """A whole number, or None when the text is blank or not one."""
    try:
        return int(str(text).strip()) if text is not None else None
    except ValueError:
        return None


def parse_int(text: object, *, field: str) -> int:
    """A whole number; InvalidInput naming the field otherwise."""
    value = int_or_none(text)
    if value is None:
        raise InvalidInput(f"{field} {text!r} is not a whole number")
    return value


def date_or_none(text: object) -> dt.date | None:
    """A YYYY-MM-DD date, or None when the text is blank or not one."""
    try:
        return dt.date.fromisoformat(str(text).strip()) if text else None
    except ValueError:
        return None
