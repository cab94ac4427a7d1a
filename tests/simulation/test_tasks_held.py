"""A simulation sends nothing to the broker: the tasks its services queue (payment advice, election confirmations)
are held (core.jobs.tasks_held), since they would name rows of the sandbox to the real workers, which read the real
books."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app
from core.jobs import tasks_held
from operations.simulation.runner import run_scenario
from operations.simulation.sandbox import _schema_fingerprint, rolled_back, scratch_database
from operations.simulation.scenario import load_scenario
from payments.models import PaymentRun
from payments.tasks import payment_advice_task


def test_a_task_queued_inside_tasks_held_is_recorded_and_not_sent():
    with mock.patch.object(app, "send_task") as sent:
        with tasks_held() as held:
            payment_advice_task.delay(7)
        assert sent.call_count == 0
        assert [(h.name, h.args) for h in held] == [("payments.send_advice", (7,))]
        payment_advice_task.delay(8)  # outside: sent as ever
        assert sent.call_count == 1


@pytest.mark.django_db(transaction=True)  # commits for real, so the on-commit queueing of the advice happens
def test_a_simulation_approves_payment_runs_and_sends_no_advice_task():
    scenario = load_scenario(Path(settings.BASE_DIR) / "scenarios" / "edcp_lump_sum_after_separation.json")
    with mock.patch.object(app, "send_task") as sent:
        run_scenario(scenario)
    # each run released queued its payment advice when its approval committed (payments.services.runs)
    assert PaymentRun.objects.filter(status=PaymentRun.Status.RELEASED).exists()
    assert sent.call_count == 0, [c.args[0] for c in sent.call_args_list]


@pytest.mark.django_db
def test_the_transaction_sandbox_holds_what_is_queued_in_it():
    with mock.patch.object(app, "send_task") as sent:
        with rolled_back():
            payment_advice_task.delay(3)
    assert sent.call_count == 0


def _databases(like: str) -> set[str]:
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [like])
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.slow  # builds the scratch databases' template once for the test database (migrate + catalog)
def test_a_scratch_database_holds_what_is_queued_in_it_and_drops_older_templates(django_db_blocker):
    # Not in a test transaction: the sandbox points the connection at the scratch database and back.
    with django_db_blocker.unblock(), mock.patch.object(app, "send_task") as sent:
        base = connection.settings_dict["NAME"]
        older = f"{base}_simtpl_000000000000"  # the template of an earlier schema
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{older}"')
        with scratch_database():
            payment_advice_task.delay(3)
        assert sent.call_count == 0
        payment_advice_task.delay(3)  # out of it: sent as ever
        assert sent.call_count == 1
        assert _databases(f"{base}_simtpl_%") == {f"{base}_simtpl_{_schema_fingerprint()}"}
        assert not _databases(f"{base}_sim\\_%")  # the scratch database itself is gone
