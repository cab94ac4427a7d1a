"""Small helpers shared by the apps' API views."""

from __future__ import annotations

import datetime as dt
from typing import overload

from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.dates import date_in_range, out_of_range_message
from core.errors import ApplicationError
from core.inputs import date_or_none


@overload
def date_param(request: Request, name: str, default: dt.date) -> dt.date: ...
@overload
def date_param(request: Request, name: str, default: None = None) -> dt.date | None: ...
def date_param(request: Request, name: str, default: dt.date | None = None) -> dt.date | None:
    """A YYYY-MM-DD query parameter; 400 naming it when malformed."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    day = date_or_none(raw)
    if day is None:
        raise ValidationError({name: f"{raw!r} is not a date in the form YYYY-MM-DD"})
    if not date_in_range(day):
        raise ValidationError({name: out_of_range_message("the date", raw)})
    return day


def exception_handler(exc, context):
    """DRF's handler, and a refusal (ApplicationError) answered 400 with its message (STYLE 12).

    Anything else DRF does not know stays unhandled: Django logs it with its traceback and answers 500.
    """
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
