"""Where a simulation runs: a scratch database (default) or a transaction rolled back at the end.

The scratch database is a copy of a template built once per schema (migrations + catalog), so a
run never sees or touches real plan data, and starts in well under a second. In either sandbox the
tasks the services queue are held, never sent (core.jobs.tasks_held): a message naming one of the
sandbox's rows (the advice of payment run 4) would reach the real broker's workers, which read the
real books. The benchmarks that build books in a scratch database (load_demo, a payment run
approved) are covered too.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, connection, connections, transaction

from core.jobs import tasks_held
from participants.models import Person
from plans.services import catalog_load


class _Rollback(Exception):
    pass


def _schema_fingerprint() -> str:
    h = hashlib.sha256()
    base = Path(settings.BASE_DIR)
    for path in sorted(base.glob("*/migrations/0*.py")) + sorted(
        Path(settings.PLAN_CATALOG_DIR).rglob("*.yaml")
    ):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _prepare_current() -> None:
    catalog_load()


@contextlib.contextmanager
def rolled_back() -> Iterator[None]:
    """Run inside a transaction that is always rolled back (used by the test suite on its own database)."""
    if Person.objects.exists():
        raise RuntimeError(
            "the transaction sandbox needs a database with no participants; use the scratch sandbox"
        )
    try:
        with tasks_held(), transaction.atomic():
            _prepare_current()
            yield
            raise _Rollback
    except _Rollback:
        pass


def _pg_admin_execute(sql: str) -> None:
    with connection._nodb_cursor() as cursor:
        cursor.execute(sql)


@contextlib.contextmanager
def _point_default_at(settings_dict: dict) -> Iterator[None]:
    conn = connections["default"]
    saved = dict(conn.settings_dict)
    conn.close()
    conn.settings_dict.update(settings_dict)
    try:
        yield
    finally:
        conn.close()
        conn.settings_dict.clear()
        conn.settings_dict.update(saved)


def _build_template(quiet: bool = True) -> None:
    call_command("migrate", interactive=False, verbosity=0)
    catalog_load()


@contextlib.contextmanager
def scratch_database() -> Iterator[str]:
    """A throw-away copy of the template, its name yielded; the tasks queued inside are held (module docstring)."""
    with tasks_held(), _scratch() as name:
        yield name


def _drop_older_templates(base: str, template: str) -> None:
    """The templates of this database made for earlier schemas (another fingerprint): nothing will copy them again.
    One in use (being copied by a process still on the old code) is left for a later call."""
    with connections["default"]._nodb_cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{base}_simtpl_%"])
        names = [row[0] for row in cursor.fetchall()]
    for name in names:
        if name != template and re.fullmatch(rf"{re.escape(base)}_simtpl_[0-9a-f]{{12}}", name):
            with contextlib.suppress(DatabaseError):
                _pg_admin_execute(f'DROP DATABASE IF EXISTS "{name}"')


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    conn = connections["default"]
    fingerprint = _schema_fingerprint()
    if conn.vendor == "postgresql":
        base = conn.settings_dict["NAME"]
        template = f"{base}_simtpl_{fingerprint}"
        with conn._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template])
            exists = cursor.fetchone() is not None
        if not exists:
            building = f"{template}_b{uuid.uuid4().hex[:6]}"
            _pg_admin_execute(f'CREATE DATABASE "{building}"')
            with _point_default_at({"NAME": building}):
                _build_template()
            try:
                _pg_admin_execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
            except Exception:  # another process built it first
                _pg_admin_execute(f'DROP DATABASE IF EXISTS "{building}"')
        _drop_older_templates(base, template)
        scratch = f"{base}_sim_{uuid.uuid4().hex[:10]}"
        _pg_admin_execute(f'CREATE DATABASE "{scratch}" TEMPLATE "{template}"')
        try:
            with _point_default_at({"NAME": scratch}):
                with (
                    connection.cursor() as cursor
                ):  # a throw-away database: commits need not wait for the disk
                    cursor.execute("SET synchronous_commit TO off")
                yield scratch
        finally:
            _pg_admin_execute(f'DROP DATABASE IF EXISTS "{scratch}"')
    else:
        var = Path(settings.VAR_DIR)
        var.mkdir(exist_ok=True)
        template_file = var / f"simtpl_{fingerprint}.sqlite3"
        if not template_file.exists():
            building_file = var / f"simtpl_{fingerprint}.{uuid.uuid4().hex[:6]}.sqlite3"
            with _point_default_at({"NAME": building_file}):
                _build_template()
            building_file.replace(template_file)
        for older in var.glob("simtpl_*.sqlite3"):  # the templates of earlier schemas
            if older != template_file and re.fullmatch(r"simtpl_[0-9a-f]{12}\.sqlite3", older.name):
                older.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            scratch_file = Path(tmp) / "simulation.sqlite3"
            shutil.copyfile(template_file, scratch_file)
            # A throw-away file: commits need not wait for the disk (as synchronous_commit off above).
            options = {**conn.settings_dict.get("OPTIONS", {}), "init_command": "PRAGMA synchronous = OFF"}
            with _point_default_at({"NAME": scratch_file, "OPTIONS": options}):
                yield str(scratch_file)
