"""The text of each letter (pdftotext) holds every element the plan and 29 CFR 2560.503-1 require."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from claims.models import State
from claims.pdf import decision_notice
from claims.selectors import claim_rules
from claims.services import (
    ClaimRefused,
    appeal_decide,
    appeal_extend,
    appeal_file,
    claim_approve,
    claim_extend,
    claim_file_fulfil,
    claim_file_request,
)
from core.models import Document
from core.pdf import document_bytes, pdf_text
from tests.claims.factories import at, deny, file_claim, participant, png_bytes, section, text_of, upload

pytestmark = pytest.mark.django_db


def test_every_page_is_numbered(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    raw = pdf_text(document_bytes(deny(claim, now=at(2025, 3, 3), actor=admin_user).notice))
    pages = [p for p in raw.split("\f") if p.strip()]
    assert len(pages) >= 2
    for number, page in enumerate(pages, start=1):
        assert f"Page {number} of {len(pages)}" in page


def letter_parts(document: Document, plan_name: str, signer: str) -> None:
    """Letterhead, claimant's address, plan name, signature block, page numbers."""
    text = text_of(document)
    for part in (
        "CarMax, Inc.",
        plan_name,
        "Alice Claimant",
        "100 Main Street",
        "Richmond, VA 23219",
        "Sincerely",
        signer,
    ):
        assert part in text, part
    assert re.search(r"Page 1 of \d", pdf_text(document_bytes(document)))


def test_the_denial_notice_states_a_to_d_with_the_provisions_quoted(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    decision = deny(
        claim,
        now=at(2025, 3, 3),
        actor=admin_user,
        reasons="Your 2024 company contribution was credited on December 31, 2024.",
        additional_material="Your 2024 Form W-2, because it shows the pay the contribution is based on.",
    )
    text = text_of(decision.notice)
    letter_parts(decision.notice, "Executive Deferred Compensation Plan", "For the Committee's delegate")
    assert "March 3, 2025" in text and "Notice of denial of claim" in text and "denied in whole" in text
    assert "furnished under EDCP 11.2" in text
    # (a)
    assert "(a) The specific reasons for the denial" in text
    assert "Your 2024 company contribution was credited on December 31, 2024." in text
    # (b): the section number and its text, quoted from the catalog
    assert "(b) The plan provisions on which the denial is based" in text
    assert "EDCP 4.1 · Company Contributions" in text
    assert "credit to a Participant's Company Contribution Account" in text
    # (c)
    assert "(c) Additional material or information needed to perfect the claim, and why" in text
    assert "Your 2024 Form W-2, because it shows the pay" in text
    # (d): procedure, limits, this claim's dates, right to sue
    assert "(d) The review procedure and its time limits" in text
    assert "within 60 days after you receive this notice" in text
    assert "The last day to file your appeal is May 2, 2025" in text
    assert "120 days" in text
    assert "civil action under section 502(a) of ERISA" in text
    assert "within one year of the final determination (EDCP 11.5)" in text
    assert "Eastern District of Virginia, Richmond Division" in text
    # the plan's own denial section is quoted
    assert "EDCP 11.2 · Denial of Claim" in text and "EDCP 11.3 · Claims Review Procedure" in text
    assert decision.notice.person == alice and decision.notice.kind == "claim_denial"


def test_a_mailed_denial_tells_when_it_is_treated_as_received(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10), delivery="mail")
    text = text_of(deny(claim, now=at(2025, 3, 3), actor=admin_user).notice)
    assert "treated as receiving it 5 days later, on March 8, 2025" in text
    assert "The last day to file your appeal is May 7, 2025" in text


@pytest.mark.parametrize(
    ("code", "denial", "review", "borrowed"),
    [
        ("BRP", "BRP 7.2", "BRP 7.3", False),
        ("RRP", "RRP 7.02", "RRP 7.03", True),
    ],
)
def test_each_plan_cites_and_quotes_its_own_sections(code, denial, review, borrowed, admin_user):
    person = participant(code, username=f"p-{code}", first_name="Alice", last_name="Claimant")
    claim = file_claim(person, now=at(2025, 1, 10), plan_code=code)
    provision = section(code, "3.1" if code == "BRP" else "3.02")
    text = text_of(deny(claim, now=at(2025, 3, 3), actor=admin_user, provisions=[provision]).notice)
    assert f"furnished under {denial} of the plan" in text
    assert f"{denial} · Denial of Claim" in text and f"{review} · Claims Review Procedure" in text
    assert provision.citation in text
    # RRP 2017 (in force in 2025) has no Article VII in the catalog: the 2011 text is quoted, and the notice says
    # which document the words come from, never how the catalog is kept (issue 11).
    assert "catalog" not in text
    assert ("The text quoted is that of the" in text) is borrowed
    if borrowed:
        assert (
            "The text quoted is that of the Retirement Restoration Plan, as amended and restated effective June 30, 2011"
            in text
        )


