"""A participant finds their statement in the portal and downloads it, in headless Chromium."""

from __future__ import annotations

import hashlib

import pytest

from core.pdf import pdf_text
from tests.elections.factories import participant
from tests.elections.test_browser import PASSWORD, browser_page  # noqa: F401 (the fixture)
from tests.signin import browser_sign_in
from tests.statements.factories import statement_for


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_participant_finds_their_statement_and_downloads_it(live_server, browser_page, settings, tmp_path):  # noqa: F811
    settings.MEDIA_ROOT = str(tmp_path)
    alice = participant(username="alice-b", first_name="Alice", last_name="Archer")
    alice.person.user.set_password(PASSWORD)
    alice.person.user.save()
    statement = statement_for(alice, ending="2345.67")
    page = browser_page
    browser_sign_in(page, live_server.url, "alice-b", PASSWORD)
    page.goto(f"{live_server.url}/portal/")
    page.click("nav.mainnav >> text=Statements")
    page.wait_for_selector("table.statements")
    assert "2,345.67" in page.inner_text("table.statements")
    with page.expect_download() as info:
        page.click("table.statements >> text=Download PDF")
    data = open(info.value.path(), "rb").read()
    assert data.startswith(b"%PDF")
    text = pdf_text(data)
    assert "Statement for January 1, 2026 to March 31, 2026" in text and "2,345.67" in text
    assert hashlib.sha256(data).hexdigest() == statement.sha256  # the bytes stored when it was issued
