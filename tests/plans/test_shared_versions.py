"""A read-only request reads each plan's versions and provisions once however many rows reach the plan
(plans.models.versions_shared, opened by plans.middleware.SharedPlanVersionsMiddleware for GET/HEAD/OPTIONS)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from plans.middleware import SharedPlanVersionsMiddleware
from plans.models import Plan, versions_shared

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 6, 30)


def _read_twice(code: str) -> int:
    """Two instances of one plan (as two payments' accounts reach it) each read the version in force and one of
    its provisions; the number of queries."""
    with CaptureQueriesContext(connection) as queries:
        for plan in (Plan.objects.get(code=code), Plan.objects.get(code=code)):
            plan.version_on(DAY).provision("accounts")
    return len(queries) - 2  # not the two reads of the plan itself


def test_without_sharing_each_instance_reads_the_versions_and_provisions(edcp):
    assert _read_twice(edcp.code) == 4


def test_within_versions_shared_the_second_instance_reads_nothing(edcp):
    with versions_shared():
        assert _read_twice(edcp.code) == 2
    assert _read_twice(edcp.code) == 4  # closed: nothing is kept past the block


@pytest.mark.parametrize(("method", "expected"), [("get", 2), ("head", 2), ("post", 4)])
def test_the_middleware_shares_for_reads_only(edcp, method, expected):
    """A POST may change a plan's versions (the plan set-up pages), so it never reads what it read before."""
    seen: list[int] = []

    def view(request):
        seen.append(_read_twice(edcp.code))
        return HttpResponse("ok")

    SharedPlanVersionsMiddleware(view)(getattr(RequestFactory(), method)("/"))
    assert seen == [expected]
