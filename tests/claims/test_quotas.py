"""Issue 12, finding 2: one participant cannot fill the disk.

Attachments are limited per claim and per person (count and bytes, settings), filing is limited per day, and
a claim-file request furnishes the bundle already stored when nothing in the claim file changed.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from claims.models import Claim, ClaimDocument
from claims.services import ClaimRefused, claim_document_add, claim_file_fulfil, claim_file_request
from core.models import Document
from plans.models import Plan
from tests.claims.factories import at, file_claim, upload
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def portal_form(**extra) -> dict:
    return {
        "plan": Plan.objects.get(code="EDCP").pk,
        "capacity": "participant",
        "subject": "amount",
        "description": "My 2024 company contribution is missing.",
        **extra,
    }


def api_form(**extra) -> dict:
    return {**portal_form(**extra), "plan": "EDCP"}


def test_attachments_per_claim_are_limited_in_the_portal_and_the_api(alice, settings):
    settings.CLAIM_ATTACHMENTS_PER_CLAIM = 2
    client = client_for(alice.user)
    files = [upload(f"page-{n}.pdf") for n in range(3)]
    response = client.post(reverse("claims_portal:new"), portal_form(attachments=files))
    assert response.status_code == 400 and "too many attachments: this claim would hold 3 files" in (
        response.content.decode()
    )
    response = client.post(
        reverse("claims_api:claims"), api_form(attachments=[upload(f"p{n}.pdf") for n in range(3)])
    )
    assert response.status_code == 400 and "the limit is 2 files" in response.json()["detail"]
    assert not Claim.objects.exists() and not ClaimDocument.objects.exists()
    response = client.post(
        reverse("claims_api:claims"), api_form(attachments=[upload("a.pdf"), upload("b.pdf")])
    )
    assert response.status_code == 201


def test_attachment_bytes_per_person_are_limited_across_claims(alice, settings):
    one_file = len(upload().read())
    settings.CLAIM_ATTACHMENT_BYTES_PER_PERSON = 2 * one_file + 200  # the PDFs differ by a few bytes
    file_claim(alice, now=at(2025, 1, 10), files=[upload("a.pdf")], subject="amount")
    file_claim(alice, now=at(2025, 1, 11), files=[upload("b.pdf")], subject="timing")
    with pytest.raises(ClaimRefused, match=r"too many attachments: you would hold 3 files"):
        file_claim(alice, now=at(2025, 1, 12), files=[upload("c.pdf")], subject="vesting")
    assert Claim.objects.count() == 2


def test_filing_is_limited_per_day(alice, settings):
    settings.CLAIM_FILINGS_PER_DAY = 2
    client = client_for(alice.user)
    for subject in ("amount", "timing"):
        assert client.post(reverse("claims_api:claims"), api_form(subject=subject)).status_code == 201
    response = client.post(reverse("claims_api:claims"), api_form(subject="vesting"))
    assert response.status_code == 400 and "the most the portal accepts in a day" in response.json()["detail"]
    response = client.post(reverse("claims_portal:new"), portal_form(subject="vesting"))
    assert response.status_code == 400
    assert Claim.objects.count() == 2


def test_enumerating_employee_numbers_as_a_representative_is_limited_too(alice, bob, settings):
    settings.CLAIM_FILINGS_PER_DAY = 3
    client = client_for(bob.user)
    answers = [
        client.post(
            reverse("claims_api:claims"),
            api_form(on_behalf_of=f"E{n:05d}", authorisation=upload("authorisation.pdf")),
        ).status_code
        for n in range(5)
    ]
    assert answers == [202, 202, 202, 400, 400]


def test_an_unchanged_claim_file_is_furnished_from_the_bundle_already_stored(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10), files=[upload()])

    def furnish(day: int):
        request = claim_file_request(claim=claim, now=at(2025, 1, day), actor=alice.user)
        return claim_file_fulfil(request=request, now=at(2025, 1, day), actor="system").document

    first = furnish(11)
    assert [furnish(12).pk, furnish(13).pk] == [first.pk, first.pk]
    assert Document.objects.filter(kind="claim_file").count() == 1
    claim_document_add(
        claim=claim, file=upload("payroll-record.pdf"), kind="record", now=at(2025, 1, 14), actor=admin_user
    )
    changed = furnish(15)
    assert changed.pk != first.pk and Document.objects.filter(kind="claim_file").count() == 2
