"""The BRP pages: staff record and read the Pension Plan figures and the quote; a participant sees only their own."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from books.models import DefinedBenefitRecord
from core.models import Document
from core.pdf import document_bytes, pdf_text
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation, separate
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_of(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def participant_user(participation, name: str) -> User:
    user = User.objects.create_user(name)
    user.groups.add(Group.objects.get(name="participant"))
    participation.person.user = user
    participation.person.save()
    return user


FIGURES = {
    "as_of": "2026-03-31",
    "unlimited_annual_benefit": "200000.00",
    "imputed_annual_benefit": "0.00",
    "payable_annual_benefit": "120000.00",
    "benefit_service_years": "19.00",
    "early_retirement_date": "2016-05-01",
    "normal_retirement_date": "2026-05-01",
    "early_adjustment_factor": "1",
    "spouse_name": "",
    "spouse_birth_date": "",
}


def test_staff_see_the_quote_step_by_step_with_its_sections(toy_basis):
    participation = brp_participation()
    page = (
        client_of(staff_user("aud", "auditor"))
        .get(f"/staff/pensions/defined-benefit/{participation.pk}/?separation=2026-04-20")
        .content.decode()
    )
    for text in (
        "Pension Plan benefit without the Tax Limits",
        "BRP 3.2(a)",
        "BRP 3.2(b)",
        "BRP 3.4(b)",
        "BRP 4.1",
        "70,000.00",
        "May 1, 2026",
        "BRP 4.2(a)",
        "Single Life Annuity",
        "5,833.33",
        "107,916.67",
        "Period Certain and Continuous, 60 payments",
        "needs the Spouse",
    ):
        assert text in page, text
    assert "Record figures" not in page  # an auditor reads only


def test_an_administrator_records_pension_plan_figures_and_an_auditor_may_not(toy_basis):
    participation = brp_participation()
    url = f"/staff/pensions/defined-benefit/{participation.pk}/figures"
    assert client_of(staff_user("aud", "auditor")).post(url, FIGURES).status_code == 403
    response = client_of(staff_user("adm", "administrator")).post(url, FIGURES)
    assert response.status_code == 302
    record = DefinedBenefitRecord.objects.get(participation=participation, as_of=dt.date(2026, 3, 31))
    assert record.unlimited_annual_benefit == Decimal("200000.00") and record.history.count() == 1


def test_figures_the_plan_refuses_are_not_recorded(toy_basis):
    participation = brp_participation()
    bad = {**FIGURES, "early_retirement_date": "2027-01-01", "normal_retirement_date": "2026-05-01"}
    response = client_of(staff_user("adm", "administrator")).post(
        f"/staff/pensions/defined-benefit/{participation.pk}/figures", bad, follow=True
    )
    assert (
        "Not recorded: the Early Retirement Date is after the Normal Retirement Date"
        in response.content.decode()
    )
    assert not DefinedBenefitRecord.objects.filter(as_of=dt.date(2026, 3, 31)).exists()


def test_a_participant_sees_their_own_benefit_and_gets_404_for_another(toy_basis):
    mine, theirs = brp_participation(), brp_participation()
    user = participant_user(mine, "mine")
    client = client_of(user)
    page = client.get(f"/portal/pensions/defined-benefit/{mine.pk}/?separation=2026-04-20")
    assert page.status_code == 200 and "5,833.33" in page.content.decode()
    assert client.get(f"/portal/pensions/defined-benefit/{theirs.pk}/").status_code == 404
    assert client.post(f"/portal/pensions/defined-benefit/{theirs.pk}/statement").status_code == 404
    assert (
        client.get("/portal/pensions/defined-benefit/").url == f"/portal/pensions/defined-benefit/{mine.pk}/"
    )


def test_the_statement_pdf_holds_the_steps_forms_dates_sections_and_signature_lines(
    toy_basis, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    url = f"/staff/pensions/defined-benefit/{participation.pk}/statement"
    # Issue 12: the auditor only reads; storing the statement is for the committee and administrators.
    assert client_of(staff_user("aud", "auditor")).post(url, {"separation": "2026-04-20"}).status_code == 403
    assert not Document.objects.filter(kind="brp_benefit_statement").exists()
    response = client_of(staff_user("adm", "administrator")).post(url, {"separation": "2026-04-20"})
    assert response.status_code == 302
    doc = Document.objects.get(kind="brp_benefit_statement")
    assert doc.person == participation.person
    text = " ".join(pdf_text(document_bytes(doc)).split())
    for expected in (
        "Statement of Supplemental Benefit",
        "BRP 3.2(a)",
        "BRP 3.2(b)",
        "BRP 3.4(b)",
        "BRP 3.4(c)",
        "BRP 4.2(a)",
        "BRP 4.2(c)",
        "May 1, 2026",
        "Qualified Joint and Survivor Annuity",
        "2,225.09",
        "1,112.54",
        "26,701.03",
        "107,916.67",
        "toy table",
        "0.0% flat",
        "Committee member, signature and date",
        "BRP 3.2 Supplemental Benefit The Participant shall receive a Supplemental Benefit",
    ):
        assert expected in text, expected
    assert text.count("Committee member, signature and date") == 3  # BRP 6.1: at least three members


def test_the_benefit_in_pay_shows_its_payments_on_both_sides(toy_basis):
    participation = brp_participation()
    from tests.pensions.factories import key_employees

    key_employees(2025)
    separate(participation, dt.date(2026, 4, 20))
    staff = (
        client_of(staff_user("aud", "auditor"))
        .get(f"/staff/pensions/defined-benefit/{participation.pk}/")
        .content.decode()
    )
    assert "In pay" in staff or "in pay" in staff
    assert "Monthly payment 1" in staff and "5,833.33" in staff
    user = participant_user(participation, "mine")
    own = client_of(user).get(f"/portal/pensions/defined-benefit/{participation.pk}/").content.decode()
    assert "Monthly payment 2" in own and "You separated from service on April 20, 2026" in own


def test_staff_record_the_survivors_death_and_only_with_the_capability(toy_basis):
    from payments.models import Annuity
    from tests.pensions.factories import key_employees

    key_employees(2025)
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 6, 10), kind="death")
    url = f"/staff/pensions/defined-benefit/{participation.pk}/survivor-death"
    assert client_of(staff_user("aud", "auditor")).post(url, {"died_on": "2026-08-20"}).status_code == 403
    response = client_of(staff_user("adm", "administrator")).post(url, {"died_on": "2026-08-20"}, follow=True)
    assert "their payments stop after that month" in response.content.decode()
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.survivor_died_on == dt.date(2026, 8, 20) and annuity.status == Annuity.Status.COMPLETE


def test_brp_4_2_b_the_staff_plan_page_shows_the_basis_with_its_segment_boundaries_and_citation():
    page = client_of(staff_user("aud", "auditor")).get("/staff/plans/BRP/").content.decode()
    row = page[page.index('id="p-actuarial_basis"') :]
    row = row[: row.index("</section>")]
    assert "BRP 4.2(c)" in row
    assert "segment_boundaries_years" in row or "Segment boundaries years" in row
    assert "5" in row and "20" in row and "less than 5 years" in row


def test_a_participant_whose_benefit_is_in_pay_sees_it_and_no_quotes_or_link_to_change_the_form(toy_basis):
    from freezegun import freeze_time

    from tests.pensions.factories import key_employees

    key_employees(2025)
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    user = participant_user(participation, "mine")
    with freeze_time("2026-06-15 12:00:00"):
        page = client_of(user).get(f"/portal/pensions/defined-benefit/{participation.pk}/").content.decode()
    assert "Your benefit is in pay" in page and "5,833.33" in page and "BRP 3.4(c)" in page
    assert "Period Certain and Continuous, 60 payments" not in page  # no quotes of other forms
    assert (
        '/portal/elections/">elections</a>' not in page
    )  # no link to change a form that can no longer change


def test_before_commencement_the_participant_still_sees_the_forms_and_the_elections_link(toy_basis):
    from freezegun import freeze_time

    from tests.pensions.factories import key_employees

    key_employees(2025)
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    user = participant_user(participation, "mine")
    with freeze_time("2026-04-22 12:00:00"):
        page = client_of(user).get(f"/portal/pensions/defined-benefit/{participation.pk}/").content.decode()
    assert (
        "Period Certain and Continuous, 60 payments" in page and '/portal/elections/">elections</a>' in page
    )


def test_brp_6_7_staff_record_an_order_on_the_page_and_an_auditor_may_not(toy_basis):
    from pensions.models import BenefitOrder

    participation = brp_participation()
    url = f"/staff/pensions/defined-benefit/{participation.pk}/orders"
    data = {"alternate_payee": "Former Spouse", "received_on": "2026-03-01", "percent": "40"}
    assert client_of(staff_user("aud", "auditor")).post(url, data).status_code == 403
    page = client_of(staff_user("adm", "administrator")).post(url, data, follow=True).content.decode()
    assert "Order recorded: 40% of each payment to Former Spouse (BRP 6.7)" in page
    assert BenefitOrder.objects.get(participation=participation).percent == Decimal("40")
    both = {**data, "amount": "100.00"}
    page = client_of(staff_user("adm2", "administrator")).post(url, both, follow=True).content.decode()
    assert "Give either a percentage of each payment or an amount" in page
    assert BenefitOrder.objects.filter(participation=participation).count() == 1


@pytest.mark.parametrize("day", ["0001-01-01", "9999-12-31"])
def test_the_brp_quote_refuses_a_separation_date_outside_the_range(toy_basis, day):
    participation = brp_participation()
    client = client_of(staff_user("aud", "auditor"))  # issue 12: 9999-12-31 answered 500
    response = client.get(f"/staff/pensions/defined-benefit/{participation.pk}/", {"separation": day})
    assert response.status_code in (200, 400)
    assert "is outside 1900-01-01 to 2199-12-31" in response.content.decode()
