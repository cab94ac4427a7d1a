"""Filing a claim and an appeal through the API: the same services as the portal, deny by default.

A participant files as themselves (or as an authorized representative, with the claimant's authorisation) and
appeals only their own denied claim; staff holding record_events record paper claims and appeals; other staff
get 403. Bad input answers 400 with a clear message and creates nothing.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from claims.models import Claim, ClaimAppeal, ClaimDocument, State
from tests.claims.factories import deny, file_claim, participant, png_bytes, upload
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

CLAIMS = reverse("claims_api:claims")


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def claim_form(**extra) -> dict:
    data = {
        "plan": "EDCP",
        "capacity": "participant",
        "subject": "amount",
        "description": "My 2024 company contribution is missing.",
    }
    data.update(extra)
    return data


def nothing_created() -> bool:
    media = Path(settings.MEDIA_ROOT)
    return (
        not Claim.objects.exists()
        and not ClaimDocument.objects.exists()
        and not (media.exists() and any(media.rglob("*.*")))
    )


@pytest.fixture
def denied(alice, admin_user):
    """Alice's claim, denied ten days ago on the portal: the appeal window is open."""
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=20))
    deny(claim, now=timezone.now() - dt.timedelta(days=10), actor=admin_user)
    claim.refresh_from_db()
    return claim


# --- filing a claim ------------------------------------------------------------------------------------------
def test_a_participant_files_a_claim_with_attachments_as_in_the_portal(alice):
    response = client_for(alice.user).post(
        CLAIMS,
        claim_form(attachments=[upload("statement.pdf"), upload("photo.png", png_bytes(), "image/png")]),
    )
    assert response.status_code == 201, response.content
    claim = Claim.objects.get()
    body = response.json()
    assert (body["id"], body["state"], body["received_on"], body["next_deadline_kind"]) == (
        claim.pk,
        "received",
        timezone.localdate().isoformat(),
        "decision",
    )
    assert "reviewer" not in body  # the claimant's view of the claim
    assert (claim.claimant, claim.participant, claim.representative, claim.channel, claim.delivery) == (
        alice,
        alice,
        None,
        "portal",
        "portal",
    )
    assert sorted(d.original_name for d in claim.documents.all()) == ["photo.png", "statement.pdf"]
    assert claim.transitions.get().actor_label == "alice"


def test_a_beneficiary_files_naming_the_participant(alice):
    widow = participant("EDCP", username="widow", first_name="Wanda", last_name="Widow")
    client = client_for(widow.user)
    response = client.post(CLAIMS, claim_form(capacity="beneficiary"))
    assert response.status_code == 400 and "must name the participant" in response.json()["detail"]
    response = client.post(
        CLAIMS, claim_form(capacity="beneficiary", participant_number=alice.employee_number)
    )
    # 202 and a neutral answer, as for a number nobody has (tests/claims/test_employee_numbers.py).
    assert response.status_code == 202 and set(response.json()) == {"detail"}
    claim = Claim.objects.get()
    assert (claim.claimant, claim.participant, claim.capacity) == (widow, alice, "beneficiary")


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "notes.txt",
            b"plain text",
            "the attachment 'notes.txt' is not accepted: send a PDF, PNG or JPEG file",
        ),
        (
            "statement.pdf",
            b"MZ\x90\x00 not a pdf",
            "the attachment 'statement.pdf' is not a real PDF file: send a PDF, PNG or JPEG file",
        ),
    ],
)
def test_a_file_of_the_wrong_type_is_refused_with_a_clear_message_and_nothing_is_created(
    alice, name, data, message
):
    response = client_for(alice.user).post(CLAIMS, claim_form(attachments=[upload(), upload(name, data)]))
    assert response.status_code == 400
    assert response.json() == {"detail": message}
    assert nothing_created()


def test_missing_fields_are_refused_one_by_one_and_nothing_is_created(alice):
    client = client_for(alice.user)
    response = client.post(CLAIMS, {"attachments": [upload()]})
    assert response.status_code == 400
    assert response.json() == {
        field: ["This field is required."] for field in ("plan", "capacity", "subject", "description")
    }
    response = client.post(CLAIMS, claim_form(plan="XYZ", description=" "))
    assert response.status_code == 400
    assert set(response.json()) == {"plan", "description"}
    assert nothing_created()


def test_a_participant_files_only_as_themselves_unless_authorised(alice, bob):
    client = client_for(bob.user)
    response = client.post(CLAIMS, claim_form(on_behalf_of=alice.employee_number))
    assert (
        response.status_code == 400
        and "needs the claimant's written authorisation" in response.json()["detail"]
    )
    # What only staff record is refused, not silently dropped.
    for extra in ({"claimant_number": alice.employee_number}, {"received_on": "2020-01-02"}):
        response = client.post(CLAIMS, claim_form(**extra))
        assert response.status_code == 400
        assert response.json() == {"non_field_errors": [f"not a field of this request: {next(iter(extra))}"]}
    assert nothing_created()
    response = client.post(
        CLAIMS, claim_form(on_behalf_of=alice.employee_number, authorisation=upload("authorisation.pdf"))
    )
    assert response.status_code == 202 and "Alice" not in response.content.decode()
    claim = Claim.objects.get()
    assert (claim.claimant, claim.representative, claim.representative_authorisation.kind) == (
        alice,
        bob,
        "authorisation",
    )


