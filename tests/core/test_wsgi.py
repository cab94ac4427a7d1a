"""A web worker builds, as it starts, what its first page would otherwise pay for (config/wsgi.py, issue 15)."""

import os
import subprocess
import sys

PROBE = """
import config.wsgi, gc
from core import valuation_calendar
from django.urls import get_resolver
print(valuation_calendar._exchange_sessions.cache_info().currsize)
print(bool(get_resolver()._populated))
print(gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def test_a_web_worker_starts_with_the_exchange_calendar_and_the_url_index_built():
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "True", "20000", "True"]
