"""`manage.py bench payments`: the day's separations are scheduled, valued and released by two people."""

from __future__ import annotations

import pytest

from operations.bench import payments as bench

pytestmark = pytest.mark.django_db


def test_the_payments_bench_values_and_releases_every_payment_due_on_its_day():
    state = bench._setup(100)
    result = bench.measure(state)
    assert result["payments"] == result["expected_due"] == result["payments_scheduled"] == 5
    assert result["job_stats"]["valued"] == 5 and result["job_stats"]["held"] == 0
