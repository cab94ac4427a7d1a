from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import zoneinfo
from pathlib import Path

import pytest
from celery import current_app

EASTERN = zoneinfo.ZoneInfo("America/New_York")


# What the template database holds besides the migrations: the shipped catalog, loaded by `manage.py load_catalog`
# (plans/services.py `catalog_load`, which validates provisions with plans/provisions.py), from these files.
TEMPLATE_SOURCES = ("*/migrations/*.py", "plans/catalog/**/*", "plans/services.py", "plans/provisions.py")


def template_key(root: Path) -> str:
    """A digest of every migration file and of the catalog and its loader (TEMPLATE_SOURCES): a template
    database serves only while these are what made it."""
    digest = hashlib.sha256()
    paths = {path for pattern in TEMPLATE_SOURCES for path in root.glob(pattern) if path.is_file()}
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:10]


def _migrated_template(cursor, database: dict, name: str) -> None:
    """Migrate a new database `name` and load the shipped catalog into it, in manage.py processes (as `make run`
    does), made under another name and renamed when complete, so that a template is never seen half-made."""
    import os  # only when a template is missing: once per change of the migrations
    import subprocess
    import sys
    import uuid
    from urllib.parse import quote

    from django.conf import settings  # configured by pytest-django before the session fixtures run

    scratch = f"{name[:50]}_{uuid.uuid4().hex[:8]}"
    cursor.execute(f'CREATE DATABASE "{scratch}"')
    auth = quote(database["USER"] or "", safe="") + (
        ":" + quote(database["PASSWORD"], safe="") if database.get("PASSWORD") else ""
    )
    url = f"postgres://{auth}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{scratch}"
    try:
        for command in (["migrate", "--noinput"], ["load_catalog"]):
            subprocess.run(
                [sys.executable, "manage.py", *command, "-v0"],
                cwd=settings.BASE_DIR,
                env={**os.environ, "DATABASE_URL": url, "TESTING": "true"},
                check=True,
                stdout=subprocess.DEVNULL,
                timeout=1800,
            )
        cursor.execute(f'ALTER DATABASE "{scratch}" RENAME TO "{name}"')
    except Exception:
        cursor.execute(f'DROP DATABASE IF EXISTS "{scratch}"')  # another session made it first, or it failed
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            raise


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix, django_db_blocker, request, _test_database_set_up
):
    """Each session still gets a fresh test database, dropped at the end, but copied from a migrated template
    with the shipped catalog in it (CREATE DATABASE ... TEMPLATE, Django's TEST["TEMPLATE"]) instead of migrated
    and loaded anew: the template is named after a digest of the migration files and of the catalog and its
    loader (`template_key`), made once by `manage.py migrate` and `load_catalog` when they change, and the older
    templates of this database name are dropped. Django's test set-up still runs `migrate`, which finds
    everything applied. --reuse-db keeps pytest-django's own behaviour."""
    # pytest-django has configured Django by the time session fixtures run
    from django.conf import settings
    from django.db import DatabaseError, connection

    database = settings.DATABASES["default"]
    if (
        request.config.getvalue("reuse_db")
        or database["ENGINE"] != "django.db.backends.postgresql"
        or not _test_database_set_up
    ):
        return
    prefix = f"test_{database['NAME']}_tpl_m"[:50]
    template = f"{prefix}{template_key(Path(settings.BASE_DIR))}"
    with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
        # One session makes a missing template while the others (make check's xdist workers) wait for it, instead
        # of each making its own on the same two cores; the lock ends with the connection.
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [prefix])
        cursor.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", [prefix.replace("_", r"\_") + "%"]
        )
        found = {row[0] for row in cursor.fetchall()}
        if template not in found:
            _migrated_template(cursor, database, template)
        for old in found - {template}:
            with contextlib.suppress(DatabaseError):  # being copied by another session: left for the next
                cursor.execute(f'DROP DATABASE IF EXISTS "{old}"')
    database.setdefault("TEST", {})["TEMPLATE"] = template


# The rows of the shipped catalog and the role groups as the session set-up left them (`django_db_setup`), by
# table, copied out once so that the end of a transactional test copies them back (`_catalog_restore`) instead
# of loading the catalog from its files again (some 1.4 CPU seconds each time, some 25 times in `make check`).
_CATALOG_ROWS: dict[str, bytes] = {}


def _catalog_tables() -> list[str]:
    """Every table of the plans app (the catalog, its history, and the tables tests fill), and the groups."""
    from django.apps import apps  # configured by pytest-django before any fixture runs

    return [model._meta.db_table for model in apps.get_app_config("plans").get_models()] + [
        "auth_group",
        "auth_group_permissions",
    ]


def _catalog_snapshot() -> None:
    from django.db import connection  # configured by pytest-django before any fixture runs

    _CATALOG_ROWS.clear()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in _catalog_tables():
            with cursor.cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT BINARY)') as copy:
                _CATALOG_ROWS[table] = b"".join(bytes(block) for block in copy)


