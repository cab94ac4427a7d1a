"""The staff pages of a conversion (issue 14): upload and dry run, maker-checker apply, reconciliation PDF."""

from __future__ import annotations

import io
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase
from django.urls import reverse
from django.utils import timezone

from conversion import staff
from conversion.models import ConversionException, ConversionRun
from conversion.staff import conversion_job, run_reviewed
from core.jobs import job_retry
from core.models import AuditEvent, Document, JobRun
from participants.models import Person
from tests.claims.factories import user_in
from tests.conftest import _tasks_eager
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
PACKAGE = Path(__file__).parent / "sample" / "package"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def _zip(edit: dict[str, str] | None = None) -> SimpleUploadedFile:
    """The sample package as a zip of its folder; `edit` replaces a file's text."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(PACKAGE.glob("*.csv")):
            text = (edit or {}).get(path.name, path.read_text())
            zf.writestr(f"package/{path.name}", text)
    return SimpleUploadedFile("package.zip", out.getvalue(), content_type="application/zip")


def _client(user) -> Client:
    return sign_in(Client(), user)


def _package_total() -> str:
    for line in (PACKAGE / "control.csv").read_text().splitlines():
        if line.startswith("positions.csv,market_value,,,,,,"):
            return line.rsplit(",", 1)[1]
    raise AssertionError("no package total in the sample's control file")


@pytest.fixture(autouse=True)
def _jobs(eager_jobs):
    """The dry run and the apply are jobs: here a queued job runs in this process when its request commits."""


def _upload(client: Client, package) -> ConversionRun:
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(reverse("conversion_staff:upload"), {"package": package})
    assert response.status_code == 302, response.content[:500]
    assert response["Location"].startswith("/staff/conversion/jobs/dry-run:")
    page = client.get(response["Location"])  # the job is done: its page leads to the run
    run = ConversionRun.objects.order_by("-id").first()
    assert page.status_code == 302 and page["Location"] == reverse("conversion_staff:run", args=[run.pk])
    return run


def _apply(client: Client, url: str, reviewed: str):
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, {"reviewed": reviewed})


def test_an_upload_runs_the_dry_run_and_lists_every_exception_with_file_line_and_rule():
    admin = user_in("administrator", "maker")
    control = (PACKAGE / "control.csv").read_text().splitlines()
    line = next(i for i, text in enumerate(control) if text.startswith("positions.csv,market_value,EDCP,"))
    head, total = control[line].rsplit(",", 1)
    control[line] = f"{head},{Decimal(total) + Decimal('100.00')}"
    client = _client(admin)
    run = _upload(client, _zip({"control.csv": "\n".join(control) + "\n"}))
    assert run.dry_run and run.status == ConversionRun.Status.REFUSED and run.uploaded_by == admin
    exc = ConversionException.objects.get(run=run)
    assert (exc.file, exc.line, exc.code) == ("control.csv", line + 1, "control_total_mismatch")
    page = client.get(reverse("conversion_staff:run", args=[run.pk])).content.decode()
    assert "control_total_mismatch" in page and exc.message in page and f">{line + 1}<" in page
    assert "Review and apply" not in page
    assert not Person.objects.exists()
    listing = client.get(reverse("conversion_staff:runs")).content.decode()
    assert f"Run {run.pk}" in listing and "maker" in listing and "Refused" in listing
    assert AuditEvent.objects.filter(action="conversion.upload", object_id=str(run.pk)).exists()


def test_the_uploader_cannot_apply_and_another_committee_member_applies_after_the_summary():
    both = user_in("administrator", "maker-and-approver")
    both.groups.add(
        user_in("committee", "other").groups.get()
    )  # a maker who also holds the approve capability
    checker = user_in("committee", "checker")
    maker = _client(both)
    run = _upload(maker, _zip())
    assert run.status == ConversionRun.Status.VALIDATED and run.exception_count == 0
    apply_url = reverse("conversion_staff:run_apply", args=[run.pk])

    refused = maker.get(apply_url)  # the summary page says why, with no apply button
    text = refused.content.decode()
    assert "a different person must apply it" in text and "confirm-apply" not in text
    refused = maker.post(apply_url, {"reviewed": run_reviewed(run=run)})
    assert refused.status_code == 403 and "maker-checker" in refused.content.decode()
    assert not Person.objects.exists() and ConversionRun.objects.count() == 1
    # an administrator alone has no approve capability at all
    assert _client(user_in("administrator", "clerk")).post(apply_url, {}).status_code == 403

    checking = _client(checker)
    summary = checking.get(apply_url)
    assert summary.status_code == 200
    text = summary.content.decode()
    assert 'data-summary="participants">25<' in text and 'data-summary="positions">144<' in text
    assert checking.post(apply_url, {}).status_code == 302 and not Person.objects.exists()  # summary unseen
    response = _apply(checking, apply_url, run_reviewed(run=run))
    assert response.status_code == 302 and response["Location"].startswith("/staff/conversion/jobs/apply:")
    run.refresh_from_db()
    applied = run.applied_run
    assert applied is not None and applied.status == ConversionRun.Status.APPLIED and not applied.dry_run
    assert run.applied_by == checker and applied.applied_by == checker and applied.uploaded_by == both
    assert Person.objects.count() == 25
    event = AuditEvent.objects.get(action="conversion.apply_approved")
    assert event.actor == checker and event.data["dry_run"] == run.pk and len(event.data["files"]) == 20
    # applied once: a second apply is refused with the reason, nothing more is written
    again = _apply(checking, apply_url, run_reviewed(run=run))
    assert again.status_code == 403 and "already applied" in again.content.decode()
    assert ConversionRun.objects.count() == 2

    pdf = checking.post(reverse("conversion_staff:run_reconciliation", args=[applied.pk]))
    assert pdf.status_code == 302
    doc = Document.objects.get(kind="conversion_reconciliation")
    data = checking.get(pdf["Location"]).content
    text = subprocess.run(
        ["/usr/bin/pdftotext", "-layout", "-", "-"], input=data, capture_output=True, check=True
    )
    words = text.stdout.decode()
    assert doc.object_id == str(applied.pk)
    assert f"{Decimal(_package_total()):,.2f}" in words and "every control total ties" in words
    assert "Totals by plan" in words and "EDCP" in words and "NO" not in words.split()
    page = checking.get(reverse("conversion_staff:run", args=[applied.pk])).content.decode()
    assert "Reconciliation (PDF)" in page


def test_csv_files_upload_as_well_as_a_zip():
    files = [
        SimpleUploadedFile(p.name, p.read_bytes(), content_type="text/csv")
        for p in sorted(PACKAGE.glob("*.csv"))
    ]
    run = _upload(_client(user_in("administrator", "maker")), files)
    assert run.status == ConversionRun.Status.VALIDATED and run.participants == 25


def test_a_file_that_is_not_of_a_package_is_refused_with_its_reason_and_nothing_is_kept():
    client = _client(user_in("administrator", "maker"))
    response = client.post(
        reverse("conversion_staff:upload"),
        {"package": SimpleUploadedFile("notes.txt", b"hello")},
        follow=True,
    )
    assert "is not a file of a conversion package" in response.content.decode()
    assert not ConversionRun.objects.exists()


def test_a_participant_and_an_auditor_are_refused_on_every_conversion_url():
    run = ConversionRun.objects.create(
        folder="/nowhere",
        dry_run=True,
        status="validated",
        actor="x",
        started_at="2026-12-01T00:00Z",
        finished_at="2026-12-01T00:00Z",
    )
    urls = [
        reverse("conversion_staff:runs"),
        reverse("conversion_staff:upload"),
        reverse("conversion_staff:run", args=[run.pk]),
        reverse("conversion_staff:run_apply", args=[run.pk]),
        reverse("conversion_staff:run_reconciliation", args=[run.pk]),
    ]
    participant = _client(user_in("participant", "pat"))
    for url in urls:
        for method in (participant.get, participant.post):
            response = method(url)
            assert response.status_code in (302, 403, 405), (url, response.status_code)
            if response.status_code == 302:
                assert "login" in response["Location"] or "accounts" in response["Location"]
    auditor = _client(user_in("auditor", "aud"))
    assert auditor.get(urls[0]).status_code == 200
    for url in urls[1:2] + urls[3:]:
        assert auditor.post(url).status_code == 403, url


def test_the_menu_shows_conversion_to_staff_and_the_upload_only_to_importers():
    admin, committee = _client(user_in("administrator", "a")), _client(user_in("committee", "c"))
    url = reverse("conversion_staff:runs")
    assert f'href="{url}"' in admin.get(reverse("core:dashboard")).content.decode()
    assert "Upload a package" in admin.get(url).content.decode()
    assert "Upload a package" not in committee.get(url).content.decode()


def test_the_exceptions_download_as_csv_for_staff_who_may_read_the_report():
    import csv

    control = (PACKAGE / "control.csv").read_text().splitlines()
    line = next(i for i, text in enumerate(control) if text.startswith("positions.csv,market_value,EDCP,"))
    head, total = control[line].rsplit(",", 1)
    control[line] = f"{head},{Decimal(total) + Decimal('100.00')}"
    count = next(i for i, text in enumerate(control) if text.startswith("funds.csv,rows,"))
    control[count] = "funds.csv,rows,,,,,,15"
    run = _upload(
        _client(user_in("administrator", "maker")), _zip({"control.csv": "\n".join(control) + "\n"})
    )
    url = reverse("conversion_staff:run_exceptions", args=[run.pk])
    auditor = _client(user_in("auditor", "aud"))  # reads the report: reads its exceptions too
    response = auditor.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert f"conversion-{run.pk}-exceptions.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    expected = [
        [e.file, str(e.line), e.code, e.message]
        for e in ConversionException.objects.filter(run=run).order_by("file", "line", "code", "id")
    ]
    assert rows[0] == ["file", "line", "code", "message"] and rows[1:] == expected
    assert {r[2] for r in rows[1:]} == {"control_count_mismatch", "control_total_mismatch"}
    assert [r[1] for r in rows[1:]] == sorted((str(count + 1), str(line + 1)), key=int)
    one = auditor.get(url, {"code": "control_count_mismatch"})
    rows = list(csv.reader(io.StringIO(b"".join(one.streaming_content).decode())))
    assert rows[1:] == [r for r in expected if r[2] == "control_count_mismatch"]
    page = auditor.get(reverse("conversion_staff:run", args=[run.pk])).content.decode()
    assert f'href="{url}"' in page
    participant = _client(user_in("participant", "pat"))
    assert participant.get(url).status_code in (302, 403)


def test_a_queued_dry_run_shows_its_progress_until_a_worker_has_run_it():
    client = _client(user_in("administrator", "maker"))
    response = client.post(reverse("conversion_staff:upload"), {"package": _zip()})  # queued, not run
    key = response["Location"].split("/jobs/")[1].rstrip("/")
    page = client.get(response["Location"])
    text = page.content.decode()
    assert page.status_code == 200 and "Dry run of the uploaded package" in text
    assert 'role="progressbar"' in text and "waiting for a worker" in text and 'aria-live="polite"' in text
    assert not ConversionRun.objects.exists()
    job = conversion_job(key=key, now=timezone.now())  # a worker takes it
    assert job.status == JobRun.Status.DONE and "dry run validated, 0 exceptions" in job.message
    run = ConversionRun.objects.get()
    assert job.stats["run"] == run.pk and run.dry_run and run.status == ConversionRun.Status.VALIDATED
    assert client.get(response["Location"])["Location"] == reverse("conversion_staff:run", args=[run.pk])
    assert conversion_job(key=key, now=timezone.now()).pk == job.pk  # run again: already done, nothing new
    assert ConversionRun.objects.count() == 1
    assert client.get(reverse("conversion_staff:job", args=["dry-run:..etc:1"])).status_code == 404


def test_an_apply_that_fails_is_recorded_with_its_reason_writes_nothing_and_its_retry_applies_once(
    monkeypatch,
):
    run = _upload(_client(user_in("administrator", "maker")), _zip())
    checker = user_in("committee", "checker")
    checking = _client(checker)
    apply_url = reverse("conversion_staff:run_apply", args=[run.pk])

    def broken(**_):
        raise RuntimeError("the document store is unwritable")

    monkeypatch.setattr(staff, "conversion_run", broken)
    with _tasks_eager(propagates=False):  # as in a worker: the failure stays in the job
        response = _apply(checking, apply_url, run_reviewed(run=run))
    job = JobRun.objects.get(kind="conversion", key=response["Location"].split("/jobs/")[1].rstrip("/"))
    assert job.status == JobRun.Status.FAILED and "the document store is unwritable" in job.message
    assert not Person.objects.exists() and ConversionRun.objects.count() == 1
    text = checking.get(reverse("conversion_staff:run", args=[run.pk])).content.decode()
    assert "The job failed" in text and "the document store is unwritable" in text

    monkeypatch.undo()
    with TestCase.captureOnCommitCallbacks(execute=True):
        job_retry(run=job, actor=user_in("administrator", "operator"), now=timezone.now())
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == JobRun.Status.DONE and run.applied_run is not None and Person.objects.count() == 25
    assert ConversionRun.objects.filter(status=ConversionRun.Status.APPLIED).count() == 1


def test_the_books_figures_of_an_applied_package_are_read_once_by_the_apply_and_kept(monkeypatch):
    run = _upload(_client(user_in("administrator", "maker")), _zip())
    checking = _client(user_in("committee", "checker"))
    _apply(checking, reverse("conversion_staff:run_apply", args=[run.pk]), run_reviewed(run=run))
    run.refresh_from_db()
    applied = run.applied_run
    assert applied is not None and applied.books_figures
    total = [
        f for f in applied.books_figures if f[:7] == ["positions.csv", "market_value", "", "", "", "", ""]
    ]
    assert total == [["positions.csv", "market_value", "", "", "", "", "", _package_total()]]

    # what the prior recordkeeper had not paid by the conversion date, kept as the apply left it
    due = {(r[0], r[2], r[3], r[5]) for r in applied.due_at_conversion if r[0] == "1216279"}
    assert (
        due
        == {  # a lump sum due at separation (RRP 4.01(a)), not made: listed with its Payment Date (FORMAT.md)
            ("1216279", "RRP", kind, "2026-11-12")
            for kind in ("elective_deferral", "matching", "retirement_restoration")
        }
    )
    pre_2005 = sorted(r[5] for r in applied.due_at_conversion if r[0] == "7016764")
    assert pre_2005 == [
        "2026-07-01",
        "2026-08-01",
        "2026-09-01",
        "2026-10-01",
        "2026-11-01",
    ]  # BRP App. A 3(b)
    assert all(r[5] <= "2026-11-30" for r in applied.due_at_conversion)
    page = checking.get(reverse("conversion_staff:run", args=[applied.pk])).content.decode()
    assert "Payments due at the conversion date" in page and "BRP App. A 3(b)" in page

    def read_again(**_):
        raise AssertionError("the books were read again")

    monkeypatch.setattr(staff, "books_totals", read_again)
    monkeypatch.setattr(staff, "payments_due_at_conversion", read_again)
    for pk in (run.pk, applied.pk):  # the dry run's page and the apply's show the kept figures
        page = checking.get(reverse("conversion_staff:run", args=[pk]))
        assert page.status_code == 200 and "Control totals that differ" not in page.content.decode()
    assert checking.post(reverse("conversion_staff:run_reconciliation", args=[applied.pk])).status_code == 302
