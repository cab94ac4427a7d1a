"""A participant changes their delivery preference in a real browser (headless Chromium, Playwright): from paper
(the default) to electronic, consenting to the text shown, through the review step; then back to paper."""

from __future__ import annotations

import os

import pytest
from django.contrib.auth.models import Group, User
from django.db import connections

from core.models import DeliveryChoice
from core.notices import CONSENT_VERSION
from tests.factories import PersonFactory
from tests.signin import browser_sign_in

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PASSWORD = "a long browser password 7"


@pytest.fixture
def phone_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 375, "height": 800})  # usable at 375 px
        page = context.new_page()
        page.set_default_timeout(10_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()
            connections.close_all()  # the greenlet's own database connection (see tests/elections/test_browser.py)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_participant_changes_delivery_preference_in_the_browser(live_server, phone_page):
    person = PersonFactory(email="dora@example.com", first_name="Dora", last_name="Quince")
    user = User.objects.create_user(username="dora", password=PASSWORD)
    user.groups.add(Group.objects.get(name="participant"))
    person.user = user
    person.save()
    page = phone_page

    browser_sign_in(page, live_server.url, "dora", PASSWORD)
    page.goto(f"{live_server.url}/portal/participants/notices/")
    assert "Paper delivery" in page.inner_text("#delivery")
    page.click("text=Change how I receive notices")
    assert "I may withdraw this consent at any time" in page.inner_text("#consent-text")

    page.check("input[name=delivery][value=electronic]")
    page.click("text=Review my choice")  # without the consent box: refused, nothing recorded
    page.wait_for_selector("#consent-error")
    assert not DeliveryChoice.objects.exists()

    page.check("input[name=delivery][value=electronic]")
    page.check("input[name=consent]")
    page.click("text=Review my choice")
    page.wait_for_selector("#delivery-review")
    assert "dora@example.com" in page.inner_text("#delivery-review")
    assert not DeliveryChoice.objects.exists()  # the review records nothing
    page.click("#delivery-review button[name=confirm]")
    page.wait_for_selector("#notices")
    assert "Electronic delivery to dora@example.com" in page.inner_text("#delivery")
    choice = DeliveryChoice.objects.get()
    assert (choice.delivery, choice.consent_version) == ("electronic", CONSENT_VERSION)
    assert "Chrome" in choice.user_agent and choice.ip_address == "127.0.0.1"

    page.click("text=Change how I receive notices")
    page.check("input[name=delivery][value=paper]")
    page.click("text=Review my choice")
    page.click("#delivery-review button[name=confirm]")
    page.wait_for_selector("#notices")
    assert "Paper delivery" in page.inner_text("#delivery")
    assert list(DeliveryChoice.objects.order_by("chosen_at").values_list("delivery", flat=True)) == [
        "electronic",
        "paper",
    ]
