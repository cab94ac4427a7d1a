"""The portal and staff pages: thin over the services, demanding what a notice needs, refusing clearly."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from claims.models import Claim, ClaimDecision, ClaimDocument, State
from claims.selectors import review_procedure_text
from claims.services import appeal_file, claim_approve, claim_assign
from core.models import Document
from core.pdf import document_bytes
from core.report_files import report_file_run
from plans.models import Plan
from tests.claims.factories import at, deny, file_claim, png_bytes, section, upload
from tests.factories import ParticipationFactory
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def _claim_form(**extra) -> dict:
    data = {
        "plan": Plan.objects.get(code="EDCP").pk,
        "capacity": "participant",
        "subject": "amount",
        "description": "My 2024 company contribution is missing.",
    }
    data.update(extra)
    return data


# --- portal -------------------------------------------------------------------------------------------
def test_a_participant_files_a_claim_with_attachments_in_the_portal(alice):
    client = client_for(alice.user)
    assert client.get(reverse("claims_portal:new")).status_code == 200
    response = client.post(
        reverse("claims_portal:new"),
        _claim_form(attachments=[upload("statement.pdf"), upload("photo.png", png_bytes(), "image/png")]),
    )
    claim = Claim.objects.get()
    assert response.status_code == 302 and response["Location"] == (
        reverse("claims_portal:detail", args=[claim.pk]) + "?receipt=1"
    )
    assert (claim.claimant, claim.channel, claim.delivery, claim.received_on) == (
        alice,
        "portal",
        "portal",
        timezone.localdate(),
    )
    assert sorted(d.original_name for d in claim.documents.all()) == ["photo.png", "statement.pdf"]
    page = client.get(response["Location"]).content.decode()
    assert "Received" in page and "Initial decision due" in page and "statement.pdf" in page


def test_the_portal_refuses_a_wrong_file_with_a_clear_message_and_stores_nothing(alice):
    response = client_for(alice.user).post(
        reverse("claims_portal:new"), _claim_form(attachments=[upload("notes.txt", b"hello", "text/plain")])
    )
    assert response.status_code == 400
    assert "is not accepted: send a PDF, PNG or JPEG file" in response.content.decode()
    assert not Claim.objects.exists() and not ClaimDocument.objects.exists()


def test_the_portal_refuses_a_claim_for_someone_else_without_authorisation(alice, bob):
    client = client_for(bob.user)
    response = client.post(reverse("claims_portal:new"), _claim_form(on_behalf_of=alice.employee_number))
    assert response.status_code == 400
    assert "needs the claimant&#x27;s written authorisation" in response.content.decode()
    assert not Claim.objects.exists()
    response = client.post(
        reverse("claims_portal:new"),
        _claim_form(on_behalf_of=alice.employee_number, authorisation=upload("authorisation.pdf")),
    )
    claim = Claim.objects.get()
    assert response.status_code == 302 and (claim.claimant, claim.representative) == (alice, bob)
    assert response["Location"] == reverse("claims_portal:list")


def test_the_claimant_appeals_and_requests_the_claim_file_in_the_portal(alice, admin_user):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=20))
    deny(claim, now=timezone.now() - dt.timedelta(days=10), actor=admin_user)
    client = client_for(alice.user)
    page = client.get(reverse("claims_portal:detail", args=[claim.pk])).content.decode()
    assert 'id="appeal-form"' in page
    response = client.post(reverse("claims_portal:appeal", args=[claim.pk]), {"issues": " "})
    assert response.status_code == 400 and Claim.objects.get().state == State.DENIED
    response = client.post(
        reverse("claims_portal:appeal", args=[claim.pk]),
        {
            "issues": "The contribution is missing.",
            "evidence": "My statement.",
            "files": [upload("evidence.pdf")],
        },
    )
    assert response.status_code == 302
    claim.refresh_from_db()
    assert claim.state == State.APPEAL_RECEIVED and claim.documents.filter(kind="evidence").count() == 1
    response = client.post(reverse("claims_portal:claim_file", args=[claim.pk]))
    assert response.status_code == 302
    request = claim.file_requests.get()
    assert request.fulfilled_on == timezone.localdate() and request.document.person == alice
    page = client.get(reverse("claims_portal:detail", args=[claim.pk])).content.decode()
    assert reverse("claims_portal:notice", args=[claim.pk, request.document.pk]) in page


def test_a_late_appeal_in_the_portal_is_refused_and_the_claim_shows_abandoned(alice, admin_user):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=120))
    deny(claim, now=timezone.now() - dt.timedelta(days=61), actor=admin_user)
    response = client_for(alice.user).post(
        reverse("claims_portal:appeal", args=[claim.pk]), {"issues": "Late"}
    )
    assert response.status_code == 400
    assert "the appeal window closed" in response.content.decode()
    assert Claim.objects.get().state == State.ABANDONED


# --- staff --------------------------------------------------------------------------------------------
def test_the_deny_form_demands_each_element_and_nothing_changes_without_them(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    client = client_for(admin_user)
    page = client.get(reverse("claims_staff:detail", args=[claim.pk])).content.decode()
    assert "(a) The specific reasons" in page and "502(a)" in page  # the procedure is prefilled
    response = client.post(
        reverse("claims_staff:deny", args=[claim.pk]),
        {
            "reasons": "Credited already.",
            "review_procedure": review_procedure_text(claim=claim),
            "delivery": "portal",
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The form is incomplete" in html and html.count("This field is required.") == 2  # (b) and (c)
    assert Claim.objects.get().state == State.RECEIVED and not ClaimDecision.objects.exists()
    response = client.post(
        reverse("claims_staff:deny", args=[claim.pk]),
        {
            "reasons": "Credited already.",
            "provisions": [section("EDCP", "4.1").pk],
            "additional_material": "None is needed.",
            "review_procedure": "Write to us.",
            "delivery": "portal",
        },
    )
    assert response.status_code == 400
    assert "(d) the time limit for an appeal (60 days)" in response.content.decode()
    form = {
        "reasons": "Credited already.",
        "provisions": [section("EDCP", "4.1").pk],
        "additional_material": "None is needed.",
        "review_procedure": review_procedure_text(claim=claim),
        "delivery": "mail",
    }
    response = client.post(reverse("claims_staff:deny", args=[claim.pk]), form)
    review_url = reverse("claims_staff:deny_review", args=[claim.pk])
    assert response["Location"] == review_url and not ClaimDecision.objects.exists()  # the letter first
    reviewed = re.search(r'name="reviewed" value="([^"]+)"', client.get(review_url).content.decode()).group(1)
    response = client.post(reverse("claims_staff:deny", args=[claim.pk]), {**form, "reviewed": reviewed})
    assert response.status_code == 302
    decision = ClaimDecision.objects.get()
    assert decision.outcome == "denied" and decision.delivery == "mail" and decision.notice is not None


def test_an_extension_after_the_deadline_is_refused_on_the_claim_page(alice, admin_user):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=91))
    response = client_for(admin_user).post(
        reverse("claims_staff:extend", args=[claim.pk]),
        {
            "special_circumstances": "Records",
            "expected_on": (timezone.localdate() + dt.timedelta(days=30)).isoformat(),
        },
    )
    assert response.status_code == 400 and "too late to extend" in response.content.decode()
    assert Claim.objects.get().state == State.RECEIVED


def test_the_committee_decides_the_appeal_with_the_form_and_the_delegate_cannot(
    alice, admin_user, committee_user
):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=30))
    deny(claim, now=timezone.now() - dt.timedelta(days=20), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=timezone.now() - dt.timedelta(days=5), actor="alice")
    url = reverse("claims_staff:appeal_decide", args=[claim.pk])
    assert client_for(admin_user).post(url, {"outcome": "approved"}).status_code == 403
    client = client_for(committee_user)
    response = client.post(url, {"outcome": "denied", "reasons": "Still credited."})
    assert response.status_code == 400 and "must name the plan provisions" in response.content.decode()
    response = client.post(
        url, {"outcome": "denied", "reasons": "Still credited.", "provisions": [section("EDCP", "4.1").pk]}
    )
    assert response.status_code == 302
    assert Claim.objects.get().state == State.APPEAL_DENIED


def test_staff_record_a_paper_claim_with_the_date_it_was_received(admin_user, alice):
    ParticipationFactory(person=alice, plan=Plan.objects.get(code="BRP"))
    client = client_for(admin_user)
    response = client.post(
        reverse("claims_staff:new"),
        {
            "plan": Plan.objects.get(code="BRP").pk,
            "capacity": "former_participant",
            "claimant_number": alice.employee_number,
            "subject": "amount",
            "description": "Paper claim",
            "received_on": "2025-02-03",
            "delivery": "mail",
            "attachments": [upload("letter.pdf")],
        },
    )
    claim = Claim.objects.get()
    assert response.status_code == 302
    assert (claim.channel, claim.delivery, claim.received_on, claim.decision_due_on) == (
        "paper",
        "mail",
        dt.date(2025, 2, 3),
        dt.date(2025, 5, 4),
    )


def test_the_queue_sorts_open_claims_by_next_deadline_and_colours_the_close_ones(alice, bob, admin_user):
    now = timezone.now()
    later = file_claim(alice, now=now, subject="vesting")  # 90 days left
    overdue = file_claim(bob, now=now, received_on=timezone.localdate() - dt.timedelta(days=95))
    close = file_claim(
        alice, now=now, received_on=timezone.localdate() - dt.timedelta(days=80), subject="timing"
    )
    done = file_claim(bob, now=now, subject="timing")
    claim_approve(claim=done, reasons="Yes", approved_benefit="All", now=now, actor=admin_user)
    claim_assign(claim=close, reviewer=admin_user, now=now, actor=admin_user)
    html = client_for(admin_user).get(reverse("claims_staff:queue")).content.decode()
    order = re.findall(r'claims/(\d+)/">C-', html)
    assert order == [str(overdue.pk), str(close.pk), str(later.pk)]
    assert 'class="claims-overdue"' in html and 'class="claims-close"' in html
    assert '<span class="badge denied">-5</span>' in html and '<span class="badge warning">10</span>' in html


def test_the_reports_count_by_status_and_plan_and_list_late_decisions(alice, bob, admin_user):
    on_time = file_claim(alice, now=at(2025, 1, 10))
    late = file_claim(bob, now=at(2025, 1, 10))
    claim_approve(claim=on_time, reasons="Yes", approved_benefit="All", now=at(2025, 2, 9), actor=admin_user)
    deny(late, now=at(2025, 4, 13), actor=admin_user)
    html = client_for(admin_user).get(reverse("claims_staff:reports")).content.decode()
    assert re.search(r"<td>Approved</td><td class=\"num\">1</td>", html)
    assert re.search(r"<td>Denied</td><td class=\"num\">1</td>", html)
    late_table = html.split('id="late"')[1].split("</table>")[0]
    assert late.number in late_table and on_time.number not in late_table
    assert '<td class="num">3</td>' in late_table  # decided on day 93
    averages = html.split('id="averages"')[1].split("</table>")[0]
    assert '<td class="num">2</td><td class="num">61.5</td><td class="num">1</td>' in averages
    assert html.count("Prepare as a file") == 3
    # The same reports prepared as files (core.report_files).
    files = {}
    for name in ("claims_by_status", "claims_late", "claims_average_days"):
        run = report_file_run(name=name, args=["2025-04-14"], now=at(2025, 4, 14))
        files[name] = document_bytes(Document.objects.get(pk=run.stats["document"])).decode()
    assert f"Approved,{on_time.plan.code},1\n" in files["claims_by_status"]
    assert f"Denied,{late.plan.code},1\n" in files["claims_by_status"]
    assert files["claims_late"].splitlines()[1].startswith(f"{late.number},{late.plan.code},")
    assert on_time.number not in files["claims_late"]
    assert ",2,61.5,1" in files["claims_average_days"]
