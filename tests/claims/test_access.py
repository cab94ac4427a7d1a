"""Only the claimant and their verified representative see a claim; anyone else gets 404 on every page and endpoint."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from claims.models import ClaimAppeal, ClaimFileRequest, State
from claims.services import claim_file_fulfil, claim_file_request, claim_representative_decide
from tests.claims.factories import at, deny, file_claim, participant, upload
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


@pytest.fixture
def setup(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10), files=[upload()])
    decision = deny(claim, now=at(2025, 3, 3), actor=admin_user)
    furnished = claim_file_fulfil(
        request=claim_file_request(claim=claim, now=at(2025, 3, 4), actor=alice.user),
        now=at(2025, 3, 4),
        actor="system",
    )
    return claim, decision.notice, claim.documents.get(), furnished.document


def readable_urls(claim, notice, doc, bundle) -> list[str]:
    return [
        reverse("claims_portal:detail", args=[claim.pk]),
        reverse("claims_portal:notice", args=[claim.pk, notice.pk]),
        reverse("claims_portal:notice", args=[claim.pk, bundle.pk]),
        reverse("claims_portal:upload", args=[claim.pk, doc.pk]),
        reverse("claims_api:claim", args=[claim.pk]),
    ]


def test_the_claimant_reads_every_page_notice_and_endpoint(setup, alice):
    claim, notice, doc, bundle = setup
    client = client_for(alice.user)
    for url in [
        *readable_urls(claim, notice, doc, bundle),
        f"/documents/{notice.pk}/",
        f"/documents/{bundle.pk}/",
    ]:
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("claims_portal:detail", args=[claim.pk])).content.decode()
    assert "Notice of denial of claim" in page and "May 2, 2025" in page
    listing = client.get(reverse("claims_api:claims")).json()
    assert [c["id"] for c in listing["results"]] == [claim.pk]
    assert listing["results"][0]["appeal_due_on"] == "2025-05-02"
    assert "reviewer" not in listing["results"][0]


def test_another_participant_gets_404_on_every_page_and_endpoint_and_changes_nothing(setup, bob):
    claim, notice, doc, bundle = setup
    client = client_for(bob.user)
    gets = [
        *readable_urls(claim, notice, doc, bundle),
        f"/documents/{notice.pk}/",
        f"/documents/{bundle.pk}/",
        reverse("claims_staff:detail", args=[claim.pk]),
        reverse("claims_staff:queue"),
        reverse("claims_staff:upload", args=[claim.pk, doc.pk]),
    ]
    for url in gets:
        assert client.get(url).status_code == 404, url
    posts = [
        reverse("claims_portal:appeal", args=[claim.pk]),
        reverse("claims_portal:claim_file", args=[claim.pk]),
        reverse("claims_api:claim_file", args=[claim.pk]),
        reverse("claims_staff:deny", args=[claim.pk]),
        reverse("claims_staff:claim_file", args=[claim.pk]),
    ]
    for url in posts:
        assert client.post(url, {"issues": "Mine now"}).status_code == 404, url
    assert client.get(reverse("claims_api:claims")).json()["results"] == []
    claim.refresh_from_db()
    assert claim.state == State.DENIED and not ClaimAppeal.objects.exists()
    assert ClaimFileRequest.objects.count() == 1


def test_the_representative_sees_the_claim_they_filed_for_the_claimant(alice, admin_user):
    carol = participant("EDCP", username="carol", first_name="Carol", last_name="Counsel")
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        filed_by=carol,
        representative=carol,
        actor=carol.user,
        authorisation=upload("authorisation.pdf"),
    )
    notice = deny(claim, now=at(2025, 3, 3), actor=admin_user).notice
    client = client_for(carol.user)
    # 29 CFR 2560.503-1(b)(4): nothing until staff verify the authorisation.
    assert client.get(reverse("claims_portal:detail", args=[claim.pk])).status_code == 404
    assert client.get(reverse("claims_portal:notice", args=[claim.pk, notice.pk])).status_code == 404
    assert client.get(reverse("claims_api:claim", args=[claim.pk])).status_code == 404
    claim_representative_decide(
        claim=claim,
        verified=True,
        reason="Signed authorisation on file",
        now=at(2025, 3, 4),
        actor=admin_user,
    )
    assert client.get(reverse("claims_portal:detail", args=[claim.pk])).status_code == 200
    response = client.get(reverse("claims_portal:notice", args=[claim.pk, notice.pk]))
    assert response.status_code == 200 and response.content.startswith(b"%PDF")
    assert client.get(reverse("claims_api:claim", args=[claim.pk])).status_code == 200
    # The notice itself belongs to the claimant: the generic download serves it to her and to staff only.
    assert client.get(f"/documents/{notice.pk}/").status_code == 404
    assert client_for(alice.user).get(f"/documents/{notice.pk}/").status_code == 200


def test_a_notice_of_another_claim_cannot_be_fetched_through_ones_own_claim(setup, alice, bob, admin_user):
    claim, notice, doc, bundle = setup
    other = file_claim(bob, now=at(2025, 1, 10), files=[upload()])
    other_notice = deny(other, now=at(2025, 3, 3), actor=admin_user).notice
    client = client_for(alice.user)
    assert client.get(reverse("claims_portal:notice", args=[claim.pk, other_notice.pk])).status_code == 404
    assert (
        client.get(reverse("claims_portal:upload", args=[claim.pk, other.documents.get().pk])).status_code
        == 404
    )


def test_staff_read_every_claim_and_auditors_only_read(setup, auditor_user, admin_user):
    claim, notice, doc, bundle = setup
    auditor = client_for(auditor_user)
    for url in (
        reverse("claims_staff:queue"),
        reverse("claims_staff:detail", args=[claim.pk]),
        reverse("claims_staff:reports"),
        reverse("claims_staff:upload", args=[claim.pk, doc.pk]),
        f"/documents/{notice.pk}/",
    ):
        assert auditor.get(url).status_code == 200, url
    listing = auditor.get(reverse("claims_api:claims")).json()["results"]
    assert listing[0]["reviewer"] is None and listing[0]["filed_by"] == "alice"
    assert auditor.post(reverse("claims_staff:record_appeal", args=[claim.pk]), {}).status_code == 403
    assert auditor.post(reverse("claims_api:claim_file", args=[claim.pk])).status_code == 403
    assert auditor.get(reverse("claims_portal:detail", args=[claim.pk])).status_code == 403
    response = client_for(admin_user).post(reverse("claims_api:claim_file", args=[claim.pk]))
    assert response.status_code == 201 and ClaimFileRequest.objects.count() == 2


def test_signed_out_visitors_are_sent_to_sign_in_and_the_api_refuses_them(setup):
    claim, notice, doc, bundle = setup
    client = Client()
    response = client.get(reverse("claims_portal:detail", args=[claim.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert client.get(reverse("claims_api:claim", args=[claim.pk])).status_code in (401, 403)
    assert client.get(reverse("claims_api:claims")).status_code in (401, 403)