def _catalog_restore() -> None:
    """After a flush: the catalog and the groups back, row for row (ids too) as the session set-up made them,
    and their id sequences past the copied rows. Without a snapshot (not PostgreSQL), or where a table still
    holds rows (a test whose teardown did not flush), loaded from the files as before."""
    from django.apps import apps  # configured by pytest-django before any fixture runs
    from django.core.management.color import no_style  # Django is configured by now (as above)
    from django.db import connection, transaction  # Django is configured by now (as above)

    from core.roles import role_groups_ensure  # app code: importable once Django is configured
    from plans.services import catalog_load  # app code: importable once Django is configured

    with transaction.atomic(), connection.cursor() as cursor:
        if _CATALOG_ROWS:
            union = " UNION ALL ".join(f'(SELECT 1 FROM "{table}" LIMIT 1)' for table in _CATALOG_ROWS)
            cursor.execute(union)
        if not _CATALOG_ROWS or cursor.fetchone() is not None:  # not flushed (or not all): load and refresh
            catalog_load()
            role_groups_ensure()
            return
        for table, rows in _CATALOG_ROWS.items():
            with cursor.cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT BINARY)') as copy:
                copy.write(rows)
        models = [*apps.get_app_config("plans").get_models(), apps.get_model("auth", "Group")]
        for sql in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(sql)


@pytest.fixture(scope="session")
def _test_database_set_up(request) -> bool:
    """Whether pytest-django set up a test database in this session: it does only when a collected test needs
    one (its own rule, asked here). Without one, Django's connection still names the development database, which
    the session fixtures below must then not read or change (a run of tests that need no database, e.g.
    tests/test_layers.py alone, used to fail in set-up reading the development database's catalog)."""
    from pytest_django.fixtures import _get_databases_for_setup  # the rule pytest-django's own set-up applies

    aliases, _ = _get_databases_for_setup(request.session.items)
    return "default" in aliases


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, _test_database_set_up):
    """The shipped catalog is in the test database: copied with the template (django_db_modify_db_settings), else
    (not PostgreSQL, or --reuse-db) loaded here."""
    from django.conf import settings  # configured by pytest-django before the session fixtures run

    from plans.services import catalog_load  # app code: importable once Django is configured

    if not _test_database_set_up:
        return
    with django_db_blocker.unblock():
        if not settings.DATABASES["default"].get("TEST", {}).get("TEMPLATE"):
            catalog_load()
        _catalog_snapshot()