def test_staff_without_record_events_get_403_and_an_administrator_records_a_paper_claim(
    alice, auditor_user, committee_user, admin_user
):
    for user in (auditor_user, committee_user):
        assert client_for(user).post(CLAIMS, claim_form()).status_code == 403
    assert nothing_created()
    client = client_for(admin_user)
    response = client.post(CLAIMS, claim_form(claimant_number=alice.employee_number))
    assert response.status_code == 400 and response.json() == {"received_on": ["This field is required."]}
    response = client.post(
        CLAIMS,
        claim_form(
            claimant_number=alice.employee_number,
            received_on="2025-02-03",
            attachments=[upload("letter.pdf")],
        ),
    )
    assert response.status_code == 201
    claim = Claim.objects.get()
    assert (claim.claimant, claim.channel, claim.delivery, claim.received_on, claim.decision_due_on) == (
        alice,
        "paper",
        "mail",
        dt.date(2025, 2, 3),
        dt.date(2025, 5, 4),
    )
    assert response.json()["filed_by"] == "delegate"


def test_signed_out_callers_cannot_file(alice):
    assert Client().post(CLAIMS, claim_form()).status_code in (401, 403)
    assert nothing_created()


# --- appealing ---------------------------------------------------------------------------------------------
def test_the_claimant_appeals_their_denied_claim_with_evidence(denied, alice):
    url = reverse("claims_api:appeal", args=[denied.pk])
    response = client_for(alice.user).post(
        url,
        {
            "issues": "The contribution is missing.",
            "evidence": "Statement.",
            "files": [upload("evidence.pdf")],
        },
    )
    assert response.status_code == 201, response.content
    assert response.json()["state"] == "appeal_received"
    denied.refresh_from_db()
    assert (denied.state, denied.appeal.received_on, denied.appeal.filed_by) == (
        State.APPEAL_RECEIVED,
        timezone.localdate(),
        "alice",
    )
    assert [d.original_name for d in denied.documents.filter(kind="evidence")] == ["evidence.pdf"]


def test_another_participants_claim_cannot_be_appealed_or_seen(denied, bob):
    client = client_for(bob.user)
    response = client.post(reverse("claims_api:appeal", args=[denied.pk]), {"issues": "Mine now"})
    assert response.status_code == 404
    assert client.get(reverse("claims_api:claim", args=[denied.pk])).status_code == 404
    denied.refresh_from_db()
    assert denied.state == State.DENIED and not ClaimAppeal.objects.exists()


def test_an_appeal_without_issues_or_with_a_wrong_file_is_refused_and_nothing_changes(denied, alice):
    client, url = client_for(alice.user), reverse("claims_api:appeal", args=[denied.pk])
    response = client.post(url, {"evidence": "x"})
    assert response.status_code == 400 and response.json() == {"issues": ["This field is required."]}
    response = client.post(url, {"issues": "Missing", "files": [upload("evidence.exe", b"MZ\x90\x00")]})
    assert response.status_code == 400
    assert response.json() == {
        "detail": "the evidence 'evidence.exe' is not accepted: send a PDF, PNG or JPEG file"
    }
    response = client.post(url, {"issues": "Missing", "received_on": "2020-01-01"})
    assert response.status_code == 400 and "not a field of this request: received_on" in str(response.json())
    denied.refresh_from_db()
    assert denied.state == State.DENIED and not ClaimAppeal.objects.exists()
    assert not denied.documents.filter(kind="evidence").exists()


def test_a_claim_not_denied_cannot_be_appealed(alice):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=3))
    response = client_for(alice.user).post(reverse("claims_api:appeal", args=[claim.pk]), {"issues": "Early"})
    assert response.status_code == 400
    assert response.json()["detail"] == f"{claim.number} is received: it cannot be appealed now (EDCP 11.3)"


def test_an_appeal_after_the_window_is_refused_and_the_claim_is_abandoned(alice, admin_user):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=120))
    deny(claim, now=timezone.now() - dt.timedelta(days=61), actor=admin_user)
    response = client_for(alice.user).post(reverse("claims_api:appeal", args=[claim.pk]), {"issues": "Late"})
    assert response.status_code == 400 and "the appeal window closed" in response.json()["detail"]
    assert Claim.objects.get().state == State.ABANDONED and not ClaimAppeal.objects.exists()


