"""Issue 11: the claim form lists only the claimant's plans (and refuses another on the server), and a filing
shows a receipt (claim number, date received, decision due date) on screen and in the email."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from claims.models import Claim
from plans.models import Plan
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def _client(person) -> Client:
    client = Client()
    sign_in(client, person.user)
    return client


def _form(plan_code: str) -> dict:
    return {
        "plan": Plan.objects.get(code=plan_code).pk,
        "capacity": "participant",
        "subject": "amount",
        "description": "My 2024 company contribution is missing.",
    }


def test_the_claim_form_lists_the_claimants_plans_as_theirs_and_preselects_one(alice):
    page = _client(alice).get(reverse("claims_portal:new")).content.decode()
    own = re.search(r'<optgroup label="Your plans">(.*?)</optgroup>', page, flags=re.S).group(1)
    edcp = Plan.objects.get(code="EDCP")
    assert f'value="{edcp.pk}" selected' in own and str(edcp) in own
    assert str(Plan.objects.get(code="BRP")) not in own and str(Plan.objects.get(code="RRP")) not in own


def test_a_claim_under_a_plan_the_claimant_is_not_in_is_refused_and_nothing_is_filed(alice):
    response = _client(alice).post(reverse("claims_portal:new"), _form("BRP"))
    assert response.status_code == 400 and not Claim.objects.exists()
    assert "You have no account in" in response.content.decode()


def test_filing_shows_a_receipt_and_emails_it(alice, django_capture_on_commit_callbacks):
    client = _client(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("claims_portal:new"), _form("EDCP"))
    claim = Claim.objects.get()
    page = client.get(response["Location"]).content.decode()
    due = f"{claim.decision_due_on:%B %-d, %Y}"
    assert 'id="receipt"' in page and claim.number in page and due in page
    assert f"{claim.received_on:%B %-d, %Y}" in page
    receipt = [m for m in mail.outbox if claim.number in m.subject]
    assert len(receipt) == 1 and receipt[0].to == ["alice@example.com"]
    assert f"Decision due by: {due}" in receipt[0].body and f"Claim number: {claim.number}" in receipt[0].body
