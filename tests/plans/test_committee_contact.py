"""Issue 11: the committee contact (where claims, appeals and paper forms go) is a dated plan setting the Committee
(manage_plans) sets on the staff plan page, kept with its history; the denial notice and the blank election form
print the contact in force on their date."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from claims.selectors import review_procedure_text
from core.models import AuditEvent
from core.pdf import document_bytes, pdf_text
from elections.pdf import blank_form_context
from plans.models import Plan, PlanSetting
from plans.selectors import committee_contact
from tests.claims.factories import at, deny, file_claim
from tests.claims.factories import participant as claims_participant
from tests.pages.conftest import client_of
from tests.payments.factories import staff_user

pytestmark = pytest.mark.django_db

NEW = {
    "effective_date": "2025-02-01",
    "name": "Administrative Committee",
    "address": "Executive Benefits\n1 New Street\nRichmond, Virginia 23219",
    "email": "committee@sponsor.example",
    "reason": "The benefits office moved",
}


def test_the_committee_sets_the_contact_from_a_date_with_its_history():
    edcp = Plan.objects.get(code="EDCP")
    url = reverse("plans_staff:contact_set", args=["EDCP"])
    # administrators and auditors may not (manage_plans is the Committee's)
    for role in ("administrator", "auditor"):
        assert client_of(staff_user(f"x-{role}", role)).post(url, NEW).status_code == 403
    committee = client_of(staff_user("cora", "committee"))
    page = committee.get(reverse("plans_staff:plan", args=["EDCP"])).content.decode()
    assert (
        'id="committee-contact"' in page and "nqdc-committee@example.com" in page
    )  # the catalog's, until set
    bad = committee.post(url, {**NEW, "email": "not an email", "address": ""})
    assert bad.status_code == 400 and not PlanSetting.objects.exists()
    assert committee.post(url, NEW)["Location"] == reverse("plans_staff:plan", args=["EDCP"])
    # a correction of the same date is kept in the history
    assert committee.post(url, {**NEW, "email": "claims@sponsor.example"}).status_code == 302
    setting = PlanSetting.objects.get()
    assert setting.value["email"] == "claims@sponsor.example" and setting.history.count() == 2
    assert setting.recorded_by == "cora"
    assert AuditEvent.objects.filter(action="plan_setting.set").count() == 2
    assert committee_contact(plan=edcp, as_of=dt.date(2025, 1, 31))["email"] == "nqdc-committee@example.com"
    in_force = committee_contact(plan=edcp, as_of=dt.date(2025, 2, 1))
    assert in_force["address"] == ["Executive Benefits", "1 New Street", "Richmond, Virginia 23219"]
    page = committee.get(reverse("plans_staff:plan", args=["EDCP"])).content.decode()
    assert "claims@sponsor.example" in page and "The benefits office moved" in page


def test_documents_print_the_contact_in_force_on_their_date(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    committee = client_of(staff_user("cora", "committee"))
    committee.post(reverse("plans_staff:contact_set", args=["EDCP"]), NEW)
    edcp = Plan.objects.get(code="EDCP")
    assert blank_form_context(edcp, 2026)["contact"]["email"] == "committee@sponsor.example"
    assert blank_form_context(edcp, 2025)["contact"]["email"] == "nqdc-committee@example.com"  # Dec 31, 2024
    alice = claims_participant("EDCP", username="alice", first_name="Alice", last_name="Claimant")
    claim = file_claim(alice, now=at(2025, 2, 10))
    decision = deny(claim, now=at(2025, 3, 3), actor=staff_user("dele", "administrator"))
    assert review_procedure_text(claim=claim)
    text = " ".join(pdf_text(document_bytes(decision.notice)).split())
    assert "committee@sponsor.example" in text and "1 New Street" in text
    assert "nqdc-committee@example.com" not in text