def test_staff_without_record_events_cannot_appeal_and_an_administrator_records_a_paper_appeal(
    denied, auditor_user, committee_user, admin_user
):
    url = reverse("claims_api:appeal", args=[denied.pk])
    for user in (auditor_user, committee_user):
        assert client_for(user).post(url, {"issues": "x"}).status_code == 403
    received = timezone.localdate() - dt.timedelta(days=2)
    response = client_for(admin_user).post(url, {"issues": "By letter.", "received_on": received.isoformat()})
    assert response.status_code == 201
    denied.refresh_from_db()
    assert (denied.state, denied.appeal.received_on, denied.appeal.filed_by) == (
        State.APPEAL_RECEIVED,
        received,
        "delegate",
    )


# --- answering a request for information (29 CFR 2560.503-1(f)(4)) ---------------------------------------------
@pytest.fixture
def asked(alice, admin_user):
    """Alice's claim, received 30 days ago; 5 days ago an extension notice asked her for her Form W-2."""
    from claims.services import claim_extend

    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=30))
    claim_extend(
        claim=claim,
        special_circumstances="You have not sent the pay records we need.",
        expected_on=claim.received_on + dt.timedelta(days=180),
        now=timezone.now() - dt.timedelta(days=5),
        actor=admin_user,
        requests_information=True,
        information_requested="Your 2024 Form W-2.",
    )
    claim.refresh_from_db()
    return claim


def test_the_claimant_answers_the_request_and_the_decision_falls_due_later_by_the_days_waited(asked, alice):
    assert asked.decision_due_on is None  # suspended while the answer is awaited
    response = client_for(alice.user).post(
        reverse("claims_api:information", args=[asked.pk]),
        {"response": "Here it is.", "files": [upload("w2.pdf")]},
    )
    assert response.status_code == 201, response.content
    asked.refresh_from_db()
    extension = asked.extensions.get()
    assert (extension.information_received_on, extension.information_response) == (
        timezone.localdate(),
        "Here it is.",
    )
    # 180 days from receipt, plus the 5 days the period stood still
    assert asked.decision_due_on == asked.received_on + dt.timedelta(days=185)
    assert response.json()["decision_due_on"] == asked.decision_due_on.isoformat()
    assert [d.original_name for d in asked.documents.filter(kind="information")] == ["w2.pdf"]
    again = client_for(alice.user).post(
        reverse("claims_api:information", args=[asked.pk]), {"response": "Again"}
    )
    assert again.status_code == 400 and "already received" in again.json()["detail"]


def test_an_empty_or_wrong_answer_is_refused_and_nothing_changes(asked, alice):
    client, url = client_for(alice.user), reverse("claims_api:information", args=[asked.pk])
    response = client.post(url, {})
    assert response.status_code == 400 and "send the information requested" in str(response.json())
    response = client.post(url, {"files": [upload("w2.exe", b"MZ\x90\x00")]})
    assert response.status_code == 400 and "is not accepted" in response.json()["detail"]
    response = client.post(url, {"response": "x", "received_on": "2020-01-01"})
    assert response.status_code == 400 and "not a field of this request: received_on" in str(response.json())
    assert asked.extensions.get().information_received_on is None
    assert not asked.documents.filter(kind="information").exists()


def test_another_participant_cannot_answer_and_staff_record_a_paper_answer(
    asked, bob, auditor_user, admin_user
):
    url = reverse("claims_api:information", args=[asked.pk])
    assert client_for(bob.user).post(url, {"response": "Mine"}).status_code == 404
    assert client_for(auditor_user).post(url, {"response": "x"}).status_code == 403
    assert asked.extensions.get().information_received_on is None
    received = timezone.localdate() - dt.timedelta(days=1)
    response = client_for(admin_user).post(
        url, {"response": "By letter.", "received_on": received.isoformat()}
    )
    assert response.status_code == 201, response.content
    asked.refresh_from_db()
    assert asked.decision_due_on == asked.received_on + dt.timedelta(days=184)


def test_a_claim_without_a_request_has_nothing_to_answer(alice):
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=3))
    response = client_for(alice.user).post(
        reverse("claims_api:information", args=[claim.pk]), {"response": "x"}
    )
    assert response.status_code == 400 and "asked the claimant for information" in response.json()["detail"]


# --- the schema --------------------------------------------------------------------------------------------
def test_the_schema_documents_both_posts_as_multipart_with_binary_files():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    for path, body, files, answers in (
        # 202: filed for someone else, recorded and pending staff verification of the representative.
        ("/api/claims/claims/", "ClaimFileIn", "attachments", {"201", "202", "400"}),
        ("/api/claims/claims/{id}/appeal/", "AppealIn", "files", {"201", "400"}),
    ):
        post = schema["paths"][path]["post"]
        assert post["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"].endswith(f"/{body}")
        assert set(post["responses"]) == answers
        assert components[body]["properties"][files]["items"]["format"] == "binary"
