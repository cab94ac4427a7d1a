"""Issue 12, finding 1: acting for someone else needs proof that staff verified (29 CFR 2560.503-1(b)(4)).

A claim filed for someone else is received (its clock starts), but the representative sees nothing about the
claimant and is sent nothing until staff record a decision on the authorisation; only plans the claimant is in
can be chosen; an unknown and a known employee number get the same answer, in the portal and the API.
"""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from claims.models import Claim, RepresentativeStatus
from claims.services import (
    ClaimRefused,
    appeal_file,
    claim_file_fulfil,
    claim_file_request,
    claim_representative_decide,
)
from core.models import AuditEvent
from plans.models import Plan
from tests.claims.factories import at, deny, file_claim, participant, upload
from tests.factories import consent_to_email
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def portal_form(plan_code: str = "EDCP", **extra) -> dict:
    data = {
        "plan": Plan.objects.get(code=plan_code).pk,
        "capacity": "participant",
        "subject": "amount",
        "description": "My 2024 company contribution is missing.",
        "authorisation": upload("authorisation.pdf"),
    }
    data.update(extra)
    return data


def api_form(plan_code: str = "EDCP", **extra) -> dict:
    return {**portal_form(**extra), "plan": plan_code}


@pytest.fixture
def mallory(db):
    return participant("EDCP", username="mallory", first_name="Mallory", last_name="Attacker")


def _answer_text(response) -> str:
    """What the filer is told: the message shown on the page they land on."""
    return [str(m) for m in response.context["messages"]][0]


def test_portal_same_answer_for_unknown_known_and_outside_the_plan_numbers(alice, mallory):
    """The attack: sequential employee numbers tried one by one must not tell who exists or who is in a plan."""
    client = client_for(mallory.user)
    answers = {}
    for label, number, plan in [
        ("unknown", "NOBODY-1", "EDCP"),
        ("known, not in the plan", alice.employee_number, "RRP"),
        ("known, in the plan", alice.employee_number, "EDCP"),
    ]:
        response = client.post(
            reverse("claims_portal:new"), portal_form(plan, on_behalf_of=number), follow=True
        )
        assert response.status_code == 200, label
        text = _answer_text(response).replace(number, "N").replace(Plan.objects.get(code=plan).name, "P")
        answers[label] = text
        assert "Alice" not in response.content.decode() and "Claimant" not in response.content.decode()
    assert len(set(answers.values())) == 1, answers
    # Only the claim in a plan Alice participates in was received; the others are audit events for staff.
    claim = Claim.objects.get()
    assert (claim.plan.code, claim.claimant, claim.representative_status) == ("EDCP", alice, "pending")
    assert AuditEvent.objects.filter(action="claim.representative_filing_refused").count() == 2


def test_api_same_answer_for_unknown_and_known_numbers(alice, mallory):
    client = client_for(mallory.user)
    unknown = client.post(reverse("claims_api:claims"), api_form(on_behalf_of="NOBODY-1"))
    outside = client.post(reverse("claims_api:claims"), api_form("BRP", on_behalf_of=alice.employee_number))
    known = client.post(reverse("claims_api:claims"), api_form(on_behalf_of=alice.employee_number))
    assert unknown.status_code == outside.status_code == known.status_code == 202

    def answer(response, number, plan):
        return response.json()["detail"].replace(number, "N").replace(Plan.objects.get(code=plan).name, "P")

    assert (
        answer(unknown, "NOBODY-1", "EDCP")
        == answer(outside, alice.employee_number, "BRP")
        == answer(known, alice.employee_number, "EDCP")
    )
    assert set(known.json()) == {"detail"}
    assert Claim.objects.get().claimant == alice


def test_the_claim_is_received_but_the_representative_sees_nothing_until_staff_verify(
    alice, mallory, admin_user
):
    client = client_for(mallory.user)
    client.post(reverse("claims_portal:new"), portal_form(on_behalf_of=alice.employee_number))
    claim = Claim.objects.get()
    assert claim.received_on and claim.decision_due_on  # the clock runs from receipt
    listing = client.get(reverse("claims_portal:list")).content.decode()
    assert claim.number in listing and "Awaiting verification" in listing and "Alice" not in listing
    for url in (
        reverse("claims_portal:detail", args=[claim.pk]),
        reverse("claims_api:claim", args=[claim.pk]),
    ):
        assert client.get(url).status_code == 404
    assert client.get(reverse("claims_api:claims")).json()["results"] == []
    # The claim-file request that delivered the claimant's name and address is refused (404).
    for url in (
        reverse("claims_portal:claim_file", args=[claim.pk]),
        reverse("claims_api:claim_file", args=[claim.pk]),
    ):
        assert client.post(url).status_code == 404
    assert not claim.file_requests.exists()


