"""Middleware of the plans app: one read of each plan's versions per read-only request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from plans.models import versions_shared

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class SharedPlanVersionsMiddleware:
    """A GET, HEAD or OPTIONS request reads each plan's versions and provisions once, however many rows reach
    the plan (plans.models.versions_shared). Requests that may write (POST and the rest) read them as before,
    so a request that changes a plan's versions never sees what it read before the change."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in SAFE_METHODS:
            return self.get_response(request)
        with versions_shared():
            return self.get_response(request)
