"""Issue 14 in a real browser (Playwright, Chromium): an administrator uploads the sample package (the copy in
tests/conversion/sample), reads the dry run, a committee member reviews and applies it (maker-checker), and the
reconciliation PDF they download shows every control total of the prior recordkeeper tying to the books."""

from __future__ import annotations

import io
import os
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connections
from django.utils import timezone
from pypdf import PdfReader

from conversion.models import ConversionRun
from core.models import JobRun
from participants.models import Person
from tests.payments.factories import staff_user
from tests.signin import CHROMIUM_ARGS, authenticator_of, browser_sign_in
from tests.staffui.test_browser_a11y import _axe, _sideways

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
ARGS = CHROMIUM_ARGS
PASSWORD = "a-long-test-password"
PACKAGE = Path(__file__).parent / "sample" / "package"


def _control(file: str, measure: str, plan: str = "") -> Decimal:
    for line in (PACKAGE / "control.csv").read_text().splitlines():
        cells = line.split(",")
        if cells[:2] == [file, measure] and cells[2] == plan and not any(cells[3:7]):
            return Decimal(cells[7])
    raise AssertionError(f"no {file} {measure} {plan} total in the sample's control file")


def _zip(folder: Path) -> Path:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(PACKAGE.glob("*.csv")):
            zf.write(path, f"package/{path.name}")
    target = folder / "sample-package.zip"
    target.write_bytes(out.getvalue())
    return target


def _pdf_text(data: bytes) -> str:
    return " ".join(" ".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages).split())


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_upload_is_dry_run_applied_by_a_second_person_and_the_reconciliation_ties(
    live_server, settings, tmp_path, eager_jobs
):
    # The dry run and the apply are jobs (conversion.tasks): here each runs in the server's thread when its
    # request commits, as a worker would take it; its page then leads to the run it wrote.
    settings.MEDIA_ROOT = str(tmp_path / "media")
    maker, checker = staff_user("ad-conv", "administrator"), staff_user("cm-conv", "committee")
    for user in (maker, checker):
        authenticator_of(user)
    package = _zip(tmp_path)
    base = live_server.url
    now = timezone.now()
    running = JobRun.objects.create(
        kind="conversion",
        key=f"dry-run:{'a' * 24}:{maker.pk}",
        status=JobRun.Status.RUNNING,
        progress_done=1,
        progress_total=2,
        message="checking the package (dry run: nothing is written)",
        started_at=now,
        heartbeat_at=now,
    )
    pdf: dict[str, bytes] = {}

    def run(browser):
        page = browser.new_context().new_page()
        page.set_default_timeout(60_000)  # a shared machine: the dry run of the package takes a few seconds
        browser_sign_in(page, base, "ad-conv", PASSWORD)
        page.goto(f"{base}/staff/conversion/")
        page.set_input_files("#id_package", str(package))
        with page.expect_navigation():
            page.click("text=Check the package (dry run)")
        assert "Nothing is written yet" in page.inner_text("main")
        assert "Dry run of the uploaded package: dry run validated, 0 exceptions" in page.inner_text("main")
        assert page.inner_text("#run-status") == "Validated (dry run, no exception)"
        assert page.inner_text("[data-summary=participants]") == "25"
        assert page.inner_text("[data-summary=positions]") == "144"
        assert page.inner_text("[data-summary=exceptions]") == "0"
        assert "No exception." in page.inner_text("main")
        assert "needs the approve capability" in page.inner_text("#apply-refusal")  # the maker cannot apply
        assert page.locator("#apply-run").count() == 0
        run_url = page.url
        # a job still running: its page has a progress bar, passes axe and fits 375 px
        page.goto(f"{base}/staff/conversion/jobs/{running.key}/")
        assert page.get_attribute("[role=progressbar]", "aria-valuenow") == "50"
        assert "checking the package" in page.inner_text("[data-message]")
        assert _axe(page) == []
        page.set_viewport_size({"width": 375, "height": 800})
        assert _sideways(page) is None
        page.context.close()

        page = browser.new_context().new_page()
        page.set_default_timeout(60_000)
        browser_sign_in(page, base, "cm-conv", PASSWORD)
        page.goto(run_url)
        with page.expect_navigation():
            page.click("#apply-run")
        assert page.inner_text("[data-summary=participants]") == "25"
        with page.expect_navigation():
            page.click("#confirm-apply")
        assert page.inner_text("#run-status") == "Applied"
        # The button stores the PDF and leads to it, which Chromium shows in its viewer: download the document
        # it shows with the signed-in session.
        with page.expect_response(lambda r: r.headers.get("content-type") == "application/pdf") as sent:
            page.click("#reconciliation-pdf")
        download = page.context.request.get(sent.value.url)
        assert download.ok and download.headers["content-type"] == "application/pdf"
        pdf["data"] = download.body()
        page.context.close()

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        try:
            run(browser)
        finally:
            browser.close()
            connections.close_all()

    applied = ConversionRun.objects.get(dry_run=False)
    assert applied.status == ConversionRun.Status.APPLIED and applied.uploaded_by == maker
    assert applied.applied_by == checker and Person.objects.count() == 25
    assert pdf["data"].startswith(b"%PDF")
    text = _pdf_text(pdf["data"])
    assert f"Conversion reconciliation · run {applied.pk}" in text
    assert "every control total ties" in text and "DIFFER" not in text and " NO " not in f" {text} "
    assert f"{_control('positions.csv', 'market_value'):,.2f}" in text  # the liability of the package
    for plan in ("EDCP", "RRP"):
        assert f"{_control('positions.csv', 'market_value', plan):,.2f}" in text
