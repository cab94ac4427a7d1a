"""The participant page and the Key Employee lists."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from core.audit import audit_record
from core.models import AuditEvent
from core.roles import Role
from participants.models import KeyEmployeeList

pytestmark = pytest.mark.django_db


def test_the_search_finds_by_name_and_employee_number(staff, books):
    client = staff[Role.AUDITOR]
    alice = books["alice"].person
    assert (
        alice.employee_number in client.get(reverse("participants_staff:list") + "?q=alice").content.decode()
    )
    page = client.get(reverse("participants_staff:list") + f"?q={alice.employee_number}").content.decode()
    assert "Alice" in page and "Bob" not in page


def test_the_participant_page_shows_accounts_positions_ledger_earnings_and_history(staff, books):
    alice = books["alice"].person
    page = staff[Role.AUDITOR].get(reverse("participants_staff:detail", args=[alice.pk])).content.decode()
    assert "Retirement/Termination Account" in page
    assert "50.000000" in page and "22.000000" in page  # units and price of the position
    assert "1,100.00" in page  # value on JAN16
    assert "100.00" in page  # earnings of JAN16
    assert "2026-01-15" in page and "Deferral" in page  # the ledger entry
    assert "Person created" in page  # simple-history
    assert "Bob" not in page


def test_the_participant_page_pages_the_ledger(staff, books):
    alice = books["alice"].person
    response = staff[Role.AUDITOR].get(reverse("participants_staff:detail", args=[alice.pk]) + "?page=99")
    assert response.status_code == 200


def test_an_administrator_records_a_key_employee_list_through_the_service(staff, books):
    alice, bob = books["alice"].person, books["bob"].person
    response = staff[Role.ADMINISTRATOR].post(
        reverse("participants_staff:key_employees_record"),
        {"identification_year": 2025, "employee_numbers": f"{alice.employee_number}, {bob.employee_number}"},
    )
    assert response.status_code == 302
    assert set(KeyEmployeeList.objects.get(identification_year=2025).members.all()) == {alice, bob}
    assert AuditEvent.objects.filter(action="key_employees.record").exists()
    page = staff[Role.AUDITOR].get(reverse("participants_staff:detail", args=[alice.pk])).content.decode()
    assert "2026-04-01 – 2027-03-31" in page


def test_an_unknown_employee_number_refuses_the_whole_list(staff, books):
    response = staff[Role.ADMINISTRATOR].post(
        reverse("participants_staff:key_employees_record"),
        {"identification_year": 2025, "employee_numbers": f"{books['alice'].person.employee_number}\nX99999"},
    )
    assert response.status_code == 400
    assert "unknown employee number(s): X99999" in response.content.decode()
    assert not KeyEmployeeList.objects.exists()


def test_an_auditor_cannot_record_a_key_employee_list(staff, books):
    response = staff[Role.AUDITOR].post(
        reverse("participants_staff:key_employees_record"),
        {"identification_year": 2025, "employee_numbers": ""},
    )
    assert response.status_code == 403
    assert not KeyEmployeeList.objects.exists()


def test_the_participant_page_reads_the_actors_of_its_audit_events_with_the_events(staff, books):
    """The ten latest events about the person name their actors: one query for all, not one each (issue 15)."""
    alice = books["alice"].person
    url = reverse("participants_staff:detail", args=[alice.pk])
    client = staff[Role.AUDITOR]
    actors = [get_user_model().objects.create_user(username=f"actor{n}") for n in range(6)]
    counts = []
    for n in (1, 6):
        for actor in actors[:n]:
            audit_record(action="test.touch", actor=actor, at=timezone.now(), obj=alice)
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
