"""Issue 12, finding 1: an unknown or a known employee number gets the same answer.

A Beneficiary's claim names the participant by employee number (EDCP 11.1). Whether that number belongs to
nobody, to someone outside the plan, or to a participant of the plan (the claim is then received), the filer is
told the same thing, in the portal and the API, and is sent nothing different; the refused attempts are audit
events for staff, and they count against the claims a person may file in a day.
"""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from claims.models import Claim
from claims.selectors import rules_for
from core.models import AuditEvent
from plans.models import Plan
from tests.claims.factories import participant, upload
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

CLAIMS = reverse("claims_api:claims")
NEW = reverse("claims_portal:new")
REFUSED = "claim.beneficiary_filing_refused"


def client_for(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def portal_form(plan_code: str = "EDCP", **extra) -> dict:
    return {
        "plan": Plan.objects.get(code=plan_code).pk,
        "capacity": "beneficiary",
        "subject": "amount",
        "description": "My late husband's account was not paid to me.",
        **extra,
    }


def api_form(plan_code: str = "EDCP", **extra) -> dict:
    return {**portal_form(**extra), "plan": plan_code}


@pytest.fixture
def widow(db):
    return participant("EDCP", username="widow", first_name="Wanda", last_name="Widow")


# The attack: employee numbers tried one by one, each in a plan; the last one is a participant of the plan.
TRIES = [
    ("unknown", lambda alice: "NOBODY-1", "EDCP"),
    ("known, not in the plan", lambda alice: alice.employee_number, "RRP"),
    ("known, in the plan", lambda alice: alice.employee_number, "EDCP"),
]


def _neutral(text: str, number: str, plan_code: str) -> str:
    """The answer with what the filer typed or chose (the number, the plan, its claims section) taken out."""
    plan = Plan.objects.get(code=plan_code)
    cite = rules_for(plan=plan, on=timezone.localdate()).cite("filing")
    return text.replace(number, "N").replace(plan.name, "P").replace(cite, "S")


def test_portal_gives_a_beneficiary_the_same_answer_for_unknown_outside_and_known_numbers(
    alice, widow, django_capture_on_commit_callbacks
):
    client = client_for(widow.user)
    said, answers, landings = {}, {}, {}
    for label, number_of, plan in TRIES:
        number = number_of(alice)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(NEW, portal_form(plan, participant_number=number), follow=True)
        assert response.status_code == 200, label
        page = response.content.decode()
        assert "Alice" not in page and "Claimant" not in page, label
        said[label] = [str(m) for m in response.context["messages"]][0]
        answers[label] = _neutral(said[label], number, plan)
        landings[label] = response.redirect_chain
    assert len(set(answers.values())) == 1, answers
    assert len({tuple(chain) for chain in landings.values()}) == 1, landings
    assert said["unknown"].endswith("(EDCP 11.1).")  # the section of the plan chosen, which the filer knows
    assert mail.outbox == []  # no mail tells one case from another
    claim = Claim.objects.get()
    assert (claim.plan.code, claim.claimant, claim.participant, claim.capacity) == (
        "EDCP",
        widow,
        alice,
        "beneficiary",
    )


def test_api_gives_a_beneficiary_the_same_answer_for_unknown_outside_and_known_numbers(alice, widow):
    client = client_for(widow.user)
    answers = {}
    for label, number_of, plan in TRIES:
        number = number_of(alice)
        response = client.post(CLAIMS, api_form(plan, participant_number=number))
        assert response.status_code == 202, label
        assert set(response.json()) == {"detail"}, label
        answers[label] = _neutral(response.json()["detail"], number, plan)
    assert len(set(answers.values())) == 1, answers
    assert Claim.objects.get().participant == alice


def test_the_refused_attempts_are_audit_events_staff_read(alice, widow, admin_user):
    client = client_for(widow.user)
    client.post(CLAIMS, api_form(participant_number="NOBODY-1"))
    client.post(NEW, portal_form("RRP", participant_number=alice.employee_number))
    events = AuditEvent.objects.filter(action=REFUSED).order_by("pk")
    assert [(e.actor, e.data["plan"], e.data["employee_number"]) for e in events] == [
        (widow.user, "EDCP", "NOBODY-1"),
        (widow.user, "RRP", alice.employee_number),
    ]
    assert events[0].reason == "no person has this employee number"
    assert "has no account in" in events[1].reason
    page = client_for(admin_user).get(reverse("core:audit_log"), {"action": REFUSED}).content.decode()
    assert page.count(f"<td>{REFUSED}</td>") == 2 and "no person has this employee number" in page
    assert not Claim.objects.exists()


def test_a_participant_number_is_not_looked_up_unless_the_claimant_is_a_beneficiary(alice):
    """A participant filing for themselves gets no answer about a number typed in the beneficiary's box."""
    client = client_for(alice.user)
    form = {"capacity": "participant", "participant_number": "NOBODY-1"}
    response = client.post(CLAIMS, api_form(**form))
    assert response.status_code == 201 and "NOBODY" not in response.content.decode()
    response = client.post(NEW, portal_form(**{**form, "subject": "timing"}))
    assert response.status_code == 302
    assert Claim.objects.filter(claimant=alice, participant=alice).count() == 2


def test_a_representative_of_a_beneficiary_gets_the_same_answer_whoever_the_participant_is(alice, widow):
    agent = participant("EDCP", username="agent", first_name="Avery", last_name="Agent")
    client = client_for(agent.user)
    answers = {}
    for participant_number in ("NOBODY-1", alice.employee_number):
        response = client.post(
            CLAIMS,
            api_form(
                on_behalf_of=widow.employee_number,
                participant_number=participant_number,
                authorisation=upload("authorisation.pdf"),
            ),
        )
        assert response.status_code == 202
        answers[participant_number] = response.json()["detail"]
    assert len(set(answers.values())) == 1
    claim = Claim.objects.get()
    assert (claim.claimant, claim.participant, claim.representative) == (widow, alice, agent)
    event = AuditEvent.objects.get(action="claim.representative_filing_refused")
    assert "NOBODY-1" in event.data["employee_number"]


def test_what_does_not_depend_on_the_number_is_refused_at_once(alice, widow):
    client = client_for(widow.user)
    for number in ("NOBODY-1", alice.employee_number):
        response = client.post(
            CLAIMS, api_form(participant_number=number, attachments=[upload("notes.txt", b"plain text")])
        )
        assert response.status_code == 400
        assert "'notes.txt' is not accepted" in response.json()["detail"]
    assert not Claim.objects.exists() and not AuditEvent.objects.filter(action=REFUSED).exists()


def test_trying_numbers_as_a_beneficiary_counts_against_the_filings_a_day(alice, widow, settings):
    settings.CLAIM_FILINGS_PER_DAY = 3
    client = client_for(widow.user)
    answers = [client.post(CLAIMS, api_form(participant_number=f"E{n:05d}")).status_code for n in range(3)]
    assert answers == [202, 202, 202]
    # The limit holds for a number that would be received, through the API and the portal alike.
    response = client.post(CLAIMS, api_form(participant_number=alice.employee_number))
    assert response.status_code == 400 and "the most the portal accepts in a day" in response.json()["detail"]
    response = client.post(NEW, portal_form(participant_number=alice.employee_number))
    assert response.status_code == 400 and "the most the portal accepts in a day" in response.content.decode()
    assert not Claim.objects.exists()
    assert AuditEvent.objects.filter(action=REFUSED).count() == 3
