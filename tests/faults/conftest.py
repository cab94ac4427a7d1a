"""Faults a production day meets, with real processes, on private servers this session starts and stops.

The PostgreSQL of the fault tests is a private cluster (tests/servers.py): one migrated template database
with the plan catalog per session, and a fresh copy of it per test. While a test runs, this process's
default database connection points at that copy, so the ORM, the services and the workers
(tests/workers.py takes its DATABASE_URL from the connection) all use it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.db import connections

from tests.servers import PrivatePostgres, private_postgres

TEMPLATE = "nqdc_fault_template"


@contextlib.contextmanager
def default_database(server: PrivatePostgres, name: str) -> Iterator[None]:
    connection = connections["default"]
    connection.close()
    saved = {key: connection.settings_dict[key] for key in ("HOST", "PORT", "NAME", "USER", "PASSWORD")}
    connection.settings_dict.update(
        HOST="127.0.0.1", PORT=str(server.port), NAME=name, USER="postgres", PASSWORD=""
    )
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(saved)


@pytest.fixture(scope="session")
def fault_postgres(django_db_blocker) -> Iterator[PrivatePostgres]:
    from django.core.management import call_command

    from core.roles import role_groups_ensure
    from plans.services import catalog_load

    with private_postgres() as server:
        server.psql(f"CREATE DATABASE {TEMPLATE}")
        with django_db_blocker.unblock(), default_database(server, TEMPLATE):
            call_command("migrate", verbosity=0, interactive=False)
            catalog_load()
            role_groups_ensure()
        yield server


@dataclass
class FaultBooks:
    server: PrivatePostgres
    name: str

    @property
    def url(self) -> str:
        return self.server.url(self.name)


@pytest.fixture
def fault_books(fault_postgres, django_db_blocker) -> Iterator[FaultBooks]:
    """A fresh migrated database with the plan catalog on the private cluster, as this test's default."""
    name = f"nqdc_fault_{uuid.uuid4().hex[:8]}"
    fault_postgres.psql(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    try:
        with django_db_blocker.unblock(), default_database(fault_postgres, name):
            yield FaultBooks(server=fault_postgres, name=name)
    finally:
        fault_postgres.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def verify_books_command(books: FaultBooks) -> subprocess.CompletedProcess:
    """`manage.py verify_books` as an operator runs it, in its own process, against the test's database."""
    import os

    env = {**os.environ, "DATABASE_URL": books.url, "TESTING": "true"}
    env.pop("TEST_DATABASE_NAME", None)
    return subprocess.run(
        [sys.executable, "manage.py", "verify_books"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
