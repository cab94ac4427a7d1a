"""The embedded default (no DATABASE_URL: SQLite) runs the simulator end to end through the CLI, scratch
sandbox included, and a scenario with a payment passes --check there too."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings


@pytest.mark.slow
def test_a_payment_scenario_passes_check_on_sqlite_through_the_command_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TESTING")}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}", DEBUG="true")
    result = subprocess.run(
        [sys.executable, "manage.py", "simulate", "scenarios/edcp_lump_sum_after_separation.json", "--check"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "check passed" in result.stdout
