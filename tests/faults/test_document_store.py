"""The document store unwritable while a confirmation PDF renders in a real worker: the task fails visibly, naming
the reason (a failed JobRun of the task, shown with its reason and a retry button on the staff jobs page; the
traceback in the worker's log) and stores nothing; once the store is writable again, the retry from the staff page
stores the same bytes as a render now gives, under their hash, and closes the failed run; a second send finds that
same document. verify_books finds nothing.

Unwritable: the media folder is made immutable (chattr +i), which refuses writes even to root, as a read-only
volume does.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from celery import current_app
from django.db import connection
from django.test import Client
from django.urls import reverse

from core.models import Document, JobRun
from core.pdf import render_pdf
from elections import services as elections_services
from elections.pdf import confirmation_context
from elections.services import deferral_election_submit
from elections.tasks import election_confirmation_task
from tests.elections.factories import at, participant
from tests.faults.conftest import verify_books_command
from tests.payments.factories import staff_user
from tests.signin import sign_in
from tests.workers import celery_worker, purge_queue, unique_queue, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.worker]


@contextlib.contextmanager
def unwritable(folder: Path):
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"this file system cannot make a folder immutable: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_unwritable_document_store_fails_the_render_with_its_reason_and_the_retry_stores_the_same_bytes(
    fault_books, tmp_path, monkeypatch
):
    # The test sends the render task itself, to its own worker's queue; a retry from the staff page sends the
    # task by its name with its default options, which here name that queue too.
    monkeypatch.setattr(elections_services, "confirmation_queue", lambda election: None)
    queue = unique_queue("fault-documents")
    task = current_app.tasks[election_confirmation_task.name]
    monkeypatch.setattr(task, "_exec_options", {**task._get_exec_options(), "queue": queue})
    administrator = sign_in(Client(), staff_user("ada", "administrator"))
    election = deferral_election_submit(
        participation=participant(username="alice", first_name="Alice", last_name="Archer"),
        plan_year=2027,
        percentages={"base_salary": 12},
        accounts={"retirement_termination": 100},
        submitted_at=at(2026, 11, 20, 14, 5),
        channel="portal",
        actor="alice",
    )
    context = confirmation_context(election)
    expected = render_pdf(context["template"], context)
    connection.close()
    media = tmp_path / "media"
    media.mkdir()
    args = [election._meta.label, election.pk]
    try:
        with celery_worker(
            queue=queue, log=tmp_path / "worker.log", env={"MEDIA_ROOT": str(media)}
        ) as worker:
            with unwritable(media):
                election_confirmation_task.apply_async(args=args, queue=queue)
                wait_for(
                    lambda: re.search(
                        r"elections\.render_confirmation\[[^\]]+\] raised unexpected", worker.output()
                    ),
                    timeout=60,
                    worker=worker,
                    what="the render to fail",
                )
            # The reason, with the folder it could not write, is in the worker's log (with the traceback).
            assert (
                f"PermissionError: [Errno 1] Operation not permitted: '{media / 'documents'}'"
                in worker.output()
            )
            assert not Document.objects.exists() and not any(media.iterdir())  # nothing half-stored
            # ... and recorded: a failed run of the task, with the reason, that staff see first and can retry.
            reason = "PermissionError: [Errno 1] Operation not permitted"
            failed = wait_for(
                lambda: JobRun.objects.filter(kind=task.name, status=JobRun.Status.FAILED).first(),
                timeout=30,
                worker=worker,
                what="the failed run to be recorded",
            )
            assert failed.key == ",".join(str(a) for a in args) and failed.attempts == 1
            assert reason in failed.message and str(media / "documents") in failed.message
            assert failed.stats["args"] == args and failed.stats["error"].startswith(reason)
            page = administrator.get(reverse("core:job_runs")).content.decode()
            assert task.name in page and reason in page and ">failed</span>" in page
            assert 'action="{}"'.format(reverse("core:job_retry", args=[failed.pk])) in page
            connection.close()

            retried = administrator.post(
                reverse("core:job_retry", args=[failed.pk])
            )  # the retry, from the page
            assert retried.status_code == 302, retried.content.decode()[:2000]
            wait_for(
                lambda: Document.objects.exists(),
                timeout=60,
                worker=worker,
                what="the retry to store the document",
            )
            wait_for(
                lambda: JobRun.objects.get(pk=failed.pk).status == JobRun.Status.DONE,
                timeout=30,
                worker=worker,
                what="the retry to close the failed run",
            )
            election_confirmation_task.apply_async(args=args, queue=queue)  # and again: the same document
            wait_for(
                lambda: (
                    len(re.findall(r"elections\.render_confirmation\[[^\]]+\] succeeded", worker.output()))
                    == 2
                ),
                timeout=60,
                worker=worker,
                what="the second retry",
            )
    finally:
        purge_queue(queue)

    documents = list(Document.objects.all())
    assert len(documents) == 1, [(d.kind, d.sha256, d.created_by, d.created_at) for d in documents]
    document = documents[0]
    run = JobRun.objects.get(pk=failed.pk)
    assert (run.status, run.message) == (JobRun.Status.DONE, "done on a later attempt")
    assert (
        JobRun.objects.filter(kind=task.name).count() == 1
    )  # the second send found the document: no new run
    stored = (media / document.path).read_bytes()
    assert stored == expected and document.sha256 == hashlib.sha256(expected).hexdigest()
    verified = verify_books_command(fault_books)
    assert verified.returncode == 0, verified.stdout + verified.stderr
