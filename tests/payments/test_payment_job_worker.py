"""The daily payment job in a real Celery worker killed with SIGKILL in the middle of its run: once the task
is redelivered to a new worker, every payment due is valued exactly once and nothing is lost."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from books.models import Account, DailyValuation
from core.models import JobRun
from operations.bench import payments as bench
from payments.models import ScheduledPayment
from payments.services.schedules import schedules_recompute
from payments.tasks import process_day_task
from tests.workers import celery_worker, purge_queue, unique_queue, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _due():
    return ScheduledPayment.objects.filter(valuable_on__lte=bench.CREDITED_THROUGH).exclude(
        status="cancelled"
    )


def _valued() -> int:
    return _due().filter(status=ScheduledPayment.Status.VALUED).count()


def _run() -> JobRun | None:
    return JobRun.objects.filter(kind="payments", key=bench.DAY.isoformat()).first()


# The smallest books that reach the kill window: 600 participants, 5% separated the month before, so 30
# payments due on the day, valued by the workers in batches of 20 (each batch committed on its own).
PARTICIPANTS, DUE, BATCH = 600, 30, 20
WORKER_ENV = {"PAYMENT_JOB_BATCH": str(BATCH)}


def test_a_worker_killed_in_the_middle_of_the_payment_job_loses_and_duplicates_nothing(tmp_path):
    bench._setup(PARTICIPANTS)
    separated = list(Account.objects.filter(participation__person__employment_events__kind="separation"))
    schedules_recompute(accounts=separated, because="separations recorded", now=timezone.now())
    due = list(_due().order_by("account_id", "payment_date", "number", "id"))
    assert len(due) == DUE
    scheduled_total = ScheduledPayment.objects.count()
    last = due[-1]  # in the job's second batch
    queue = unique_queue("test-payments")
    try:
        with transaction.atomic():
            # Hold the second batch back: the first worker commits one batch, then waits on this row.
            ScheduledPayment.objects.select_for_update().get(pk=last.pk)
            with celery_worker(queue=queue, log=tmp_path / "first.log", env=WORKER_ENV) as first:
                process_day_task.apply_async(args=[bench.DAY.isoformat()], queue=queue)
                wait_for(
                    lambda: _valued() >= BATCH,
                    timeout=60,
                    interval=0.2,
                    worker=first,
                    what="the first worker to commit its first batch",
                )
                first.kill()
        killed = _run()
        assert killed.status == "running" and killed.attempts == 1
        assert _valued() == BATCH  # the first batch is kept; the second was never committed

        with celery_worker(
            queue=queue, log=tmp_path / "second.log", env={**WORKER_ENV, "CELERY_VISIBILITY_TIMEOUT": "1"}
        ) as second:
            wait_for(
                lambda: _run().status == "done",
                timeout=60,
                interval=0.2,
                worker=second,
                what="the redelivered task to finish the day",
            )
    finally:
        purge_queue(queue)

    assert _run().attempts >= 2
    assert ScheduledPayment.objects.count() == scheduled_total  # nothing planned twice
    values = dict(
        DailyValuation.objects.filter(valuation_date=bench.VALUED_ON).values_list("account_id", "value")
    )
    for p in _due():
        assert p.status == ScheduledPayment.Status.VALUED, p
        # EDCP 5.1(a): a lump sum is the whole value at the end of the month of separation; the first of five
        # installments is that value over five (5.8).
        expected = values[p.account_id] if p.of == 1 else (values[p.account_id] / 5).quantize(Decimal("0.01"))
        assert p.amount == expected, (p, expected)
