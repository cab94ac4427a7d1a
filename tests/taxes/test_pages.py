"""The tax pages and files: who may take them, what they hold, and that a beneficiary's taxpayer number is in the
1099-MISC file only (masked on the year-end page, absent from every other page)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from books.services.payroll import pay_record
from core.roles import Role
from participants.models import Beneficiary
from participants.services import (
    beneficiaries_designate,
    beneficiary_tax_info_record,
    employment_event_record,
)
from payments.models import ScheduledPayment
from taxes.models import FeedTake, YearEndTake
from taxes.services.fica import fica_wages_record
from tests.books.test_contributions_and_vesting import elect
from tests.claims.factories import user_in
from tests.conftest import eastern
from tests.factories import ParticipationFactory, PersonFactory
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
TIN = "123456785"


@pytest.fixture
def year(edcp):
    """A participant who defers in 2026 and dies; the account is paid to the beneficiary on file."""
    user = User.objects.create_user("taxpayer")
    user.groups.add(Group.objects.get(name=Role.PARTICIPANT.value))
    person = PersonFactory(user=user, employee_number="TX-1001", first_name="Odile", last_name="Marchbanks")
    part = ParticipationFactory(plan=edcp, person=person)
    elect(part, 2026, {"base_salary": 10})
    for day in (dt.date(2026, 1, 15), dt.date(2026, 1, 30)):
        pay_record(person=person, pay_date=day, component="base_salary", gross=Decimal("10000.00"), actor="t")
    beneficiaries_designate(
        person=person,
        plan=edcp,
        actor="t",
        beneficiaries=[{"tier": "primary", "name": "Pell Marchbanks", "percent": 100}],
    )
    beneficiary_tax_info_record(
        beneficiary=Beneficiary.objects.get(name="Pell Marchbanks"),
        taxpayer_number=TIN,
        address_line1="4 Quarry Road",
        city="Richmond",
        state="va",
        postal_code="23220",
        actor="t",
        now=eastern(2026, 2, 1),
    )
    employment_event_record(person=person, kind="death", effective_date=dt.date(2026, 3, 2), actor="t")
    payment = ScheduledPayment.objects.filter(participation=part).first()
    assert payment is not None and payment.trigger == "death"
    # the payment job's end state (its own tests prove the path): paid to the beneficiary
    ScheduledPayment.objects.filter(pk=payment.pk).update(
        status=ScheduledPayment.Status.PAID,
        paid_on=dt.date(2026, 4, 1),
        amount=Decimal("2000.00"),
        payee_name="Pell Marchbanks",
    )
    fica_wages_record(through=dt.date(2026, 12, 31), now=eastern(2027, 1, 5))
    return person


def client_of(user) -> Client:
    return sign_in(Client(), user)


def test_staff_take_the_feed_and_the_page_says_what_changed_since(year):
    admin, auditor = user_in("administrator"), user_in("auditor")
    page = client_of(admin).get("/staff/taxes/fica/2026-01-30/")
    assert page.status_code == 200 and "Never taken" in page.content.decode()
    assert client_of(auditor).get("/staff/taxes/fica/2026-01-30/feed.csv").status_code == 403
    csv = client_of(admin).get("/staff/taxes/fica/2026-01-30/feed.csv")
    assert csv.status_code == 200
    lines = csv.content.decode().splitlines()
    assert lines[0].startswith("employee_number,name,date,amount,plan,kind")
    assert lines[1].startswith("TX-1001,Odile Marchbanks,2026-01-30,1000.00,EDCP,deferral")
    assert FeedTake.objects.get().rows == 1
    assert (
        "0 rows (0.00) added since" in client_of(admin).get("/staff/taxes/fica/2026-01-30/").content.decode()
    )
    api = client_of(admin).get("/api/taxes/fica/2026-01-15/")
    assert api.status_code == 200 and api.json()[0]["amount"] == "1000.00"
    assert FeedTake.objects.filter(via="api").count() == 1


def test_year_end_figures_files_and_the_taxpayer_number_kept_to_the_1099_file(year):
    admin, committee = user_in("administrator"), user_in("committee")
    page = client_of(admin).get("/staff/taxes/year-end/2026/").content.decode()
    assert "***-**-6785" in page and TIN not in page
    w2 = client_of(admin).get("/staff/taxes/year-end/2026/w2.csv").content.decode().splitlines()
    # deferrals are FICA wages; the payment after death is not the employee's W-2 box 1
    assert w2[1] == "2026,TX-1001,Odile Marchbanks,0.00,2000.00,2000.00,0.00"
    form = client_of(admin).get("/staff/taxes/year-end/2026/1099.csv").content.decode().splitlines()
    assert form[1] == f"2026,TX-1001,Pell Marchbanks,{TIN},4 Quarry Road,,Richmond,VA,23220,2000.00,"
    assert client_of(committee).get("/staff/taxes/year-end/2026/1099.csv").status_code == 403
    recon = client_of(admin).get("/staff/taxes/year-end/2026/reconciliation.csv").content.decode()
    assert "EDCP" in recon
    assert set(YearEndTake.objects.values_list("file", flat=True)) == {"w2", "1099", "reconciliation"}
    detail = client_of(admin).get(f"/staff/participants/{year.pk}/").content.decode()
    assert "Tax figures by year" in detail and TIN not in detail and "6785" not in detail


def test_a_participant_sees_their_own_tax_figures(year, edcp):
    portal = sign_in(Client(), year.user).get("/portal/taxes/").content.decode()
    assert "2026" in portal and "2,000.00" in portal
    other = User.objects.create_user("other-taxpayer")
    other.groups.add(Group.objects.get(name=Role.PARTICIPANT.value))
    PersonFactory(user=other)
    page = sign_in(Client(), other).get("/portal/taxes/").content.decode()
    assert "No tax figures yet" in page and "2,000.00" not in page
    assert sign_in(Client(), other).get("/api/taxes/me/years/").json() == []


def test_a_bad_taxpayer_number_is_refused_naming_the_field_and_changes_nothing(year):
    admin = user_in("administrator")
    beneficiary = Beneficiary.objects.get(name="Pell Marchbanks")
    response = client_of(admin).post(
        f"/staff/taxes/beneficiaries/{beneficiary.pk}/tax-information/",
        {
            "taxpayer_number": "12-34",
            "address_line1": "",
            "city": "Richmond",
            "state": "Virginia",
            "postal_code": "1",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "taxpayer number: 9 digits" in body and "address line 1: required" in body and "state" in body
    beneficiary.tax_info.refresh_from_db()
    assert beneficiary.tax_info.taxpayer_number == TIN
    assert (
        client_of(user_in("auditor"))
        .get(f"/staff/taxes/beneficiaries/{beneficiary.pk}/tax-information/")
        .status_code
        == 403
    )
