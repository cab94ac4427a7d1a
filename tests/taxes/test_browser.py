"""In a real browser (headless Chromium, Playwright): staff take the FICA feed and the year-end file; a participant
finds their tax figures."""

from __future__ import annotations

import os

import pytest

from taxes.models import FeedTake, YearEndTake
from tests.claims.factories import PASSWORD, user_in
from tests.signin import authenticator_of, browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
PARTICIPANT_PASSWORD = "a long taxpayer password 9"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_staff_take_the_fica_feed_and_the_year_end_file_and_a_participant_finds_the_tax_figures(
    live_server,
    browser_page,
    year,
):
    admin = user_in("administrator", "payroll-liaison")
    authenticator_of(admin)
    year.user.set_password(PARTICIPANT_PASSWORD)
    year.user.save()
    page = browser_page
    page.set_default_timeout(60_000)  # a shared machine: the first request of a live server can be slow
    base = live_server.url

    browser_sign_in(page, base, "payroll-liaison", PASSWORD)
    page.goto(f"{base}/staff/taxes/fica/")
    page.click("text=2026-01-30")
    assert "Never taken" in page.inner_text("#feed-changes")
    with page.expect_download() as download:
        page.click("text=Take the feed (CSV)")
    text = open(download.value.path()).read()
    assert "TX-1001,Odile Marchbanks,2026-01-30,1000.00,EDCP,deferral" in text
    page.reload()
    assert "0 rows" in page.inner_text("#feed-changes")
    page.goto(f"{base}/staff/taxes/year-end/2026/")
    with page.expect_download() as download:
        page.click("text=W-2 file (CSV)")
    assert "2026,TX-1001,Odile Marchbanks,0.00,2000.00,2000.00,0.00" in open(download.value.path()).read()
    assert FeedTake.objects.count() == 1 and YearEndTake.objects.filter(file="w2").count() == 1

    page.context.clear_cookies()
    browser_sign_in(page, base, year.user.username, PARTICIPANT_PASSWORD)
    page.goto(f"{base}/portal/")
    page.click("nav >> text=Tax")
    assert "2,000.00" in page.inner_text("main")
