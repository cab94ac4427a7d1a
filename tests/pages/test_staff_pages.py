"""Every staff page renders for each staff role and refuses participants (403) and anonymous visitors (login)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.roles import Role
from plans.models import PlanTable
from tests.pages.conftest import STAFF_ROLES, client_of, make_user

pytestmark = pytest.mark.django_db


def staff_urls(person_pk: int, table_pk: int) -> list[str]:
    return [
        reverse("plans_staff:catalog"),
        reverse("plans_staff:plan", args=["EDCP"]),
        reverse("plans_staff:plan", args=["RRP"]) + "?on=2012-03-01",
        reverse("plans_staff:plan", args=["BRP"]),
        reverse("plans_staff:funds", args=["EDCP"]),
        reverse("plans_staff:figures"),
        reverse("plans_staff:table", args=[table_pk]),
        reverse("plans_staff:closures"),
        reverse("participants_staff:list") + "?q=alice",
        reverse("participants_staff:detail", args=[person_pk]),
        reverse("participants_staff:key_employees"),
        reverse("books_staff:overview"),
    ]


@pytest.fixture
def urls(books):
    return staff_urls(books["alice"].person.pk, PlanTable.objects.first().pk)


@pytest.mark.parametrize("role", STAFF_ROLES)
def test_every_staff_page_renders_for_each_staff_role(role, urls):
    client = client_of(make_user(f"staff-{role.value}", role))
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url


def test_a_participant_is_refused_every_staff_page(urls, books):
    client = client_of(books["alice"].person.user)
    for url in urls:
        assert client.get(url).status_code == 403, url


def test_an_anonymous_visitor_is_sent_to_sign_in(urls):
    for url in urls:
        response = client_of(None).get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_a_user_without_a_role_is_refused(urls):
    client = client_of(make_user("nobody", None))
    for url in urls:
        assert client.get(url).status_code == 403, url


def test_staff_menu_links_the_new_pages(staff):
    page = staff[Role.AUDITOR].get(reverse("core:dashboard")).content.decode()
    for name in (
        "plans_staff:catalog",
        "plans_staff:figures",
        "plans_staff:closures",
        "participants_staff:list",
        "participants_staff:key_employees",
        "books_staff:overview",
    ):
        assert f'href="{reverse(name)}"' in page, name


def test_every_change_needs_maintain_tables(books):
    from core.models import AuditEvent, MarketClosure

    closure = MarketClosure.objects.create(date="2031-06-04", reason="Storm")
    table = PlanTable.objects.first()
    posts = [
        reverse("plans_staff:figure_save"),
        reverse("plans_staff:table_save", args=[table.pk]),
        reverse("plans_staff:closure_add"),
        reverse("plans_staff:closure_remove", args=[closure.pk]),
        reverse("participants_staff:key_employees_record"),
    ]
    business = AuditEvent.objects.exclude(action__startswith="signin.")  # signing in is recorded too
    before = business.count()
    for client in (client_of(make_user("reader", Role.AUDITOR)), client_of(books["alice"].person.user)):
        for url in posts:
            assert (
                client.post(
                    url, {"date": "2031-06-05", "reason": "x", "identification_year": 2025}
                ).status_code
                == 403
            ), url
    assert business.count() == before and MarketClosure.objects.count() == 1
    writer = client_of(make_user("writer", Role.ADMINISTRATOR))
    for url in posts:
        assert writer.get(url).status_code == 405, url  # changes are POSTs only
