"""Participant files: people, participations and employment events, validated whole."""

from __future__ import annotations

import datetime as dt

import pytest

from core.models import AuditEvent, ImportBatch
from participants.models import EmploymentEvent, KeyEmployeeList, Participation, Person
from tests.factories import PersonFactory
from tests.imports.conftest import reasons, run

pytestmark = pytest.mark.django_db
PARTICIPANTS = ImportBatch.Kind.PARTICIPANTS
KEYS = ImportBatch.Kind.KEY_EMPLOYEES
HEADER = (
    "employee_number,first_name,last_name,birth_date,hire_date,marital_status,email,address_line1,city,state,"
    "postal_code,plan,entered_on,eligible_on,event,event_date,event_reason"
)
ANNA = "P1,Anna,Lee,1970-02-01,2010-03-01,married,anna@example.com,1 Elm St,Richmond,va,23219"
BEN = "P2,Ben,Ortiz,1980-07-15,2012-09-10,,,,,,"


def test_a_participant_file_creates_people_participations_and_events_with_history(edcp, rrp):
    batch = run(
        PARTICIPANTS,
        HEADER,
        f"{ANNA},EDCP,2011-01-01,2010-12-01,,,",
        "P1,,,,,,,,,,,RRP,2011-07-01,,,,",
        f"{BEN},EDCP,2013-01-01,,,,",
        "P2,,,,,,,,,,,,,,separation,2024-04-30,resignation",
    )
    assert batch.status == ImportBatch.Status.APPLIED, batch.errors
    assert (batch.rows_applied, batch.rows_skipped) == (4, 0)
    anna = Person.objects.get(employee_number="P1")
    assert (anna.state, anna.marital_status, anna.history.count()) == ("VA", "married", 1)
    assert sorted(Participation.objects.filter(person=anna).values_list("plan__code", flat=True)) == [
        "EDCP",
        "RRP",
    ]
    assert Participation.objects.get(person=anna, plan=edcp).eligible_on == dt.date(2010, 12, 1)
    event = EmploymentEvent.objects.get(person__employee_number="P2")
    assert (event.kind, event.reason, event.effective_date) == (
        "separation",
        "resignation",
        dt.date(2024, 4, 30),
    )
    assert AuditEvent.objects.filter(action="participation.enrol").count() == 3
    assert AuditEvent.objects.filter(action="employment.separation").count() == 1


def test_reimporting_a_participant_file_applies_it_once_and_rows_on_file_are_skipped(edcp):
    lines = (HEADER, f"{ANNA},EDCP,2011-01-01,,,,", f"{BEN},,,,,,")
    assert run(PARTICIPANTS, *lines).status == ImportBatch.Status.APPLIED
    assert run(PARTICIPANTS, *lines).status == ImportBatch.Status.DUPLICATE
    again = run(PARTICIPANTS, *lines, "P3,Cy,Diaz,1975-01-01,2015-01-01,,,,,,,,,,,,")
    assert again.status == ImportBatch.Status.APPLIED
    assert (again.rows_applied, again.rows_skipped) == (1, 2)
    assert Person.objects.count() == 3
    assert Participation.objects.count() == 1


