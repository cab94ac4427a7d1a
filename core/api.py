"""Small helpers shared by the apps' API views."""

from __future__ import annotations

import datetime as dt

from rest_framework.exceptions import ValidationError


def date_param(request, name: str, default: dt.date | None = None) -> dt.date | None:
    """A YYYY-MM-DD query parameter; 400 naming it when malformed."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValidationError({name: f"{raw!r} is not a date in the form YYYY-MM-DD"})