# The tables that point at any of the given tables, directly or through others: what TRUNCATE ... CASCADE empties.
_REFERRING_SQL = """
WITH RECURSIVE emptied(oid) AS (
    SELECT oid FROM pg_class WHERE relname = ANY(%s) AND relnamespace = current_schema()::regnamespace
    UNION
    SELECT c.conrelid FROM pg_constraint c JOIN emptied e ON c.confrelid = e.oid WHERE c.contype = 'f'
)
SELECT relname FROM pg_class WHERE oid IN (SELECT oid FROM emptied) ORDER BY relname
"""


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete(django_db_setup, django_db_blocker, _test_database_set_up):
    """The end of a transactional test empties the tables (Django's flush): on PostgreSQL a TRUNCATE of every
    table, which makes new files for each table and index, some 2.4 s of the server's time per test for a few
    rows. Here a DELETE of each table instead, in the flush's transaction, with triggers (the append-only
    refusals, the foreign-key checks) off for it (`session_replication_role = replica`, superuser only): the same
    empty tables, sequences left as TRUNCATE without RESTART IDENTITY leaves them. A flush that cascades (a test
    with available_apps: TRUNCATE ... CASCADE) also deletes the rows of every table that points at the emptied
    ones, as the cascade would; one that resets sequences keeps Django's TRUNCATE."""
    from django.db import connection  # configured by pytest-django before the session fixtures run

    if connection.vendor != "postgresql" or not _test_database_set_up:
        yield
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('is_superuser')")
        superuser = cursor.fetchone()[0] == "on"
    if not superuser:
        yield
        return
    operations = type(connection.ops)
    truncate = operations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        if allow_cascade:
            with self.connection.cursor() as cursor:
                cursor.execute(_REFERRING_SQL, [list(tables)])
                tables = [row[0] for row in cursor.fetchall()]
        deletes = "".join(f" DELETE FROM {self.quote_name(table)};" for table in tables)
        return [
            f"SET LOCAL session_replication_role = replica;{deletes} SET LOCAL session_replication_role = DEFAULT;"
        ]

    operations.sql_flush = sql_flush
    try:
        yield
    finally:
        operations.sql_flush = truncate


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Transactional tests end with a flush of every table: once their teardown is over, put the shipped
    catalog (and the role groups) back for the tests that follow, as the session set-up left them."""
    yield
    if nextitem is None:  # the session ends: its test database is already gone, and no test follows
        return
    marker = item.get_closest_marker("django_db")
    flushed = marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    if flushed or {"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())):
        from pytest_django.plugin import blocking_manager_key

        with item.config.stash[blocking_manager_key].unblock():
            _catalog_restore()


# The modules of the fast tier's longest tests (10 to 30 CPU seconds each: the out-of-range rounds, the
# participant-isolation walk, ...), which `make check` starts first (pytest_collection_modifyitems).
LONG_FIRST = (
    "tests/test_no_server_errors.py",
    "tests/test_access.py",
    "tests/conversion/test_reconciliation.py",
    "tests/operations/test_bench_crediting.py",
    "tests/pages/test_portal_queries.py",
)


# Before pytest-xdist's, which reads the groups (tests/test_tiers.py checks that they hold).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make check`: `-n 2 --dist loadgroup`), the tests of one class stay on one process, so
    that state built once for the class (`replayed_once` in tests/payments/factories.py) is built once; every
    other test is shared out on its own (a long module, or one test per round, spreads over the processes).
    Within each of pytest-django's three parts (`_django_order`), the modules of LONG_FIRST come first, whole and
    in their order, the rest after them as collected: the processes
    share out the long tests while there is still other work to balance them, instead of one of them ending on
    a 30-second test while the other waits. A serial run keeps the collected order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        if item.cls is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}.{item.cls.__qualname__}"))
    rank = {module: i for i, module in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: (_django_order(item), rank.get(item.nodeid.split("::")[0], len(LONG_FIRST))))


def _django_order(item) -> int:
    """pytest-django's order (its pytest_collection_modifyitems, which has run first): tests in a transaction,
    then transactional tests, then tests without the database. Kept by the sort above: a transactional test
    empties the tables, the rows of data migrations included (the withholding rates), so on each process every
    test that expects them must run before the first transactional one."""
    from pytest_django.plugin import validate_django_db

    marker = item.get_closest_marker("django_db")
    fixtures = set(getattr(item, "fixturenames", ()))
    transactional = bool({"transactional_db", "live_server"} & fixtures)
    if marker is not None:
        transaction, reset_sequences, *_ = validate_django_db(marker)
        transactional = transactional or transaction or reset_sequences
    if transactional:
        return 1
    return 0 if marker is not None or "db" in fixtures else 2


@pytest.fixture(scope="session", autouse=True)
def _media_root_per_xdist_worker(tmp_path_factory):
    """Under pytest-xdist (`make check` runs `-n 2`), each worker has its own test database, and so its own
    document ids: stored documents (core.pdf, claims) go to a folder of that worker instead of the shared
    var/media, where two workers would write the same relative path. Set in the environment too, for the
    worker processes a test starts (tests/workers.py passes os.environ on). A serial run is unchanged."""
    from django.conf import settings  # configured by pytest-django before the session fixtures run

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or os.environ.get("MEDIA_ROOT"):
        yield
        return
    media = tmp_path_factory.mktemp(f"media-{worker}")
    saved = settings.MEDIA_ROOT
    settings.MEDIA_ROOT = media
    os.environ["MEDIA_ROOT"] = str(media)
    try:
        yield
    finally:
        settings.MEDIA_ROOT = saved
        os.environ.pop("MEDIA_ROOT", None)


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    """Passwords the tests set are hashed with MD5: Django's default PBKDF2 (what production keeps, no
    PASSWORD_HASHERS in config/settings.py) spends a third of a CPU second on each user made with a password.
    override_settings, so that Django's cached list of hashers is dropped too."""
    from django.test.utils import override_settings

    fast = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    fast.enable()
    yield
    fast.disable()


@pytest.fixture
def edcp(db):
    from plans.models import Plan

    return Plan.objects.get(code="EDCP")


@pytest.fixture
def rrp(db):
    from plans.models import Plan

    return Plan.objects.get(code="RRP")


def eastern(y, m, d, hh=12, mm=0, ss=0) -> dt.datetime:
    return dt.datetime(y, m, d, hh, mm, ss, tzinfo=EASTERN)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The API throttle counts live in the cache: each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield


@contextlib.contextmanager
def _tasks_eager(*, propagates: bool):
    conf = current_app.conf
    before = conf.task_always_eager, conf.task_eager_propagates
    conf.task_always_eager, conf.task_eager_propagates = True, propagates
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = before


@pytest.fixture
def eager_jobs():
    """Queued Celery tasks run in this process, as a worker would run them; a task's exception reaches the test."""
    with _tasks_eager(propagates=True):
        yield


@pytest.fixture
def eager():
    """Queued tasks run in this process, as a worker would run them (exceptions stay in the task's result)."""
    with _tasks_eager(propagates=False):
        yield
