"""Crediting survives concurrency and crashes: two workers at once, a worker killed mid-run, a run cut
between its phases. The books are built by the benchmark's generator (operations/bench/crediting.py): participants
with three accounts of four funds each, valued on PREV, and a payday (two pending credits each) for DAY.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from books.models import DailyValuation, LedgerEntry, PendingTransaction, Position
from books.services import crediting
from books.services.crediting import credit_valuation_date
from books.services.verify import books_verify
from books.tasks import credit_valuation_date_task
from core import jobs
from core.jobs import JobBusy, _lock_id
from core.models import JobRun
from operations.bench.crediting import DAY, generate
from plans.models import FundPrice
from tests.faults.test_postgres_restart import _waiting_on_lock, row_held
from tests.workers import celery_worker, database_url_for_workers, purge_queue, unique_queue, wait_for

pytestmark = pytest.mark.usefixtures("transactional_db")  # the worker processes must see the books


def _run() -> JobRun | None:
    return JobRun.objects.filter(kind="crediting", key=DAY.isoformat()).first()


def assert_credited_exactly_once(pending_credits: int) -> None:
    positions = Position.objects.count()
    day_rows = DailyValuation.objects.filter(valuation_date=DAY)
    assert day_rows.count() == positions
    assert day_rows.values("position_id").distinct().count() == positions
    entries = LedgerEntry.objects.filter(valuation_date=DAY)
    assert entries.count() == pending_credits  # one fund each: the default fund
    assert entries.values("pending_id").distinct().count() == pending_credits
    assert not PendingTransaction.objects.filter(status="pending").exists()
    assert books_verify() == []
    assert _run().status == "done"


def test_two_workers_at_once_credit_the_date_once_and_the_second_is_told_busy(monkeypatch):
    built = generate(participants=100, paid=1.0)
    inside, release = threading.Event(), threading.Event()
    real_credits = crediting._credits_sql

    def credits_held_open(day, actor):
        inside.set()
        release.wait(10)
        return real_credits(day, actor)

    monkeypatch.setattr(crediting, "_credits_sql", credits_held_open)
    outcome: dict[str, str] = {}

    def worker(name: str) -> None:
        try:
            outcome[name] = credit_valuation_date(valuation_date=DAY).status
        except JobBusy:
            outcome[name] = "busy"
        finally:
            connection.close()  # each thread has its own connection

    first = threading.Thread(target=worker, args=("first",))
    first.start()
    assert inside.wait(10), "the first worker never reached its credits"
    second = threading.Thread(target=worker, args=("second",))
    second.start()
    second.join(10)
    release.set()
    first.join(30)

    assert outcome == {"first": "done", "second": "busy"}
    assert _run().attempts == 1
    assert_credited_exactly_once(built["pending_credits"])


def _advisory_locks_held() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_lock_is_released_whether_the_date_is_credited_refused_or_the_run_fails(monkeypatch):
    generate(participants=5, paid=1.0)
    later = credit_valuation_date(
        valuation_date=DAY + dt.timedelta(days=4)
    )  # 2026-01-20: the 16th comes first
    assert later.status == "refused" and _advisory_locks_held() == 0
    monkeypatch.setattr(crediting, "_credits_sql", lambda day, actor: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        credit_valuation_date(valuation_date=DAY)
    assert _advisory_locks_held() == 0
    assert (_run().status, _run().stats["stopped_on"]) == ("failed", "credits")
    monkeypatch.undo()
    assert credit_valuation_date(valuation_date=DAY).status == "done"
    assert _advisory_locks_held() == 0
    assert credit_valuation_date(valuation_date=DAY).status == "done"  # already done: nothing to do
    assert _advisory_locks_held() == 0


def test_a_date_is_not_refused_while_the_previous_date_is_being_recorded_done():
    # The reads taken with the lock may predate the previous worker's last commit: the job looks again.
    generate(participants=5, paid=1.0)
    assert credit_valuation_date(valuation_date=DAY).status == "done"
    nxt = DAY + dt.timedelta(days=4)
    for fund_id, price in FundPrice.objects.filter(date=DAY).values_list("fund_id", "price"):
        FundPrice.objects.create(
            fund_id=fund_id, date=nxt, price=price, loaded_at=timezone.now(), source="test"
        )
    JobRun.objects.filter(key=DAY.isoformat()).update(
        status="running"
    )  # as if its finish were not committed yet
    updating, done = threading.Event(), threading.Event()

    def previous_worker_finishing() -> None:
        with transaction.atomic():
            JobRun.objects.filter(key=DAY.isoformat()).update(status="done")
            updating.set()
            done.wait(0.5)  # the next date's job starts meanwhile and must wait for this commit
        connection.close()

    finisher = threading.Thread(target=previous_worker_finishing)
    finisher.start()
    assert updating.wait(5)
    run = credit_valuation_date(valuation_date=nxt)
    finisher.join(5)
    assert (run.status, run.message) == ("done", "credited")


def test_two_workers_racing_for_the_same_date_do_the_work_once():
    built = generate(participants=300, paid=1.0)
    start = threading.Barrier(2)
    outcome: list[str] = []

    def worker() -> None:
        try:
            start.wait(5)
            outcome.append(credit_valuation_date(valuation_date=DAY).status)
        except JobBusy:
            outcome.append("busy")
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert sorted(outcome) in (["busy", "done"], ["done", "done"])
    assert _run().attempts == 1  # the later one found the date done and did nothing
    assert_credited_exactly_once(built["pending_credits"])


def test_a_run_cut_after_its_credits_resumes_without_posting_them_twice(monkeypatch):
    built = generate(participants=50, paid=1.0)

    def worker_lost(day, *, resuming=True):
        raise RuntimeError("worker lost before the valuation")

    monkeypatch.setattr(crediting, "_valuations_sql", worker_lost)
    with pytest.raises(RuntimeError):
        credit_valuation_date(valuation_date=DAY)
    assert (_run().status, _run().stats["stopped_on"]) == ("failed", "valuation")
    assert LedgerEntry.objects.filter(valuation_date=DAY).count() == built["pending_credits"]
    assert not DailyValuation.objects.filter(valuation_date=DAY).exists()

    monkeypatch.undo()
    run = credit_valuation_date(valuation_date=DAY)
    assert (run.status, run.attempts, run.stats["credits"]) == ("done", 2, 0)
    assert_credited_exactly_once(built["pending_credits"])


def test_a_run_cut_after_its_valuation_resumes_without_writing_a_row_twice(monkeypatch):
    built = generate(participants=50, paid=1.0)
    real_finish = jobs.job_finish

    def finish_lost(run, **kwargs):
        if kwargs.get("status") == "done":
            raise RuntimeError("worker lost before recording the run done")
        return real_finish(run, **kwargs)

    monkeypatch.setattr(jobs, "job_finish", finish_lost)
    with pytest.raises(RuntimeError):
        credit_valuation_date(valuation_date=DAY)
    assert (_run().status, _run().stats["stopped_on"]) == ("failed", "valuation")
    rows = DailyValuation.objects.filter(valuation_date=DAY).count()
    assert rows == Position.objects.count()

    monkeypatch.undo()
    run = credit_valuation_date(valuation_date=DAY)
    assert (run.status, run.attempts, run.stats["positions_valued"]) == ("done", 2, 0)
    assert_credited_exactly_once(built["pending_credits"])


def test_a_valuation_hint_that_missed_rows_already_written_falls_back_to_skipping_them():
    # The "resuming" hint is read under the lock but may predate a crashed attempt's last commit.
    generate(participants=20, paid=0.0)
    assert crediting._valuations_sql(DAY, resuming=False) == Position.objects.count()
    assert crediting._valuations_sql(DAY, resuming=False) == 0
    assert DailyValuation.objects.filter(valuation_date=DAY).count() == Position.objects.count()


@pytest.mark.slow
@pytest.mark.worker
def test_a_worker_killed_in_the_middle_of_crediting_loses_and_duplicates_nothing(tmp_path):
    # The smallest books that reach the kill window: a second client holds the row of the first pending credit,
    # so the worker's credits statement waits on it (its transaction open, the claim made) when the worker is
    # killed; no race against the statement's speed, so 50 participants (100 credits) do where 5,000 were needed.
    built = generate(participants=50, paid=1.0)
    first_pending = (
        PendingTransaction.objects.filter(status="pending").order_by("id").values_list("id", flat=True)[0]
    )
    queue = unique_queue("test-crediting")
    try:
        with celery_worker(queue=queue, log=tmp_path / "first.log") as first:
            with row_held(
                database_url_for_workers(),
                "SELECT id FROM books_pendingtransaction WHERE id = %s FOR UPDATE",
                [first_pending],
            ):
                credit_valuation_date_task.apply_async(args=[DAY.isoformat()], queue=queue)
                wait_for(
                    lambda: (r := _run()) is not None and r.status == "running",
                    timeout=20,
                    what="the first worker to claim the date",
                    worker=first,
                )
                wait_for(
                    lambda: _waiting_on_lock("WITH todo AS"),
                    timeout=20,
                    worker=first,
                    what="the first worker's credits statement to be under way",
                )
                first.kill()
            # The row is free again: the killed worker's statement ends, its server process finds the client gone
            # and rolls the transaction back.
        killed = _run()
        assert killed.status == "running"
        assert killed.attempts == 1

        # The message was never acknowledged: a new worker restores it once the visibility timeout
        # (one second here) has passed, and runs the task again.
        with celery_worker(
            queue=queue, log=tmp_path / "second.log", env={"CELERY_VISIBILITY_TIMEOUT": "1"}
        ) as second:
            wait_for(
                lambda: _run().status == "done",
                timeout=40,
                what="the redelivered task to finish",
                interval=0.2,
                worker=second,
            )
    finally:
        purge_queue(queue)

    run = _run()
    assert run.attempts >= 2
    assert run.stats["positions_valued"] == built["positions"]
    assert_credited_exactly_once(built["pending_credits"])


@pytest.mark.worker
def test_a_task_that_finds_crediting_busy_comes_back_instead_of_dropping_the_date(tmp_path):
    # A killed worker's last statement can still be running on the server when the task is redelivered.
    built = generate(participants=50, paid=1.0)
    queue = unique_queue("test-crediting-busy")
    lock_id = _lock_id("crediting")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock_id])
    try:
        with celery_worker(queue=queue, log=tmp_path / "worker.log") as worker:
            credit_valuation_date_task.apply_async(args=[DAY.isoformat()], queue=queue)
            wait_for(
                lambda: "Retry in" in worker.output(),
                timeout=20,
                what="the busy task to be retried",
                worker=worker,
            )
            assert _run() is None
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])
            wait_for(
                lambda: (r := _run()) is not None and r.status == "done",
                timeout=20,
                what="the retried task to credit the date",
                interval=0.2,
                worker=worker,
            )
    finally:
        purge_queue(queue)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")
    assert_credited_exactly_once(built["pending_credits"])
