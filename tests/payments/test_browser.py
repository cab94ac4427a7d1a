"""In a real browser: one staff member prepares a payment run, a second approves it; the first cannot approve their own."""

from __future__ import annotations

import os

import pytest

from tests.payments.factories import deferrals, scenario, simulate, staff_user
from tests.signin import authenticator_of, browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _login(browser, base: str, username: str):
    page = browser.new_context().new_page()
    browser_sign_in(page, base, username, "a-long-test-password")
    return page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_run_prepared_by_one_staff_member_is_approved_by_another_in_the_browser(live_server):
    from playwright.sync_api import sync_playwright

    # All database work happens before Playwright starts its event loop in this thread: a connection
    # opened inside it would belong to another context and outlive the test.
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    alice = staff_user("alice", "administrator")
    alice.groups.add(staff_user("spare", "committee").groups.first())  # alice could approve others' runs
    bob = staff_user("bob", "committee")
    for user in (alice, bob):
        authenticator_of(user)  # staff sign in with a second factor

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = _login(browser, live_server.url, "alice")
        page.goto(f"{live_server.url}/staff/payments/?start=2026-05-01&end=2026-05-15")
        assert "60000.00" in page.content()
        with page.expect_navigation():
            page.click("#prepare-run")
        assert page.inner_text("#run-status") == "Prepared"
        assert page.query_selector("#approve-run") is None
        assert "a different person" in page.inner_text("#own-run")
        run_url = page.url
        # Even a hand-made POST is refused: the preparer cannot approve their own run.
        with page.expect_navigation():
            page.evaluate(
                """url => { const f = document.createElement('form'); f.method = 'post'; f.action = url + 'approve';
                const t = document.createElement('input'); t.name = 'csrfmiddlewaretoken';
                t.value = document.querySelector('input[name=csrfmiddlewaretoken]').value; f.appendChild(t);
                document.body.appendChild(f); f.submit(); }""",
                run_url,
            )
        assert "You prepared payment run" in page.inner_text(".messages")
        assert page.inner_text("#run-status") == "Prepared"

        other = _login(browser, live_server.url, "bob")
        other.goto(run_url)
        with other.expect_navigation():
            other.click("#approve-run")  # the summary step first (issue 11), then the approval
        assert int(other.inner_text("[data-summary=count]")) > 0 and "net" in other.inner_text(
            "#confirm-approve"
        )
        with other.expect_navigation():
            other.click("#confirm-approve")
        assert other.inner_text("#run-status") == "Approved and released"
        assert "Payroll file (CSV)" in other.content()
        browser.close()
