"""Issue 12, finding 7: no 500 on bad input. Out-of-range values (dates 0001-01-01 and 9999-12-31, years 0 and
99999999999, amounts 1e400, 300-character names...) sent to every page and endpoint that takes parameters, in
the URL, the query string and a posted form, answer 400 or a form error, never a server error.

The URL patterns are those of tests/test_access.py's walker (every pattern of the urlconf, filled with
participant A's objects); hypothesis picks the values. Bounded: a few examples, no deadline.
"""

from __future__ import annotations

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.roles import Role
from tests.test_access import (
    OBJECT_KWARGS,
    PUBLIC,
    Endpoint,
    Unfillable,
    endpoints,
    fill,
    staff_user,
)
from tests.test_access import population as _population  # noqa: F401 - registers the `population` fixture

pytestmark = pytest.mark.django_db

OUT_OF_RANGE = [
    "0",
    "-1",
    "99999999999",
    "0001-01-01",
    "9999-12-31",
    "1e400",
    "-1e400",
    "NaN",
    "2024-02-30",
    "x" * 300,
    "Ω" * 300,
    "",
]
# Every query parameter a view reads (grep request.GET / query_params) and the usual form fields.
PARAMS = [
    "plan", "q", "kind", "year", "status", "page", "epage", "account", "plan_year", "format", "window",
    "start", "end", "search", "range", "person", "name", "days", "by", "as_of", "from", "to", "date", "on",
    "separation", "spouse_birth_date", "limit", "offset", "amount", "percent", "first_name", "last_name",
    "effective_date", "received_on", "expected_on", "died_on", "rate", "threshold", "description", "reason",
]  # fmt: skip

values = st.one_of(st.sampled_from(OUT_OF_RANGE), st.text(max_size=30), st.integers().map(str))


def _with_value(ep: Endpoint, url: str, value: str) -> str:
    """The URL with every kwarg that does not name an object replaced by `value` (where the pattern allows)."""
    import re

    from django.urls import NoReverseMatch

    try:
        kwargs = re.match(ep.regex.replace("\\Z", "").rstrip("$"), url.lstrip("/"))
    except re.error:
        return url
    if kwargs is None:
        return url
    values = dict(kwargs.groupdict())
    for name in values:
        if name not in OBJECT_KWARGS and not name.endswith(("_id", "_pk")):
            candidate = "99999999999" if name in ep.int_params and not value.isdigit() else value
            values[name] = candidate
    try:
        new = ep.fmt % values
    except (TypeError, KeyError, NoReverseMatch):
        return url
    return new if re.fullmatch(ep.regex.replace("\\Z", ""), new.lstrip("/")) else url


def _server_errors(clients: dict[str, Client], targets: list[tuple[Endpoint, str]], value: str) -> list[str]:
    found = []
    data = dict.fromkeys(PARAMS, value)
    for ep, url in targets:
        url = _with_value(ep, url, value)
        for who, client in clients.items():
            for method in ("get", "post"):
                response = getattr(client, method)(url, data)
                if response.status_code >= 500:
                    found.append(
                        f"{who} {method.upper()} {url} ({ep.name}) with {value[:40]!r}: {response.status_code}"
                    )
    return found


def _targets(population) -> list[tuple[Endpoint, str]]:
    out = []
    for ep in endpoints():
        if ep.is_admin or ep.name in PUBLIC or "logout" in ep.name:
            continue
        try:
            out.append((ep, fill(ep, population)))
        except Unfillable:
            continue
    return out


def test_no_page_or_endpoint_answers_500_to_out_of_range_values(population):
    clients = {}
    for who, user in (
        ("administrator", staff_user(Role.ADMINISTRATOR)),
        ("committee", staff_user(Role.COMMITTEE)),
        ("participant A", population.a.user),
    ):
        clients[who] = Client(raise_request_exception=False)
        clients[who].force_login(user)
    targets = _targets(population)
    problems: list[str] = []

    @settings(
        max_examples=6,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )
    @given(value=values)
    def sweep(value):
        problems.extend(_server_errors(clients, targets, value))

    for value in OUT_OF_RANGE:  # every named edge case, then what hypothesis draws
        problems.extend(_server_errors(clients, targets, value))
    sweep()
    assert problems == []
