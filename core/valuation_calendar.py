"""Valuation Dates: every day the New York Stock Exchange is open (EDCP 1.37, RRP 1.32).

Sessions come from exchange_calendars (XNYS, a maintained calendar); staff add ad hoc closures
(core.MarketClosure), which win over the calendar.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import threading
import time

import exchange_calendars as xcals
from django.conf import settings

from core.models import MarketClosure

_lock = threading.Lock()
_closures: frozenset[dt.date] | None = None
_closures_loaded_at = 0.0
CLOSURE_CACHE_SECONDS = 60.0


@functools.lru_cache(maxsize=1)
def _exchange_sessions() -> tuple[dt.date, ...]:
    calendar = xcals.get_calendar(
        "XNYS",
        start=f"{settings.CALENDAR_FIRST_YEAR}-01-01",
        end=f"{settings.CALENDAR_LAST_YEAR}-12-31",
    )
    return tuple(ts.date() for ts in calendar.sessions)


def sessions_warm() -> None:
    """Build the exchange's sessions now (about 0.4 s of pandas holiday rules), not in a process's first request:
    config.wsgi calls it as a web worker starts."""
    _exchange_sessions()


def _closure_dates() -> frozenset[dt.date]:
    global _closures, _closures_loaded_at
    with _lock:
        if _closures is None or time.monotonic() - _closures_loaded_at > CLOSURE_CACHE_SECONDS:
            _closures = frozenset(MarketClosure.objects.values_list("date", flat=True))
            _closures_loaded_at = time.monotonic()
        return _closures


def forget_closures() -> None:
    """Called when staff change the closure list."""
    global _closures
    with _lock:
        _closures = None


def _check_range(day: dt.date) -> None:
    if not (settings.CALENDAR_FIRST_YEAR <= day.year <= settings.CALENDAR_LAST_YEAR):
        raise ValueError(
            f"{day} is outside the valuation calendar ({settings.CALENDAR_FIRST_YEAR}-{settings.CALENDAR_LAST_YEAR})"
        )


def is_valuation_date(day: dt.date) -> bool:
    _check_range(day)
    sessions = _exchange_sessions()
    i = bisect.bisect_left(sessions, day)
    return i < len(sessions) and sessions[i] == day and day not in _closure_dates()


def valuation_dates_between(start: dt.date, end: dt.date) -> list[dt.date]:
    """Valuation Dates in [start, end]."""
    sessions = _exchange_sessions()
    closures = _closure_dates()
    lo = bisect.bisect_left(sessions, start)
    hi = bisect.bisect_right(sessions, end)
    return [d for d in sessions[lo:hi] if d not in closures]


def next_valuation_date(day: dt.date) -> dt.date:
    """The first Valuation Date on or after `day`."""
    _check_range(day)
    sessions = _exchange_sessions()
    closures = _closure_dates()
    i = bisect.bisect_left(sessions, day)
    while i < len(sessions):
        if sessions[i] not in closures:
            return sessions[i]
        i += 1
    raise ValueError(f"no Valuation Date on or after {day} in the calendar")


def next_valuation_date_after(day: dt.date) -> dt.date:
    """The first Valuation Date strictly after `day`."""
    return next_valuation_date(day + dt.timedelta(days=1))


def last_valuation_date(day: dt.date) -> dt.date:
    """The last Valuation Date on or before `day`."""
    _check_range(day)
    sessions = _exchange_sessions()
    closures = _closure_dates()
    i = bisect.bisect_right(sessions, day) - 1
    while i >= 0:
        if sessions[i] not in closures:
            return sessions[i]
        i -= 1
    raise ValueError(f"no Valuation Date on or before {day} in the calendar")


def previous_valuation_date(day: dt.date) -> dt.date:
    """The last Valuation Date strictly before `day`."""
    return last_valuation_date(day - dt.timedelta(days=1))
