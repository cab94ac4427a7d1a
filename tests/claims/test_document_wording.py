"""Issue 11, documents: the denial notice names the sponsor once, says where and how to send an appeal (the
plan's committee_contact) and states the review procedure once; the claim file names its steps in words and
shows no user name. Read with pdftotext (STAFFUI_PDF_DIR=... keeps the PDFs)."""

from __future__ import annotations

import re

import pytest

from claims.services import claim_file_fulfil, claim_file_request
from core.pdf import document_bytes
from tests.claims.factories import at, deny, file_claim, user_in
from tests.staffui.pdfs import assert_no_internal_note_or_username, flat, text_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def decider(db):
    user = user_in("administrator", username="adm-x7", email="x7@example.com")
    user.first_name, user.last_name = "Dana", "Decider"
    user.save()
    return user


def test_the_denial_notice_names_the_sponsor_once_and_says_where_to_send_the_appeal(alice, decider):
    claim = file_claim(alice, now=at(2025, 1, 10))
    decision = deny(claim, now=at(2025, 3, 3), actor=decider)
    raw = text_of(document_bytes(decision.notice), "denial-notice")
    text = flat(raw)
    # the sponsor once: on the letterhead (the plan's own text, quoted in (b) and at the end, is the plan's words)
    letter = (
        text.split("(b) The plan provisions")[0]
        + text.split("(c) Additional material")[1].split("The plan's claims procedure")[0]
    )
    assert letter.count("CarMax, Inc.") == 1, letter
    assert "Send it to Administrative Committee Executive Benefits 12800 Tuckahoe Creek Parkway" in text
    assert "nqdc-committee@example.com" in text
    assert text.count("within 60 days after you receive this notice") == 1  # the procedure once
    assert "The last day to file your appeal is May 2, 2025" in text
    assert_no_internal_note_or_username(raw, "adm-x7", "alice")


def test_the_claim_file_names_each_step_in_words_and_no_user(alice, decider):
    claim = file_claim(alice, now=at(2025, 1, 10))
    deny(claim, now=at(2025, 3, 3), actor=decider)
    request = claim_file_request(claim=claim, now=at(2025, 3, 10, 9), actor=alice.user)
    request = claim_file_fulfil(request=request, now=at(2025, 3, 11, 9), actor="system")
    raw = text_of(document_bytes(request.document), "claim-file")
    text = flat(raw)
    for step in ("Claim received", "Claim denied", "Requested March 10, 2025 by Alice Claimant (claimant)"):
        assert step in text, step
    assert "Dana Decider" in text
    log = text.split(" Log ")[1].split("Requests for this file")[0]
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", log), log  # no step code such as claim_file_requested
    assert "Claim file requested" in log
    assert_no_internal_note_or_username(raw, "adm-x7", "alice")
