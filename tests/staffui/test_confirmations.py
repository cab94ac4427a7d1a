"""Issue 11: what is hard to undo is summarised first (a GET that changes nothing), then done by a POST: approving
and releasing a payment run, denying a claim (its letter previewed), deciding an emergency."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from claims.models import ClaimDecision, State
from core.models import Document
from payments.models import EmergencyWithdrawal, PaymentRun
from payments.services.runs import payment_run_prepare
from payments.services.withdrawals import emergency_request_record
from tests.claims.factories import at, file_claim, review_procedure_text, section
from tests.claims.factories import participant as claims_participant
from tests.pages.conftest import client_of
from tests.payments.factories import deferrals, scenario, simulate, staff_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def prepared():
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    return payment_run_prepare(period_end=dt.date(2026, 5, 15), actor=staff_user("alice", "administrator"))


def test_approving_a_run_shows_its_summary_first_and_needs_the_reviewed_totals(prepared):
    run = prepared
    bob = client_of(staff_user("bob", "committee"))
    url = reverse("payments_staff:run_approve", args=[run.pk])
    page = bob.get(url).content.decode()
    assert (
        'data-summary="count">1<' in page and "60,000.00" in page and "43,350.00" in page
    )  # count, gross, net
    assert 'data-summary="withholding">16,650.00<' in page
    assert PaymentRun.objects.get().status == PaymentRun.Status.PREPARED  # the summary changes nothing
    reviewed = re.search(r'name="reviewed" value="([^"]+)"', page).group(1)
    # a POST that did not come from the summary is sent back to it
    assert bob.post(url)["Location"] == url
    assert bob.post(url, {"reviewed": "1|0|0|0|0"})["Location"] == url
    assert PaymentRun.objects.get().status == PaymentRun.Status.PREPARED
    assert bob.post(url, {"reviewed": reviewed})["Location"] == reverse("payments_staff:run", args=[run.pk])
    assert PaymentRun.objects.get().status == PaymentRun.Status.RELEASED
    # the run page leads to the summary, never straight to the approval
    assert (
        f'href="{url}"'
        not in client_of(staff_user("carol", "committee"))
        .get(reverse("payments_staff:run", args=[run.pk]))
        .content.decode()
    )


def test_the_preparer_sees_the_summary_without_an_approve_button(prepared):
    preparer = prepared.prepared_by
    preparer.groups.add(Group.objects.get(name="committee"))  # may approve runs, but not their own
    page = client_of(preparer).get(reverse("payments_staff:run_approve", args=[prepared.pk])).content.decode()
    assert 'id="own-run"' in page and 'id="confirm-approve"' not in page


def test_deciding_an_emergency_shows_the_decision_first(settings):
    simulate(scenario(events=deferrals(), through="2026-04-30"))
    from participants.models import Participation

    emergency = emergency_request_record(
        participation=Participation.objects.get(person__employee_number="P1"),
        amount=Decimal("12000.00"),
        requested_on=dt.date(2026, 5, 4),
        need="Hospital bills",
        documents="Invoice 77",
        actor="test",
    )
    bea = client_of(staff_user("bea", "committee"))
    detail = bea.get(reverse("payments_staff:emergency", args=[emergency.pk])).content.decode()
    assert f'action="{reverse("payments_staff:emergency_review", args=[emergency.pk])}"' in detail
    fields = {"decision": "approve", "amount": "11000.00", "decided_on": "2026-05-05", "reason": "Need"}
    review = bea.get(reverse("payments_staff:emergency_review", args=[emergency.pk]), fields)
    html = review.content.decode()
    assert review.status_code == 200 and "Approve 11,000.00" in html and 'id="confirm-emergency"' in html
    assert EmergencyWithdrawal.objects.get().status == "requested"
    for name, value in fields.items():
        assert f'name="{name}" value="{value}"' in html
    decide = reverse("payments_staff:emergency_decide", args=[emergency.pk])
    reviewed = re.search(r'name="reviewed" value="([^"]+)"', html).group(1)
    # a POST that did not come from the summary (no token, a forged one, or a decision changed since it was
    # shown) shows the summary again and records nothing
    for posted in (
        fields,
        {**fields, "reviewed": "0" * 64},
        {**fields, "amount": "12000.00", "reviewed": reviewed},
    ):
        again = bea.post(decide, posted)
        assert again.status_code == 409 and 'id="review-again"' in again.content.decode()
        assert EmergencyWithdrawal.objects.get().status == "requested"
    assert "Approve 12,000.00" in again.content.decode()  # the summary of what was posted, to confirm
    assert bea.post(decide, {**fields, "reviewed": reviewed}).status_code == 302
    assert EmergencyWithdrawal.objects.get().status == "approved"
    bad = bea.get(reverse("payments_staff:emergency_review", args=[emergency.pk]), {"decision": "deny"})
    assert bad.status_code == 302  # already decided: back to the request


def test_a_denial_is_previewed_as_the_claimant_will_read_it_and_nothing_is_issued_until_confirmed(
    settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    alice = claims_participant("EDCP", username="alice", first_name="Alice", last_name="Claimant")
    claim = file_claim(alice, now=at(2025, 1, 10))
    delegate = client_of(staff_user("dele", "administrator"))
    documents = Document.objects.count()
    form = {
        "reasons": "Credited already.",
        "provisions": [section("EDCP", "4.1").pk],
        "additional_material": "None is needed.",
        "review_procedure": review_procedure_text(claim=claim),
        "delivery": "portal",
    }
    review_url = reverse("claims_staff:deny_review", args=[claim.pk])
    assert delegate.post(review_url, form)["Location"] == review_url
    page = delegate.get(review_url)
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count('src="data:image/png;base64,') >= 2 and "Notice of denial of claim" in html
    assert "Credited already." in html and 'id="issue-denial"' in html
    claim.refresh_from_db()
    assert claim.state == State.RECEIVED and not ClaimDecision.objects.exists()
    assert Document.objects.count() == documents  # rendered, not stored
    hidden = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', html))
    assert hidden["reasons"] == "Credited already." and hidden["delivery"] == "portal"
    deny_url = reverse("claims_staff:deny", args=[claim.pk])
    reviewed = re.search(r'name="reviewed" value="([^"]+)"', html).group(1)
    # without the token of the letter shown, or with the letter changed since (other reasons), nothing is issued:
    # the preview is shown again
    for posted in (form, {**form, "reviewed": "0" * 64}, {**form, "reasons": "Other.", "reviewed": reviewed}):
        response = delegate.post(deny_url, posted)
        assert response["Location"] == review_url
        claim.refresh_from_db()
        assert claim.state == State.RECEIVED and not ClaimDecision.objects.exists()
    assert "Other." in delegate.get(review_url).content.decode()  # the preview of what was posted
    response = delegate.post(deny_url, {**form, "reviewed": reviewed})
    assert response.status_code == 302 and response["Location"] != review_url
    claim.refresh_from_db()
    assert claim.state == State.DENIED and ClaimDecision.objects.get().notice is not None
    # an incomplete form is not previewed
    other = file_claim(alice, now=at(2025, 1, 11))
    incomplete = delegate.post(reverse("claims_staff:deny_review", args=[other.pk]), {"reasons": "x"})
    assert incomplete.status_code == 400 and "The form is incomplete" in incomplete.content.decode()