def test_the_extension_notices_state_the_circumstances_and_the_expected_date(
    alice, admin_user, committee_user
):
    claim = file_claim(alice, now=at(2025, 1, 10))
    initial = claim_extend(
        claim=claim,
        special_circumstances="We are waiting for your 2024 payroll records.",
        expected_on=dt.date(2025, 6, 30),
        now=at(2025, 4, 1),
        actor=admin_user,
    )
    text = text_of(initial.notice)
    letter_parts(initial.notice, "Executive Deferred Compensation Plan", "For the Committee's delegate")
    for part in (
        "We are waiting for your 2024 payroll records.",
        "We expect to decide by June 30, 2025",
        "no later than July 9, 2025",
        "within 90 days after receipt, that is by April 10, 2025",
        "EDCP 11.2",
        "2560.503-1(f)(1)",
    ):
        assert part in text, part
    deny(claim, now=at(2025, 6, 30), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 7, 1), actor="alice")
    review = appeal_extend(
        claim=claim,
        special_circumstances="The Committee meets on September 10.",
        expected_on=dt.date(2025, 9, 15),
        now=at(2025, 8, 20),
        actor=committee_user,
    )
    text = text_of(review.notice)
    for part in (
        "The Committee meets on September 10.",
        "We expect to decide by September 15, 2025",
        "no later than October 29, 2025",
        "that is by August 30, 2025",
        "EDCP 11.4",
        "For the Committee",
    ):
        assert part in text, part
    assert review.notice.kind == "claim_review_extension"


def test_the_decision_on_review_states_reasons_provisions_access_right_to_sue_limit_and_forum(
    alice, admin_user, committee_user
):
    claim = file_claim(alice, now=at(2025, 1, 10))
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor="alice")
    decision = appeal_decide(
        claim=claim,
        outcome="denied",
        reasons="On review the records confirm the credit.",
        provisions=[section("EDCP", "4.2")],
        now=at(2025, 5, 20),
        actor=committee_user,
    )
    text = text_of(decision.notice)
    letter_parts(decision.notice, "Executive Deferred Compensation Plan", "For the Committee")
    for part in (
        "Decision on review",
        "May 20, 2025",
        "denied in whole",
        "EDCP 11.4",
        "(a) The specific reasons for the adverse determination",
        "On review the records confirm the credit.",
        "(b) The plan provisions on which the adverse determination is based",
        "EDCP 4.2 · Vesting",
        "(c) Your right to the documents",
        "entitled to receive, upon request and free of charge, reasonable access to, and copies of, all documents",
        "(d) Your right to bring an action",
        "action under section 502(a) of ERISA",
        "within one year of this final determination",
        "no later than May 20, 2026",
        "EDCP 11.5",
        "exclusively in the United States District Court for the Eastern District of Virginia, Richmond "
        "Division (else the Circuit Court of Goochland County, Virginia) (EDCP 11.6)",
        "EDCP 11.6 · Exclusive Forum",
    ):
        assert part in text, part
    assert decision.notice.kind == "claim_review_denial"


