"""bench pages (issue 15): its figures are computed right, and a response can say how many queries it took."""

import itertools

from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import RequestFactory

from core.middleware import QueryCountHeaderMiddleware
from operations.bench.pages import Tally, percentile, think_pauses


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]  # 1..100 ms
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 95) == 0.0


def test_the_tally_keeps_the_largest_query_count_and_every_error_by_page():
    tally = Tally()
    tally.add("portal_home", 10.0, 200, {"X-Queries": "12"})
    tally.add("portal_home", 30.0, 200, {"X-Queries": "9"})
    tally.add("staff_dashboard", 50.0, 500, {})
    summary = tally.summary()
    assert summary["portal_home"] == {
        "requests": 2,
        "p50_ms": 10.0,
        "p95_ms": 30.0,
        "p99_ms": 30.0,
        "queries": 12,
    }
    assert summary["staff_dashboard"]["requests"] == 1
    assert tally.errors == [("staff_dashboard", 500)]


def test_the_query_count_header_counts_every_statement_of_the_response(db):
    def view(request):
        list(User.objects.all())
        list(User.objects.filter(pk=1))
        return HttpResponse("ok")

    response = QueryCountHeaderMiddleware(view)(RequestFactory().get("/"))
    assert response["X-Queries"] == "2"


def test_think_pauses_spread_around_their_mean_and_repeat_for_a_seed():
    pauses = list(itertools.islice(think_pauses(2.0, seed=7), 2000))
    assert all(1.0 <= p <= 3.0 for p in pauses)
    assert 1.9 < sum(pauses) / len(pauses) < 2.1
    assert pauses[:50] == list(itertools.islice(think_pauses(2.0, seed=7), 50))
    assert pauses[:50] != list(itertools.islice(think_pauses(2.0, seed=8), 50))
    assert list(itertools.islice(think_pauses(0.0, seed=7), 3)) == [0.0, 0.0, 0.0]
