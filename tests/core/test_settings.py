"""Celery is configured for money-moving work, and settings refuse bad environment values."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

from config.celery import app


def test_celery_is_json_only_acks_late_and_rejects_on_worker_loss():
    conf = app.conf
    assert conf.task_serializer == "json" and conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert (
        conf.beat_scheduler == "core.beat:DatabaseScheduler"
    )  # django-celery-beat's, never dropping a due send


def test_the_broker_visibility_timeout_outlasts_the_longest_task():
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > settings.CELERY_TASK_TIME_LIMIT


def test_tasks_can_be_queued_on_commit():
    from books.tasks import credit_valuation_date_task

    assert hasattr(credit_valuation_date_task, "delay_on_commit")


def _settings_error(**env) -> str:
    run_env = {**os.environ, **env}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=run_env,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
    )
    return result.stderr


def test_a_bad_boolean_in_the_environment_stops_start_up():
    assert "is not a boolean" in _settings_error(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="maybe")


def test_a_database_url_that_is_not_postgres_or_sqlite_stops_start_up():
    assert "DATABASE_URL must be" in _settings_error(
        DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL="mysql://x@localhost/db"
    )


def test_production_without_a_secret_key_stops_start_up():
    assert "SECRET_KEY must be set" in _settings_error(
        DJANGO_SETTINGS_MODULE="config.settings", DEBUG="false", REQUIRE_SECRET_KEY="true", SECRET_KEY=""
    )


def test_a_short_secret_key_stops_start_up():
    assert "too short" in _settings_error(DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY="short")


def test_production_without_field_encryption_keys_stops_start_up():
    assert "FIELD_ENCRYPTION_KEYS must be set" in _settings_error(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="false",
        REQUIRE_SECRET_KEY="true",
        SECRET_KEY="k" * 50,
        FIELD_ENCRYPTION_KEYS="",
    )


def test_a_field_encryption_key_that_is_not_a_fernet_key_stops_start_up():
    good = "0" * 43 + "="  # 32 bytes, url-safe base64
    assert "key 2 is not a Fernet key" in _settings_error(
        DJANGO_SETTINGS_MODULE="config.settings", FIELD_ENCRYPTION_KEYS=f"{good},not-a-key"
    )


# Two transactions of the embedded default that each read, then write, at once (as two worker children sending two
# runs' payment advice do: a select_for_update().get_or_create() of a Notice).
_SQLITE_WRITERS = r"""
import threading

import django

django.setup()
from django.db import OperationalError, connection, transaction

with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE t (n integer)")
connection.close()
both_read = threading.Barrier(2, timeout=1)
errors = []


def write(n):
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM t")
            try:
                both_read.wait()
            except threading.BrokenBarrierError:  # the other waits for the lock to begin: this one goes on
                pass
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO t VALUES (%s)", [n])
    except OperationalError as exc:
        errors.append(str(exc))
    finally:
        connection.close()


threads = [threading.Thread(target=write, args=(n,)) for n in (1, 2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM t")
    print(cursor.fetchone()[0], errors)
"""


def test_two_writers_of_the_embedded_default_wait_for_each_other_instead_of_failing(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", _SQLITE_WRITERS],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        },
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        timeout=120,
    )
    assert result.stdout.strip() == "2 []", result.stdout + result.stderr
