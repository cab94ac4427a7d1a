"""The same answer on PostgreSQL and on SQLite (issue 9): every scenario shipped in scenarios/ (ours, the
generated ones and the tax samples, copies of ../shared/scenarios) gives the identical `simulate --json`
result on both databases.

The PostgreSQL side is the suite's own database (the command's transaction sandbox, rolled back); the
SQLite side is the same command in a child process whose database is a scratch file, started first so
both run at once.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

SCENARIOS = Path(settings.BASE_DIR) / "scenarios"
EVERY_SCENARIO = sorted(str(p.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("*.json"))


def test_every_shipped_scenario_is_compared_including_generated_and_tax():
    assert {"generated/gen_42_000_edcp.json", "tax/tax_rrp2017_credits_and_payments.json"} <= set(
        EVERY_SCENARIO
    )
    assert len(EVERY_SCENARIO) >= 21


def _simulate_on_sqlite(path: Path, scratch: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DATABASE_URL"] = f"sqlite:///{scratch}"
    return subprocess.Popen(
        [sys.executable, "manage.py", "simulate", str(path), "--json"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _simulate_here(path: Path) -> str:
    out = io.StringIO()
    call_command("simulate", str(path), "--json", "--sandbox", "transaction", stdout=out)
    return out.getvalue()


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("name", EVERY_SCENARIO)
def test_simulate_gives_the_same_result_on_postgresql_and_sqlite(name, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the suite's database is the PostgreSQL side of the comparison")
    child = _simulate_on_sqlite(SCENARIOS / name, tmp_path / "scratch.sqlite3")
    try:
        postgresql = _simulate_here(SCENARIOS / name)
        sqlite, errors = child.communicate(timeout=900)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, errors[-3000:]
    assert json.loads(postgresql) == json.loads(sqlite)
    assert postgresql.strip() == sqlite.strip()  # the very same text, key order included
