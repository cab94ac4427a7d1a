"""Issue 12, finding 7: no 500 on bad input. Out-of-range values (dates 0001-01-01 and 9999-12-31, years 0 and
99999999999, amounts 1e400, 300-character names...) sent to every page and endpoint that takes parameters, in
the URL, the query string and a posted form, answer 400 or a form error, never a server error.

The URL patterns are those of tests/test_access.py's walker (every pattern of the urlconf, filled with
participant A's objects). Each request carries every parameter a view reads, each with a value of its kind:
two hand-written rounds of the edge cases, then a few rounds hypothesis draws. Bounded: no deadline, few
examples (every round is some 800 requests).
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.roles import Role
from tests.signin import sign_in
from tests.test_access import (
    OBJECT_KWARGS,
    PUBLIC,
    Endpoint,
    Unfillable,
    _population,
    endpoints,
    fill,
    staff_user,
)

pytestmark = pytest.mark.django_db

# Every query parameter and form field the views read, by kind (grep request.GET, query_params, forms).
DATES = (
    "start", "end", "as_of", "from", "to", "date", "on", "separation", "spouse_birth_date", "effective_date",
    "received_on", "expected_on", "died_on", "opens", "closes", "paid_on", "birth_date", "hire_date",
)  # fmt: skip
NUMBERS = (
    "year", "plan_year", "page", "epage", "days", "limit", "offset", "window", "person", "account", "amount",
    "percent", "rate", "threshold", "price", "gross", "years",
)  # fmt: skip
TEXTS = (
    "plan", "q", "kind", "status", "format", "range", "by", "search", "name", "first_name", "last_name",
    "description", "reason", "issues", "evidence", "response", "relationship", "name_1", "percent_1",
)  # fmt: skip
ROUNDS = [
    {"date": "0001-01-01", "number": "0", "text": "x" * 300},
    {"date": "9999-12-31", "number": "99999999999", "text": "Ω" * 300},
    {"date": "2024-02-30", "number": "1e400", "text": "=1+1"},
    {"date": "-1", "number": "-1e400", "text": "NaN"},
]
edge_dates = st.sampled_from(["0001-01-01", "9999-12-31", "0000-00-00", "2024-13-01", "99999-01-01"])
edge_numbers = st.one_of(st.integers().map(str), st.sampled_from(["1e400", "NaN", "-0", "1.5", "Infinity"]))
rounds = st.fixed_dictionaries(
    {
        "date": st.one_of(edge_dates, st.text(max_size=12)),
        "number": edge_numbers,
        "text": st.text(max_size=300),
    }
)


@pytest.fixture
def population(db, settings, tmp_path):
    """The walker's population (tests/test_access.py), built for each round: the module-wide one of the access
    walks does not serve here, the people it holds were gone after a round's requests."""
    settings.MEDIA_ROOT = str(tmp_path)
    return _population(tmp_path)


def _data(values: dict[str, str]) -> dict[str, str]:
    data = dict.fromkeys(DATES, values["date"])
    data.update(dict.fromkeys(NUMBERS, values["number"]))
    data.update(dict.fromkeys(TEXTS, values["text"]))
    return data


def _url(ep: Endpoint, url: str, values: dict[str, str]) -> str:
    """The URL with every kwarg that names no object replaced by a value of its kind, where the pattern allows
    (a year converter that refuses the value makes the URL 404, which is fine)."""
    match = re.match(ep.regex.replace("\\Z", ""), url.lstrip("/"))
    if match is None:
        return url
    kwargs = dict(match.groupdict())
    for name in kwargs:
        if name not in OBJECT_KWARGS and not name.endswith(("_id", "_pk")):
            kwargs[name] = values["number"] if name in ep.int_params or "year" in name else values["date"]
    new = ep.fmt % kwargs
    return new if re.fullmatch(ep.regex.replace("\\Z", ""), new.lstrip("/")) else url


def _server_errors(clients: dict[str, Client], targets, values: dict[str, str]) -> list[str]:
    found, data = [], _data(values)
    for ep, url in targets:
        url = _url(ep, url, values)
        for who, client in clients.items():
            for method in ("get", "post"):
                response = getattr(client, method)(url, data)
                if response.status_code >= 500:
                    found.append(
                        f"{who} {method.upper()} {url} ({ep.name}) {values!r:.120}: {response.status_code}"
                    )
    return found


def _signed_in_clients_and_targets(request) -> tuple[dict[str, Client], list]:
    people = request.getfixturevalue("population")
    clients = {}
    for who, user in (
        ("administrator", staff_user(Role.ADMINISTRATOR)),
        ("committee", staff_user(Role.COMMITTEE)),
        ("participant A", people.a.user),
    ):
        clients[who] = Client(raise_request_exception=False)
        sign_in(clients[who], user)
    targets = []
    for ep in endpoints():
        # document_download only reads (the population's documents carry a placeholder hash it refuses to serve)
        if ep.is_admin or ep.name in PUBLIC or "logout" in ep.name or ep.name == "document_download":
            continue
        try:
            targets.append((ep, fill(ep, people)))
        except Unfillable:
            continue
    return clients, targets


# One test per round (not one test for all of them): each is some 800 requests (about 30 s of one core), and
# `make check` runs its tests on two processes (pytest-xdist), which can share out tests but not the rounds of
# one. The fast tier (`make check`) keeps the round of the range's far end (the last date, an 11-digit number,
# 300-character names: the values that overflow); `make test` also sends the near end (the first date, zero),
# the malformed rounds and the drawn ones.
@pytest.mark.parametrize(
    "values",
    [
        pytest.param(ROUNDS[0], id="min", marks=pytest.mark.slow),
        pytest.param(ROUNDS[1], id="max"),
        pytest.param(ROUNDS[2], id="invalid", marks=pytest.mark.slow),
        pytest.param(ROUNDS[3], id="negative", marks=pytest.mark.slow),
    ],
)
def test_no_page_or_endpoint_answers_500_to_out_of_range_values(request, values):
    clients, targets = _signed_in_clients_and_targets(request)
    problems = _server_errors(clients, targets, values)
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
def test_no_page_or_endpoint_answers_500_to_drawn_values(request):
    clients, targets = _signed_in_clients_and_targets(request)
    problems: list[str] = []

    @settings(
        max_examples=2,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(values=rounds)
    def drawn(values):
        problems.extend(_server_errors(clients, targets, values))

    drawn()
    assert problems == [], "\n".join(problems)
