"""Issue 11, accessibility: in a real browser (Playwright, Chromium), every page reachable from the menus, as
a participant and as each staff role (core.roles), has no serious or critical axe-core violation of WCAG 2.1
A/AA, and at 375 px wide no page scrolls sideways."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections

from core.roles import Role
from participants.models import Person
from payments.services.runs import payment_run_prepare
from tests.payments.factories import deferrals, scenario, simulate, staff_user
from tests.signin import authenticator_of, browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "a-long-test-password"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Vendored third-party pages, not ours to change: the Swagger UI of the API (static/vendor/swagger-ui) and the
# Django admin. They are linked from the System menu; the test names them so a skip is never silent.
NOT_OURS = ("/api/docs/", "/admin/")


def _population() -> dict[str, str]:
    """A separated EDCP participant with a valued payment, a prepared run, and one user per role."""
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    users = {
        role.value: staff_user(f"{role.value[:3]}-a11y", role.value)
        for role in (Role.COMMITTEE, Role.ADMINISTRATOR, Role.AUDITOR)
    }
    for user in users.values():
        authenticator_of(user)
    payment_run_prepare(period_end=dt.date(2026, 5, 15), actor=users["administrator"])
    participant = get_user_model().objects.create_user(username="p1-a11y", password=PASSWORD)
    participant.groups.add(Group.objects.get_or_create(name="participant")[0])
    person = Person.objects.get(employee_number="P1")
    person.user = participant
    person.save()
    return {**{k: u.get_username() for k, u in users.items()}, "participant": "p1-a11y"}


def _menu_pages(page) -> list[str]:
    hrefs = page.eval_on_selector_all(
        "nav.mainnav a[href]", "links => links.map(a => a.getAttribute('href'))"
    )
    pages = ["/"] + [h for h in hrefs if h.startswith("/")]
    return list(dict.fromkeys(p for p in pages if not p.startswith(NOT_OURS)))


def _browse(live_server, who: str, width: int, check) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    problems: dict[str, object] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            browser_sign_in(page, live_server.url, who, PASSWORD)
            pages = _menu_pages(page)
            assert len(pages) >= 4, pages
            for path in pages:
                response = page.goto(live_server.url + path)
                assert response is not None and response.status == 200, (path, response and response.status)
                found = check(page)
                if found:
                    problems[path] = found
        finally:
            context.close()
            browser.close()
            connections.close_all()
    return problems


def _axe(page):
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(
        page, options={"runOnly": {"type": "tag", "values": WCAG}, "resultTypes": ["violations"]}
    )
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def _sideways(page):
    width = page.evaluate("document.scrollingElement.scrollWidth")
    return width if width > 375 else None


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["participant", "committee", "administrator", "auditor"])
def test_axe_finds_no_serious_or_critical_violation_on_any_menu_page(live_server, role):
    users = _population()
    assert _browse(live_server, users[role], 1280, _axe) == {}


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["participant", "committee", "administrator", "auditor"])
def test_no_menu_page_scrolls_sideways_at_375_px(live_server, role):
    users = _population()
    assert _browse(live_server, users[role], 375, _sideways) == {}
