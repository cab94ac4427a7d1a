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
from tests.signin import CHROMIUM_ARGS, authenticator_of, browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
ARGS = CHROMIUM_ARGS
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


# --- the portal's form pages (issue 11): each form, and the review page it leads to, as a participant ----------

FORM_PAGES = (
    "/portal/elections/EDCP/enrol/",
    "/portal/elections/EDCP/payment/?account=retirement_termination",
    "/portal/elections/EDCP/schedule-change/?account=retirement_termination",
    "/portal/elections/EDCP/investments/",
    "/portal/elections/BRP/annuity/",
    "/portal/participants/beneficiaries/EDCP/",
    "/portal/claims/new/",
    "/portal/payments/what-if/",
    "/portal/payments/what-if/?separation=2027-06-30&annual_return=3",
)

REVIEW_BUTTONS = (
    ("/portal/elections/EDCP/payment/?account=retirement_termination", "#review-payment"),
    ("/portal/elections/EDCP/schedule-change/?account=retirement_termination", "#review-change"),
    ("/portal/elections/EDCP/investments/", "#review-investments"),
)


def _form_population() -> str:
    """An employed EDCP participant with a balance who is also in the BRP (its annuity form), signed in below."""
    from participants.models import Participation
    from plans.models import Plan

    simulate(scenario(events=deferrals(gross="20000.00"), through="2026-05-08"))
    user = get_user_model().objects.create_user(username="p1-forms", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="participant")[0])
    person = Person.objects.get(employee_number="P1")
    person.user = user
    person.save()
    Participation.objects.get_or_create(
        person=person, plan=Plan.objects.get(code="BRP"), defaults={"entered_on": dt.date(2012, 3, 1)}
    )
    return "p1-forms"


def _review_pages(page, base: str, check, problems: dict) -> None:
    """The review pages: the deferral election's (when an election is open) and the beneficiaries'."""
    page.goto(base + "/portal/elections/EDCP/enrol/")
    if page.locator("#review-election").count():
        page.click("#review-election")
        page.wait_for_load_state()
        found = check(page)
        if found:
            problems["enrol review"] = found
    # the other forms sent for review as prefilled (a review page, or the form with its problems beside the fields)
    for path, button in REVIEW_BUTTONS:
        page.goto(base + path)
        if page.locator(button).count():
            page.click(button)
            page.wait_for_load_state()
            found = check(page)
            if found:
                problems[f"{path} review"] = found
    page.goto(base + "/portal/participants/beneficiaries/EDCP/")
    page.fill("#name_1", "Dana Archer")
    page.select_option("#relationship_1", "spouse")
    page.fill("#percent_1", "100")
    page.click("#review-beneficiaries")
    page.wait_for_load_state()
    assert page.locator("#submit-beneficiaries").count() == 1
    found = check(page)
    if found:
        problems["beneficiaries review"] = found
    # the form with its errors shown beside the fields
    page.goto(base + "/portal/participants/beneficiaries/EDCP/")
    page.fill("#name_1", "Dana Archer")
    page.fill("#percent_1", "90")
    page.click("#review-beneficiaries")
    page.wait_for_load_state()
    found = check(page)
    if found:
        problems["beneficiaries with errors"] = found


def _browse_forms(live_server, who: str, width: int, check) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    problems: dict[str, object] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            browser_sign_in(page, live_server.url, who, PASSWORD)
            for path in FORM_PAGES:
                response = page.goto(live_server.url + path)
                assert response is not None and response.status == 200, (path, response and response.status)
                found = check(page)
                if found:
                    problems[path] = found
            _review_pages(page, live_server.url, check, problems)
        finally:
            context.close()
            browser.close()
            connections.close_all()
    return problems


def _both(page):
    found = {"axe": _axe(page), "sideways": _sideways(page)}
    return {k: v for k, v in found.items() if v}


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_portal_form_pages_have_no_serious_violation_and_no_sideways_scroll_at_375_px(live_server):
    who = _form_population()
    assert _browse_forms(live_server, who, 375, _both) == {}
