"""PostgreSQL restarted (an immediate stop: every backend killed, crash recovery at the next start) while a
real Celery worker is in the middle of a crediting run or of the payment job. The worker reconnects, the
job's attempt fails visibly in the worker's log, and the same task sent again (the resume path) finishes
the date once: nothing lost, nothing posted twice, verify_books finds nothing.

To hold the job at a known point, a second connection locks one row the job must write; the worker's
statement waits on it (its transaction open, part of the work done) when the server goes down.
"""

from __future__ import annotations

import contextlib
import re
from decimal import Decimal

import psycopg
import pytest
from django.db import connection
from django.db.utils import DatabaseError
from django.utils import timezone

from books.models import Account, DailyValuation, LedgerEntry, PendingTransaction, Position
from books.services.verify import books_verify
from books.tasks import credit_valuation_date_task
from core.models import JobRun
from operations.bench import payments as payments_bench
from operations.bench.crediting import DAY, generate
from payments.models import ScheduledPayment
from payments.services.schedules import schedules_recompute
from payments.tasks import process_day_task
from tests.faults.conftest import verify_books_command
from tests.workers import celery_worker, purge_queue, unique_queue, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.worker]

# The job's attempt ends in the worker's log; once failed jobs are recorded it also ends `failed` in JobRun.
FAILED_IN_LOG = re.compile(r"raised unexpected: (OperationalError|InterfaceError)")


def _query(read):
    """A read that survives this process's own connection being cut by the restart (False until it works)."""
    try:
        return read()
    except DatabaseError:
        connection.close()
        return False


