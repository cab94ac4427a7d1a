"""Reports prepared as files (core.report_files, issue 15): one job for every report, its CSV a staff Document.

The job writes the same bytes as the page's direct (streamed) download for the same parameters, records its
progress per chunk of rows, returns the same document when run again, fails with the reason, and neither a
participant nor a signed-in user without a staff role can queue it or download what it made.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model

from books.liability import plan_liabilities
from books.report_files import liability_summary
from core import report_files
from core.models import Document, JobRun
from core.report_files import JOB_KIND, report_file_run
from tests.books.test_contributions_and_vesting import cc_account
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
AS_OF = "2026-04-30"
NOW = dt.datetime(2026, 5, 1, 12, tzinfo=dt.UTC)


@pytest.fixture
def liability_data(edcp, toy_basis, no_key_employees):
    cc_account(edcp, 2)
    cc_account(edcp, 1)
    brp_participation()


def test_the_job_writes_the_csv_as_a_staff_document_and_keeps_the_figures_of_the_page(client, liability_data):
    sign_in(client, staff_user("aud", "auditor"))
    run = report_file_run(name="liability", args=[AS_OF], now=NOW)
    assert (run.kind, run.key, run.status) == (JOB_KIND, f"liability:{AS_OF}", JobRun.Status.DONE)
    document = Document.objects.get(pk=run.stats["document"])
    assert (document.content_type, document.extension, document.person_id) == ("text/csv", "csv", None)
    response = client.get(f"/documents/{document.pk}/")
    assert response["Content-Type"] == "text/csv"
    assert f'filename="{document.kind}-{document.pk}.csv"' in response["Content-Disposition"]
    assert b"BRP,BRP 8.1," in response.content
    # The page's figures, kept with the run: the same answer as the file's rows (books.liability).
    reports = plan_liabilities(as_of=dt.date.fromisoformat(AS_OF))
    kept = JobRun.objects.get(pk=run.pk).stats["summary"]
    assert kept == liability_summary(reports, as_of=dt.date.fromisoformat(AS_OF))
    assert [p["code"] for p in kept["plans"]] == [r.plan.code for r in reports]
    assert kept["total"] == f"{sum(r.total for r in reports):.2f}"
    lines = response.content.decode().splitlines()[1:]
    assert (
        sum(len(p["accounts"]) + p["benefit_count"] for p in kept["plans"]) == len(lines) == run.stats["rows"]
    )


def test_progress_is_recorded_per_chunk_of_rows(liability_data, monkeypatch):
    seen: list[tuple[int, int]] = []
    real = report_files.job_progress

    def recording(run, *, done, total, message=""):
        seen.append((done, total))
        real(run, done=done, total=total, message=message)

    monkeypatch.setattr(report_files, "CHUNK_ROWS", 1)
    monkeypatch.setattr(report_files, "job_progress", recording)
    run = report_file_run(name="liability", args=[AS_OF], now=NOW)
    total = run.stats["rows"]
    assert total >= 3
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen[1 : total + 1]] == list(range(1, total + 1))
    stored = JobRun.objects.get(pk=run.pk)
    assert (stored.progress_done, stored.progress_total, stored.percent) == (total, total, 100)


def test_a_rerun_returns_the_same_document(liability_data):
    first = report_file_run(name="liability", args=[AS_OF], now=NOW)
    again = report_file_run(name="liability", args=[AS_OF], now=NOW)
    assert again.stats["document"] == first.stats["document"]
    assert Document.objects.filter(kind="report-liability").count() == 1
    assert JobRun.objects.filter(kind=JOB_KIND).count() == 1


def test_the_button_queues_the_job_and_its_page_links_the_file(
    client, liability_data, eager, django_capture_on_commit_callbacks
):
    sign_in(client, staff_user("aud", "auditor"))
    page = client.get(f"/staff/books/liability/?as_of={AS_OF}").content.decode()
    assert "Compute the report" in page and 'name="as_of" value="2026-04-30"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/staff/reports/liability/prepare", {"as_of": AS_OF})
    assert response.status_code == 302 and response["Location"] == f"/staff/jobs/report/liability:{AS_OF}/"
    run = JobRun.objects.get(kind=JOB_KIND, key=f"liability:{AS_OF}")
    assert run.status == JobRun.Status.DONE
    detail = client.get(response["Location"]).content.decode()
    assert f"<h1>Plan liability, {AS_OF}</h1>" in detail  # the report's label, not the job's key
    assert (
        f'href="/documents/{run.stats["document"]}/"' in detail and "plan-liability-2026-04-30.csv" in detail
    )
    # Asked again: the same run and document, nothing queued twice.
    with django_capture_on_commit_callbacks(execute=True) as queued:
        client.post("/staff/reports/liability/prepare", {"as_of": AS_OF})
    assert queued == [] and Document.objects.filter(kind="report-liability").count() == 1


def test_the_button_of_the_page_comes_back_to_the_page_never_elsewhere(
    client, liability_data, eager, django_capture_on_commit_callbacks
):
    sign_in(client, staff_user("aud", "auditor"))
    back = f"/staff/books/liability/?as_of={AS_OF}&queued=1"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/staff/reports/liability/prepare", {"as_of": AS_OF, "next": back})
    assert response["Location"] == back
    response = client.post(
        "/staff/reports/liability/prepare", {"as_of": AS_OF, "next": "https://evil.example/"}
    )
    assert response["Location"] == f"/staff/jobs/report/liability:{AS_OF}/"
    response = client.post("/staff/reports/liability/prepare", {"as_of": "April", "next": back})
    assert response["Location"] == back  # refused: back to the page, which shows why


def test_a_failed_run_is_shown_on_the_page_with_its_reason_and_can_be_computed_again(
    client, liability_data, monkeypatch
):
    def broken(*args):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(report_files, "report_file", lambda name: _with_rows(name, broken))
    with pytest.raises(RuntimeError):
        report_file_run(name="liability", args=[AS_OF], now=NOW)
    monkeypatch.undo()
    sign_in(client, staff_user("aud", "auditor"))
    page = client.get(f"/staff/books/liability/?as_of={AS_OF}").content.decode()
    assert "the disk is full" in page and "Compute again" in page


def test_a_participant_or_a_user_without_a_staff_role_can_neither_queue_nor_download(
    client, edcp, liability_data
):
    run = report_file_run(name="liability", args=[AS_OF], now=NOW)
    document = run.stats["document"]
    part, _ = cc_account(edcp, 3)
    participant = get_user_model().objects.create_user("p1", password="x")
    part.person.user = participant
    part.person.save()
    nobody = get_user_model().objects.create_user("nobody", password="a-long-test-password")
    for user in (participant, nobody):
        client.logout()
        sign_in(client, user)
        assert client.post("/staff/reports/liability/prepare", {"as_of": "2026-04-29"}).status_code in (
            302,
            403,
            404,
        )
        assert client.get(f"/documents/{document}/").status_code == 404
    assert not JobRun.objects.filter(key="liability:2026-04-29").exists()


def test_a_failing_report_leaves_the_run_failed_with_the_reason(liability_data, monkeypatch):
    def broken(*args):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(report_files, "report_file", lambda name: _with_rows(name, broken))
    with pytest.raises(RuntimeError):
        report_file_run(name="liability", args=[AS_OF], now=NOW)
    run = JobRun.objects.get(kind=JOB_KIND, key=f"liability:{AS_OF}")
    assert run.status == JobRun.Status.FAILED
    assert (
        "RuntimeError: the disk is full" in run.message
        and run.stats["error"] == "RuntimeError: the disk is full"
    )
    assert run.stats["task"] == report_files.TASK and run.stats["args"] == ["liability", AS_OF]  # retryable


def _with_rows(name, rows):
    return replace(report_files.report_files()[name], rows=rows)


def test_a_parameter_that_does_not_read_is_refused_before_anything_is_queued(client, liability_data):
    sign_in(client, staff_user("aud", "auditor"))
    response = client.post("/staff/reports/liability/prepare", {"as_of": "April"}, follow=True)
    assert "does not read" in response.content.decode()
    response = client.post("/staff/reports/liability/prepare", {"as_of": "0001-01-01"}, follow=True)
    assert "is outside" in response.content.decode()
    assert client.post("/staff/reports/no-such-report/prepare", {"as_of": AS_OF}).status_code == 404
    assert not JobRun.objects.filter(kind=JOB_KIND).exists()


def test_a_run_whose_worker_vanished_is_retryable_and_prepared_again(
    client, liability_data, eager, django_capture_on_commit_callbacks, monkeypatch
):
    def vanished(*args):
        raise SystemExit(
            "the worker was killed"
        )  # not an Exception: the run is left running, as a SIGKILL leaves it

    monkeypatch.setattr(report_files, "report_file", lambda name: _with_rows(name, vanished))
    with pytest.raises(SystemExit):
        report_file_run(name="liability", args=[AS_OF], now=NOW)
    monkeypatch.undo()
    run = JobRun.objects.get(kind=JOB_KIND, key=f"liability:{AS_OF}")
    assert run.status == JobRun.Status.RUNNING and run.stats["args"] == ["liability", AS_OF]
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=NOW - dt.timedelta(days=1))
    sign_in(client, staff_user("aud", "auditor"))
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/staff/reports/liability/prepare", {"as_of": AS_OF})
    run.refresh_from_db()
    assert run.status == JobRun.Status.DONE and run.attempts == 2 and run.stats["document"]
