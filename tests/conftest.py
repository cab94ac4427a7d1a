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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Transactional tests end with a flush of every table: once their teardown is over, put the shipped
    catalog back for the tests that follow."""
    yield
    if nextitem is None:  # the session ends: its test database is already gone, and no test follows
        return
    marker = item.get_closest_marker("django_db")
    flushed = marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    if flushed or {"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())):
        from pytest_django.plugin import blocking_manager_key

        from core.roles import role_groups_ensure
        from plans.services import catalog_load

        with item.config.stash[blocking_manager_key].unblock():
            catalog_load()
            role_groups_ensure()


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


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The API throttle counts live in the cache: each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield
