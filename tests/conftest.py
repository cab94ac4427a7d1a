from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

EASTERN = zoneinfo.ZoneInfo("America/New_York")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    from plans.services import catalog_load

    with django_db_blocker.unblock():
        catalog_load()


@pytest.fixture(autouse=True)
def _catalog_present(request, django_db_blocker):
    """Transactional tests flush the database; put the shipped catalog back for the next test."""
    yield
    marker = request.node.get_closest_marker("django_db")
    if ("transactional_db" in request.fixturenames or "live_server" in request.fixturenames
            or (marker is not None and marker.kwargs.get("transaction"))):
        from plans.services import catalog_load

        with django_db_blocker.unblock():  # this teardown runs after the test's own database access ended
            catalog_load()


@pytest.fixture
def edcp(db):
    from plans.models import Plan

    return Plan.objects.get(code="EDCP")


@pytest.fixture
def rrp(db):
    from plans.models import Plan

    return Plan.objects.get(code="RRP")


def eastern(y, m, d, hh=12, mm=0, ss=0) -> dt.datetime:
    return dt.datetime(y, m, d, hh, mm, ss, tzinfo=EASTERN)