def _waiting_on_lock(marker: str) -> bool:
    """A statement of another client waits for a row lock (read in autocommit: a fresh snapshot each time)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE %s",
            [f"%{marker}%"],
        )
        return cursor.fetchone()[0] > 0


@contextlib.contextmanager
def row_held(url: str, sql: str, params: list):
    """A second client holds a row lock (SELECT ... FOR UPDATE) until the block ends or the server goes down."""
    blocker = psycopg.connect(url)
    blocker.execute(sql, params)
    try:
        yield blocker
    finally:
        with contextlib.suppress(psycopg.Error):
            blocker.close()


def test_postgres_restarted_in_the_middle_of_crediting_the_retry_credits_the_date_once(fault_books, tmp_path):
    built = generate(participants=50, paid=1.0)
    key = DAY.isoformat()
    queue = unique_queue("fault-crediting")
    first_pending = (
        PendingTransaction.objects.filter(status="pending").order_by("id").values_list("id", flat=True)[0]
    )
    connection.close()
    try:
        with celery_worker(queue=queue, log=tmp_path / "worker.log") as worker:
            with row_held(
                fault_books.url,
                "SELECT id FROM books_pendingtransaction WHERE id = %s FOR UPDATE",
                [first_pending],
            ):
                credit_valuation_date_task.apply_async(args=[key], queue=queue)
                wait_for(
                    lambda: _waiting_on_lock("WITH todo AS"),
                    timeout=30,
                    worker=worker,
                    what="the worker's credits statement to be under way",
                )
                connection.close()
                fault_books.server.restart()
            wait_for(
                lambda: FAILED_IN_LOG.search(worker.output()),
                timeout=30,
                worker=worker,
                what="the cut attempt to fail in the worker",
            )
            cut = _query(lambda: JobRun.objects.get(kind="crediting", key=key))
            # Today a run cut by the database stays `running` (its end cannot be written while the server is
            # down); the resume path below claims it again either way.
            assert cut.status in ("running", "failed") and cut.attempts == 1
            assert not LedgerEntry.objects.filter(valuation_date=DAY).exists()  # the cut transaction is gone
            assert PendingTransaction.objects.filter(status="pending").count() == built["pending_credits"]
            connection.close()

            credit_valuation_date_task.apply_async(
                args=[key], queue=queue
            )  # the same pool process, reconnected
            wait_for(
                lambda: _query(lambda: JobRun.objects.get(kind="crediting", key=key).status == "done"),
                timeout=60,
                interval=0.2,
                worker=worker,
                what="the retry to credit the date",
            )
            assert worker.alive()
    finally:
        purge_queue(queue)

    run = JobRun.objects.get(kind="crediting", key=key)
    assert run.attempts == 2 and run.stats["positions_valued"] == built["positions"]
    assert DailyValuation.objects.filter(valuation_date=DAY).count() == Position.objects.count()
    entries = LedgerEntry.objects.filter(valuation_date=DAY)
    assert entries.count() == built["pending_credits"] == entries.values("pending_id").distinct().count()
    assert not PendingTransaction.objects.filter(status="pending").exists()
    assert books_verify() == []
    verified = verify_books_command(fault_books)
    assert verified.returncode == 0, verified.stdout + verified.stderr


# 600 participants, 5% separated the month before: 30 payments due, valued in batches of 20.
PARTICIPANTS, DUE, BATCH = 600, 30, 20


def _due():
    return ScheduledPayment.objects.filter(valuable_on__lte=payments_bench.CREDITED_THROUGH).exclude(
        status="cancelled"
    )


def test_postgres_restarted_in_the_middle_of_the_payment_job_the_retry_finishes_the_day_once(
    fault_books, tmp_path
):
    payments_bench._setup(PARTICIPANTS)
    separated = list(Account.objects.filter(participation__person__employment_events__kind="separation"))
    schedules_recompute(accounts=separated, because="separations recorded", now=timezone.now())
    due = list(_due().order_by("account_id", "payment_date", "number", "id"))
    assert len(due) == DUE
    scheduled_total = ScheduledPayment.objects.count()
    key = payments_bench.DAY.isoformat()
    queue = unique_queue("fault-payments")
    connection.close()
    valued = lambda: _due().filter(status=ScheduledPayment.Status.VALUED).count()  # noqa: E731
    try:
        with celery_worker(
            queue=queue, log=tmp_path / "worker.log", env={"PAYMENT_JOB_BATCH": str(BATCH)}
        ) as worker:
            with row_held(
                fault_books.url,
                "SELECT id FROM payments_scheduledpayment WHERE id = %s FOR UPDATE",
                [due[-1].pk],
            ):
                process_day_task.apply_async(args=[key], queue=queue)
                wait_for(
                    lambda: _query(lambda: valued() >= BATCH),
                    timeout=60,
                    interval=0.2,
                    worker=worker,
                    what="the worker to commit its first batch",
                )
                connection.close()
                fault_books.server.restart()  # the second batch is waiting on the held row
            wait_for(
                lambda: FAILED_IN_LOG.search(worker.output()),
                timeout=30,
                worker=worker,
                what="the cut attempt to fail in the worker",
            )
            cut = _query(lambda: JobRun.objects.get(kind="payments", key=key))
            assert cut.status in ("running", "failed") and cut.attempts == 1
            assert valued() == BATCH  # the first batch is kept; the second was never committed
            connection.close()

            process_day_task.apply_async(args=[key], queue=queue)
            wait_for(
                lambda: _query(lambda: JobRun.objects.get(kind="payments", key=key).status == "done"),
                timeout=60,
                interval=0.2,
                worker=worker,
                what="the retry to finish the payment day",
            )
            assert worker.alive()
    finally:
        purge_queue(queue)

    assert JobRun.objects.get(kind="payments", key=key).attempts == 2
    assert ScheduledPayment.objects.count() == scheduled_total  # nothing planned twice
    values = dict(
        DailyValuation.objects.filter(valuation_date=payments_bench.VALUED_ON).values_list(
            "account_id", "value"
        )
    )
    for p in _due():
        assert p.status == ScheduledPayment.Status.VALUED, p
        # EDCP 5.1(a): a lump sum is the whole value at the end of the month of separation; the first of five
        # installments is that value over five (5.8).
        expected = values[p.account_id] if p.of == 1 else (values[p.account_id] / 5).quantize(Decimal("0.01"))
        assert p.amount == expected, (p, expected)
    assert books_verify() == []
    verified = verify_books_command(fault_books)
    assert verified.returncode == 0, verified.stdout + verified.stderr
