from __future__ import annotations

import datetime as dt

import pytest

from core import valuation_calendar as cal
from core.models import MarketClosure

pytestmark = pytest.mark.django_db


def test_valuation_dates_are_nyse_sessions_including_special_closures():
    assert not cal.is_valuation_date(dt.date(2025, 1, 9))  # day of mourning, President Carter
    assert not cal.is_valuation_date(dt.date(2012, 10, 29))  # Hurricane Sandy
    assert cal.is_valuation_date(dt.date(2021, 12, 31))  # open: year-end exception to the Saturday rule
    assert not cal.is_valuation_date(dt.date(2026, 6, 19))  # Juneteenth


def test_the_2026_closures_match_the_fact_sheet():
    closed = [
        d
        for d in (dt.date(2026, 1, 1) + dt.timedelta(n) for n in range(365))
        if d.weekday() < 5 and not cal.is_valuation_date(d)
    ]
    assert [d.isoformat() for d in closed] == [
        "2026-01-01",
        "2026-01-19",
        "2026-02-16",
        "2026-04-03",
        "2026-05-25",
        "2026-06-19",
        "2026-07-03",
        "2026-09-07",
        "2026-11-26",
        "2026-12-25",
    ]


def test_a_staff_closure_overrides_the_exchange_calendar():
    day = dt.date(2026, 3, 10)
    assert cal.is_valuation_date(day)
    MarketClosure.objects.create(date=day, reason="ad hoc closure")
    cal.forget_closures()
    try:
        assert not cal.is_valuation_date(day)
        assert cal.next_valuation_date(day) == dt.date(2026, 3, 11)
    finally:
        cal.forget_closures()


def test_next_and_previous_valuation_dates_skip_weekends_and_holidays():
    assert cal.next_valuation_date(dt.date(2026, 4, 3)) == dt.date(2026, 4, 6)
    assert cal.previous_valuation_date(dt.date(2026, 4, 6)) == dt.date(2026, 4, 2)