def test_staff_verify_with_a_recorded_decision_and_then_the_representative_may_act(
    alice, mallory, admin_user
):
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        filed_by=mallory,
        representative=mallory,
        actor=mallory.user,
        authorisation=upload("authorisation.pdf"),
    )
    staff = client_for(admin_user)
    page = staff.get(reverse("claims_staff:detail", args=[claim.pk])).content.decode()
    assert 'id="representative-form"' in page
    response = staff.post(reverse("claims_staff:representative", args=[claim.pk]), {"decision": "verify"})
    assert response.status_code == 400  # a decision needs its reason
    response = staff.post(
        reverse("claims_staff:representative", args=[claim.pk]),
        {"decision": "verify", "reason": "Called Alice on 555-0100; she confirmed the authorisation."},
    )
    assert response.status_code == 302
    claim.refresh_from_db()
    assert claim.representative_status == RepresentativeStatus.VERIFIED
    assert (
        claim.representative_decided_by == admin_user and "confirmed" in claim.representative_decision_reason
    )
    event = AuditEvent.objects.get(action="claim.representative_verified")
    assert (event.actor, event.object_id) == (admin_user, str(claim.pk))
    assert client_for(mallory.user).get(reverse("claims_portal:detail", args=[claim.pk])).status_code == 200


def test_an_unverified_representative_is_sent_nothing(
    alice, mallory, admin_user, django_capture_on_commit_callbacks
):
    mallory.email = "mallory@example.com"
    mallory.save()
    consent_to_email(mallory)
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        filed_by=mallory,
        representative=mallory,
        actor=mallory.user,
        authorisation=upload("authorisation.pdf"),
    )
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        deny(claim, now=at(2025, 3, 3), actor=admin_user)
    assert mail.outbox and {r for m in mail.outbox for r in m.to} == {"alice@example.com"}
    with pytest.raises(ClaimRefused, match="only the claimant or their duly authorized representative"):
        appeal_file(claim=claim, issues="Unfair", now=at(2025, 3, 10), actor=mallory.user, filed_by=mallory)
    claim_representative_decide(
        claim=claim, verified=True, reason="Notarised authorisation", now=at(2025, 3, 11), actor=admin_user
    )
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        claim_file_fulfil(
            request=claim_file_request(claim=claim, now=at(2025, 3, 12), actor=mallory.user),
            now=at(2025, 3, 12),
            actor="system",
        )
    assert {r for m in mail.outbox for r in m.to} == {"alice@example.com", "mallory@example.com"}


def test_a_rejected_representative_stays_blind_and_only_decide_claims_staff_decide(
    alice, mallory, admin_user, auditor_user
):
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        filed_by=mallory,
        representative=mallory,
        actor=mallory.user,
        authorisation=upload("authorisation.pdf"),
    )
    with pytest.raises(ClaimRefused, match="is for holders of the decide_claims capability"):
        claim_representative_decide(
            claim=claim, verified=True, reason="ok", now=at(2025, 1, 11), actor=auditor_user
        )
    assert (
        client_for(auditor_user)
        .post(reverse("claims_staff:representative", args=[claim.pk]), {"decision": "verify", "reason": "ok"})
        .status_code
        == 403
    )
    claim_representative_decide(
        claim=claim, verified=False, reason="Signature does not match", now=at(2025, 1, 11), actor=admin_user
    )
    assert client_for(mallory.user).get(reverse("claims_portal:detail", args=[claim.pk])).status_code == 404
    listing = client_for(mallory.user).get(reverse("claims_portal:list")).content.decode()
    assert "not verified" in listing and "Alice" not in listing


def test_a_claim_only_in_a_plan_the_participant_is_in(alice):
    with pytest.raises(ClaimRefused, match=r"has no account in .*\(RRP"):
        file_claim(alice, now=at(2025, 1, 10), plan_code="RRP")
    assert not Claim.objects.exists()