def test_the_approval_letters_say_what_is_approved(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    decision = claim_approve(
        claim=claim,
        reasons="The credit was omitted.",
        approved_benefit="A credit of $4,100.00.",
        provisions=[section("EDCP", "4.1")],
        now=at(2025, 2, 3),
        actor=admin_user,
    )
    text = text_of(decision.notice)
    letter_parts(decision.notice, "Executive Deferred Compensation Plan", "For the Committee's delegate")
    for part in (
        "Approval of claim",
        "February 3, 2025",
        "Your claim is approved",
        "A credit of $4,100.00.",
        "The credit was omitted.",
        "EDCP 4.1",
    ):
        assert part in text, part


def test_an_appeal_approved_on_review_is_communicated_in_writing(alice, admin_user, committee_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor="alice")
    decision = appeal_decide(
        claim=claim,
        outcome="approved",
        reasons="The credit is missing.",
        approved_benefit="A credit of $4,100.00.",
        now=at(2025, 5, 2),
        actor=committee_user,
    )
    text = text_of(decision.notice)
    assert "Your appeal is approved" in text and "this letter is that communication" in text
    assert "A credit of $4,100.00." in text and decision.notice.kind == "claim_review_approval"


def test_rendering_a_notice_again_gives_the_same_document(alice, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    decision = deny(claim, now=at(2025, 3, 3), actor=admin_user)
    again = decision_notice(decision, rules=claim_rules(claim=claim), now=at(2025, 3, 4), actor=admin_user)
    assert again.pk == decision.notice.pk


def test_the_claim_file_bundles_every_relevant_document_free_and_is_logged(alice, admin_user):
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        files=[upload("statement.pdf"), upload("photo.png", png_bytes(), "image/png")],
    )
    deny(claim, now=at(2025, 3, 3), actor=admin_user, records=list(claim.documents.all()[:1]))
    request = claim_file_request(claim=claim, now=at(2025, 3, 10, 9), actor=alice.user)
    assert (request.requested_on, request.fulfilled_on) == (dt.date(2025, 3, 10), None)
    request = claim_file_fulfil(request=request, now=at(2025, 3, 11, 9), actor="system")
    assert request.fulfilled_on == dt.date(2025, 3, 11)
    bundle = request.document
    assert (bundle.kind, bundle.person) == ("claim_file", alice)
    text = text_of(bundle)
    for part in (
        "Claim file C-",
        "Requested March 10, 2025 by Alice Claimant (claimant)",
        "Furnished March 11, 2025, free of charge",
        "2560.503-1(h)(2)(iii), (m)(8)",
        "My 2024 company contribution was not credited.",
        "Exhibit",
        "statement.pdf",
        "photo.png",
        "EDCP 4.1 · Company Contributions",
        "EDCP 11.2 · Denial of Claim",
        "Claim file requested",  # the step in words (issue 11)
        # the merged exhibits: the denial notice and the uploaded PDF, in full
        "Notice of denial of claim",
        "(d) The review procedure and its time limits",
        "Statement of benefits",
    ):
        assert part in text, part
    actions = list(claim.transitions.values_list("action", flat=True))
    assert actions[-2:] == ["claim_file_requested", "claim_file_furnished"]
    with pytest.raises(ClaimRefused, match="was furnished on 2025-03-11"):
        claim_file_fulfil(request=request, now=at(2025, 3, 12), actor="system")
    claim.refresh_from_db()
    assert claim.state == State.DENIED


def test_a_claimant_on_the_portal_is_emailed_when_a_notice_is_posted(
    alice, admin_user, django_capture_on_commit_callbacks
):
    from django.core import mail

    claim = file_claim(alice, now=at(2025, 1, 10))
    with django_capture_on_commit_callbacks(execute=True):
        deny(claim, now=at(2025, 3, 3), actor=admin_user)
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]
    assert claim.number in mail.outbox[0].body and "posted to the participant portal" in mail.outbox[0].body
    mailed = file_claim(alice, now=at(2025, 1, 10), delivery="mail", subject="timing")
    with django_capture_on_commit_callbacks(execute=True):
        deny(mailed, now=at(2025, 3, 3), actor=admin_user)
    assert len(mail.outbox) == 1


def test_a_claim_notice_is_recorded_once_and_goes_on_paper_to_a_claimant_without_consent(
    alice, bob, admin_user, django_capture_on_commit_callbacks
):
    from django.core import mail

    from core.models import Notice

    claim = file_claim(alice, now=at(2025, 1, 10))
    with django_capture_on_commit_callbacks(execute=True):
        deny(claim, now=at(2025, 3, 3), actor=admin_user)
    notice = Notice.objects.get(person=alice)
    assert (notice.kind, notice.status, notice.object_id) == ("claim_notice", "sent", str(claim.pk))
    assert notice.link.endswith(f"/portal/claims/{claim.pk}/")
    bob.email = "bob@example.com"
    bob.save()
    other = file_claim(bob, now=at(2025, 1, 10))
    with django_capture_on_commit_callbacks(execute=True):
        deny(other, now=at(2025, 3, 3), actor=admin_user)
    paper = Notice.objects.get(person=bob)
    assert paper.channel == "paper" and paper.status == "queued" and len(mail.outbox) == 1
