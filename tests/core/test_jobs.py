"""Every job ends done, refused or failed, and staff can act on it (issue 9, section 2).

A crediting or payment run that raises is recorded `failed` with the error and the item it stopped
on, and its lock is free again; a run without progress for longer than its time limit is stale; the
job pages list failed and stale runs first; a user who may run jobs retries a failed run or runs a
due day now through the same task, claim and lock as the scheduled run, and a second retry changes
nothing.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from books.models import DailyValuation, LedgerEntry, Source
from books.services import crediting
from books.services.accounts import credit_create
from books.tasks import credit_valuation_date_task
from core.jobs import JobBusy, job_is_stale, job_lock, job_time_limit
from core.models import AuditEvent, JobRun
from payments.services import processing
from payments.tasks import process_day_task
from tests.factories import FundFactory, ParticipationFactory, price
from tests.payments.factories import staff_user
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

JAN15 = dt.date(2026, 1, 15)


# The apps a crediting run touches: a transactional test's teardown empties only their tables (with what refers to
# them), not every table of the project, and skips the post-migrate signal (tests/conftest.py puts the catalog back).
CREDITING_APPS = ["core", "plans", "participants", "elections", "books"]


@pytest.fixture
def credit_due(edcp):
    """A 1,000.00 deferral waiting for the Valuation Date of January 15, 2026, whose price is loaded."""
    fund = FundFactory(plan=edcp, code="SV", is_default=True)
    price(fund, JAN15, "20.00")
    participation = ParticipationFactory(plan=edcp)
    credit_create(
        participation=participation,
        account_name="retirement_termination",
        source=Source.DEFERRAL,
        amount=Decimal("1000.00"),
        effective_date=JAN15,
        idempotency_key="jobs:1",
        actor="test",
    )
    return participation


@pytest.fixture
def valuation_breaks(monkeypatch):
    """The valuation phase of crediting raises, as a full disk or a bug would."""

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(crediting, "_valuations_sql", broken)
    monkeypatch.setattr(crediting, "_valuations_python", broken)
    return monkeypatch


def _lock_is_free(name: str) -> bool:
    try:
        with job_lock(name):
            return True
    except JobBusy:
        return False


def test_a_crediting_task_that_raises_leaves_the_run_failed_with_the_error_and_the_phase(
    credit_due, eager, valuation_breaks
):
    result = credit_valuation_date_task.apply(args=[JAN15.isoformat()])

    assert result.failed() and isinstance(result.result, OSError)
    run = JobRun.objects.get(kind="crediting", key=JAN15.isoformat())
    assert run.status == JobRun.Status.FAILED
    assert run.stats["stopped_on"] == "valuation"
    assert "OSError: No space left on device" in run.message and "valuation" in run.message
    assert run.finished_at is not None
    assert _lock_is_free("crediting")


def test_a_payment_task_that_raises_leaves_the_run_failed_with_the_step_it_stopped_on(
    credit_due, eager, monkeypatch
):
    def broken(**kwargs):
        raise RuntimeError("schedule table unreadable")

    monkeypatch.setattr(processing, "schedules_ensure", broken)
    day = dt.date(2026, 1, 16)

    result = process_day_task.apply(args=[day.isoformat()])

    assert result.failed()
    run = JobRun.objects.get(kind="payments", key=day.isoformat())
    assert run.status == JobRun.Status.FAILED
    assert run.stats["stopped_on"] == "creating payment schedules"
    assert "RuntimeError: schedule table unreadable" in run.message
    assert _lock_is_free("payments")


def _run(*, status: str, heartbeat_ago: dt.timedelta, key: str, kind: str = "crediting") -> JobRun:
    now = timezone.now()
    return JobRun.objects.create(
        kind=kind,
        key=key,
        status=status,
        attempts=1,
        worker="gone:123",
        started_at=now - heartbeat_ago - dt.timedelta(minutes=5),
        heartbeat_at=now - heartbeat_ago,
    )


def test_a_running_job_without_progress_for_longer_than_its_time_limit_is_stale(db):
    limit = job_time_limit("crediting")
    vanished = _run(status="running", heartbeat_ago=limit + dt.timedelta(minutes=1), key="2026-01-15")
    working = _run(status="running", heartbeat_ago=limit - dt.timedelta(minutes=1), key="2026-01-16")
    now = timezone.now()
    assert job_is_stale(vanished, now=now)
    assert not job_is_stale(working, now=now)


@pytest.fixture
def administrator(db):
    client = Client()
    sign_in(client, staff_user("ada", "administrator"))
    return client


@pytest.fixture
def auditor(db):
    client = Client()
    sign_in(client, staff_user("aud", "auditor"))
    return client


def test_the_dashboard_lists_failed_then_stale_runs_before_newer_ones_and_shows_them_as_such(administrator):
    limit = job_time_limit("crediting")
    _run(status="done", heartbeat_ago=dt.timedelta(0), key="2026-03-02")
    _run(status="running", heartbeat_ago=limit + dt.timedelta(hours=1), key="2026-01-20")
    _run(status="failed", heartbeat_ago=limit * 3, key="2026-01-15")

    for page in ("core:dashboard", "core:job_runs"):
        body = administrator.get(reverse(page)).content.decode()
        failed, stale, done = body.index("2026-01-15"), body.index("2026-01-20"), body.index("2026-03-02")
        assert failed < stale < done
        assert ">stale</span>" in body and "no progress since" in body


def test_retry_from_the_page_finishes_the_failed_day_once(
    credit_due, eager, valuation_breaks, administrator, django_capture_on_commit_callbacks
):
    credit_valuation_date_task.apply(args=[JAN15.isoformat()])
    run = JobRun.objects.get(kind="crediting", key=JAN15.isoformat())
    assert run.status == JobRun.Status.FAILED
    assert (
        'action="{}"'.format(reverse("core:job_retry", args=[run.pk]))
        in administrator.get(reverse("core:dashboard")).content.decode()
    )
    valuation_breaks.undo()  # the disk is cleaned up

    with django_capture_on_commit_callbacks(execute=True):
        response = administrator.post(reverse("core:job_retry", args=[run.pk]))

    assert response.status_code == 302
    assert response["Location"] == reverse("core:job_detail", args=["crediting", JAN15.isoformat()])
    run.refresh_from_db()
    assert (run.status, run.attempts) == (JobRun.Status.DONE, 2)
    assert "stopped_on" not in run.stats
    entries, valuations = LedgerEntry.objects.count(), DailyValuation.objects.count()
    assert (entries, valuations) == (1, 1)
    assert AuditEvent.objects.filter(action="job.retry", actor_label="ada").count() == 1
    page = administrator.get(response["Location"]).content.decode()
    assert "data-progress-url" in page and ">done</span>" in page

    with django_capture_on_commit_callbacks(execute=True) as queued:
        again = administrator.post(reverse("core:job_retry", args=[run.pk]), follow=True)

    assert queued == []
    assert "already done: nothing to run again" in again.content.decode()
    run.refresh_from_db()
    assert (run.status, run.attempts) == (JobRun.Status.DONE, 2)
    assert (LedgerEntry.objects.count(), DailyValuation.objects.count()) == (entries, valuations)


def test_a_running_job_that_is_not_stale_is_not_retried(administrator, django_capture_on_commit_callbacks):
    run = _run(status="running", heartbeat_ago=dt.timedelta(seconds=5), key="2026-01-15")
    with django_capture_on_commit_callbacks(execute=True) as queued:
        response = administrator.post(reverse("core:job_retry", args=[run.pk]), follow=True)
    assert queued == []
    assert "is running" in response.content.decode()


def test_run_now_from_the_page_credits_the_date_and_processes_the_payment_day(
    credit_due, eager, administrator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = administrator.post(reverse("core:job_run_now"), {"kind": "crediting", "day": "2026-01-15"})
    assert response["Location"] == reverse("core:job_detail", args=["crediting", "2026-01-15"])
    assert JobRun.objects.get(kind="crediting", key="2026-01-15").status == JobRun.Status.DONE
    assert LedgerEntry.objects.count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        administrator.post(reverse("core:job_run_now"), {"kind": "payments", "day": "2026-01-16"})
    assert JobRun.objects.get(kind="payments", key="2026-01-16").status == JobRun.Status.DONE
    assert AuditEvent.objects.filter(action="job.run_now").count() == 2


def test_run_now_refuses_a_day_not_yet_due(administrator, django_capture_on_commit_callbacks):
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        response = administrator.post(
            reverse("core:job_run_now"), {"kind": "payments", "day": tomorrow.isoformat()}, follow=True
        )
    assert queued == []
    assert "is not due yet" in response.content.decode()
    assert not JobRun.objects.exists()


def test_a_role_without_the_run_jobs_capability_is_refused_and_offered_no_button(auditor):
    run = _run(status="failed", heartbeat_ago=dt.timedelta(hours=3), key="2026-01-15")

    assert auditor.post(reverse("core:job_retry", args=[run.pk])).status_code == 403
    assert (
        auditor.post(reverse("core:job_run_now"), {"kind": "crediting", "day": "2026-01-15"}).status_code
        == 403
    )
    for page in ("core:dashboard", "core:job_runs"):
        body = auditor.get(reverse(page)).content.decode()
        assert "2026-01-15" in body
        assert reverse("core:job_retry", args=[run.pk]) not in body
        assert reverse("core:job_run_now") not in body
    run.refresh_from_db()
    assert (run.status, run.attempts) == (JobRun.Status.FAILED, 1)


@pytest.mark.django_db(transaction=True, available_apps=CREDITING_APPS)
def test_in_production_the_failure_and_the_lock_release_are_one_committed_statement(credit_due, monkeypatch):
    """No transaction around the job, as in a worker: the failure is committed and the lock is free.
    (It stops before posting anything: the test's flush cannot delete posted entries.)"""

    def broken(*args, **kwargs):
        raise ConnectionResetError("server closed the connection")

    monkeypatch.setattr(crediting, "_credits_sql", broken)
    monkeypatch.setattr(crediting, "_credits_python", broken)
    assert not connection.in_atomic_block
    with pytest.raises(ConnectionResetError):
        crediting.credit_valuation_date(valuation_date=JAN15)
    run = JobRun.objects.get(kind="crediting")
    assert (run.status, run.stats["stopped_on"]) == (JobRun.Status.FAILED, "credits")
    assert _lock_is_free("crediting")


def test_a_task_that_claims_no_run_leaves_a_failed_run_that_a_retry_closes(
    eager, monkeypatch, administrator, django_capture_on_commit_callbacks
):
    from claims import tasks as claims_tasks

    def broken(**kwargs):
        raise TimeoutError("mail server did not answer")

    monkeypatch.setattr(claims_tasks, "claims_flag_deadlines", broken)
    assert claims_tasks.flag_deadlines_task.apply().failed()

    run = JobRun.objects.get(kind="claims.flag_deadlines")
    assert (run.status, run.key) == (JobRun.Status.FAILED, timezone.localdate().isoformat())
    assert "TimeoutError: mail server did not answer" in run.message
    assert (
        reverse("core:job_retry", args=[run.pk])
        in administrator.get(reverse("core:job_runs")).content.decode()
    )
    monkeypatch.undo()

    with django_capture_on_commit_callbacks(execute=True):
        administrator.post(reverse("core:job_retry", args=[run.pk]))

    run.refresh_from_db()
    assert (run.status, run.message) == (JobRun.Status.DONE, "done on a later attempt")


@pytest.mark.django_db(transaction=True, available_apps=CREDITING_APPS)
def test_a_job_whose_database_connection_dies_is_recorded_failed_on_a_new_connection(credit_due, monkeypatch):
    """The server ends the worker's session in the middle of the run (a restart): the run still says so."""
    if connection.vendor != "postgresql":
        pytest.skip("terminating a server session is PostgreSQL's")

    def session_killed(*args, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    monkeypatch.setattr(crediting, "_credits_sql", session_killed)
    with pytest.raises(Exception) as raised:
        crediting.credit_valuation_date(valuation_date=JAN15)

    assert not isinstance(raised.value, AssertionError)
    run = JobRun.objects.get(kind="crediting")
    assert (run.status, run.stats["stopped_on"]) == (JobRun.Status.FAILED, "credits")
    assert _lock_is_free("crediting")
