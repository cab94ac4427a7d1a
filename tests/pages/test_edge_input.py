"""Issue 12, finding 7, attack by attack: each edge value that answered 500 now answers 400, 404 or a form
error that says what is wrong (the hypothesis sweep in tests/test_no_server_errors.py covers the rest)."""

from __future__ import annotations

import pytest
from django.test import Client

from core.roles import Role
from participants.models import Beneficiary
from tests.pages.conftest import make_user
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_of(user) -> Client:
    client = Client(raise_request_exception=False)
    sign_in(client, user)
    return client


@pytest.mark.parametrize("param", ["start", "end"])
@pytest.mark.parametrize("day", ["0001-01-01", "9999-12-31"])
def test_the_history_api_refuses_dates_outside_the_range_with_400(books, param, day):
    client = client_of(books["alice"].person.user)
    response = client.get("/api/books/me/history/", {param: day})
    assert response.status_code == 400
    assert response.json() == {param: f"the date {day} is outside 1900-01-01 to 2199-12-31"}


@pytest.mark.parametrize("year", ["0", "99999999999"])
def test_a_year_out_of_range_in_a_staff_url_is_a_404(edcp, year):
    client = client_of(make_user("admin-y", Role.ADMINISTRATOR))
    for url in (f"/staff/elections/year/EDCP/{year}/", f"/staff/elections/forms/EDCP/{year}/"):
        assert client.get(url).status_code == 404, url
    assert client.get("/staff/elections/refused/", {"year": year}).status_code == 200
    assert client.get("/api/elections/deferral/", {"plan_year": year}).status_code == 400


def test_a_300_character_beneficiary_name_is_a_message(books):
    participation = books["alice"]
    client = client_of(participation.person.user)
    response = client.post(
        f"/portal/participants/beneficiaries/{participation.plan.code}/",
        {"tier_1": "primary", "name_1": "N" * 300, "relationship_1": "spouse", "percent_1": "100"},
    )
    assert response.status_code == 400  # a form error beside the field (issue 11), nothing stored
    assert "at most 200 characters" in response.content.decode()
    assert not Beneficiary.objects.exists()