def test_every_bad_participant_row_is_listed_and_nothing_is_created(edcp):
    PersonFactory(
        employee_number="P9",
        first_name="Old",
        last_name="Name",
        birth_date=dt.date(1960, 1, 1),
        hire_date=dt.date(1990, 1, 1),
    )
    batch = run(
        PARTICIPANTS,
        HEADER,
        f"{ANNA},EDCP,2011-01-01,,,,",  # 2 good
        "P2,Ben,,1980-07-15,2012-09-10,,,,,,,,,,,,",  # 3 new without last name
        "P3,Cy,Diaz,1975-13-01,2015-01-01,,,,,,,,,,,,",  # 4 bad birth date
        "P4,Di,Ng,1975-01-01,2015-01-01,engaged,not-an-email,,,Virginia,,,,,,,",  # 5 three bad values
        "P1,,,,,,,,,,,XYZ,2011-01-01,,,,",  # 6 unknown plan
        "P1,,,,,,,,,,,EDCP,2011-01-01,,,,",  # 7 repeats line 2
        "P5,,,,,,,,,,,EDCP,2011-01-01,,,,",  # 8 unknown, no person data
        "P9,Other,Name,1960-01-01,1990-01-01,,,,,,,,,,,,",  # 9 changes a name on file
        "P1,,,,,,,,,,,BRP,2011-01-01,,,,",  # 10 BRP frozen
        "P1,,,,,,,,,,,,,,separation,2009-01-01,resignation",  # 11 before hire
        "P1,,,,,,,,,,,,,,retired,2024-01-01,",  # 12 unknown event
        "P6,Ed,Fox,2000-01-01,1999-01-01,,,,,,,,,,,,",
    )  # 13 hired before born
    assert batch.status == ImportBatch.Status.REFUSED
    found = reasons(batch)
    assert sorted(found) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert found[3] == ["Line 3: employee P2 is new, so the line needs last name"]
    assert "birth date '1975-13-01' is not a date" in found[4][0]
    assert len(found[5]) == 3
    assert "there is no plan 'XYZ'" in found[6][0]
    assert "repeats the EDCP participation of employee P1 given on line 2" in found[7][0]
    assert "employee P5 is not on file" in found[8][0]
    assert "first name is Old on file but Other here" in found[9][0]
    assert found[10] == ["Line 10: BRP admits no new participants after 2008-12-31 (BRP 2.1)"]
    assert "was hired 2010-03-01: an event dated 2009-01-01 is before that" in found[11][0]
    assert "event 'retired' is not one of" in found[12][0]
    assert "hire date 1999-01-01 is not after birth date 2000-01-01" in found[13][0]
    assert Person.objects.count() == 1
    assert Participation.objects.count() == 0


def test_contact_details_on_file_are_updated_but_names_and_dates_are_not(edcp):
    PersonFactory(
        employee_number="P1",
        first_name="Anna",
        last_name="Lee",
        birth_date=dt.date(1970, 2, 1),
        hire_date=dt.date(2010, 3, 1),
        city="Norfolk",
        state="VA",
    )
    batch = run(PARTICIPANTS, HEADER, f"{ANNA},,,,,,")
    assert batch.status == ImportBatch.Status.APPLIED
    anna = Person.objects.get(employee_number="P1")
    assert (anna.city, anna.email) == ("Richmond", "anna@example.com")
    assert (
        anna.history.filter(history_change_reason__startswith=f"import #{batch.pk}", city="Richmond").count()
        == 1
    )


def test_a_death_and_a_later_event_in_the_same_file_are_refused(edcp):
    batch = run(
        PARTICIPANTS, HEADER, f"{ANNA},,,,death,2024-01-10,death", "P1,,,,,,,,,,,,,,disability,2024-02-01,"
    )
    assert reasons(batch) == {
        3: ["Line 3: Anna Lee (P1) died 2024-01-10: an event dated 2024-02-01 is after that"]
    }


def test_a_key_employee_file_records_each_years_list(edcp):
    for n in ("K1", "K2"):
        PersonFactory(employee_number=n)
    batch = run(KEYS, "identification_year,employee_number", "2023,K1", "2023,K2", "2022,")
    assert batch.status == ImportBatch.Status.APPLIED
    lists = {
        k.identification_year: sorted(p.employee_number for p in k.members.all())
        for k in KeyEmployeeList.objects.all()
    }
    assert lists == {2023: ["K1", "K2"], 2022: []}
    again = run(KEYS, "identification_year,employee_number", "2023,K1", "2024,K2")
    assert (again.rows_applied, again.rows_skipped) == (1, 1)
    assert run(KEYS, "identification_year,employee_number", "2023,K1", "2024,K2").status == "duplicate"


def test_every_bad_key_employee_row_is_listed(edcp):
    PersonFactory(employee_number="K1")
    batch = run(KEYS, "identification_year,employee_number", "2023,K1", "2023,K9", "twenty,K1", "2023,K1")
    assert batch.status == ImportBatch.Status.REFUSED
    found = reasons(batch)
    assert found[3] == ["Line 3: employee K9 is not on file (load the participant first)"]
    assert found[4] == ["Line 4: identification year 'twenty' is not a whole number"]
    assert found[5] == ["Line 5: repeats employee K1 for 2023 given on line 2"]
    assert KeyEmployeeList.objects.count() == 0
