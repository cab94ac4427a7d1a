"""Issue 11, documents: the election confirmation names the plan once, says which election it replaces and
carries no internal note; the blank form has room for name and number, a signature block and the return
address. Read with pdftotext (STAFFUI_PDF_DIR=... keeps the PDFs to look at as pictures)."""

from __future__ import annotations

import pytest

from core.pdf import document_bytes
from elections.services import blank_form_render, deferral_election_submit, election_confirmation_render
from plans.models import Plan
from tests.elections.factories import at
from tests.staffui.pdfs import assert_no_internal_note_or_username, flat, text_of

pytestmark = pytest.mark.django_db


def _deferral(alice, when, percent):
    return deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": percent},
        accounts={"retirement_termination": 100},
        submitted_at=when,
        channel="portal",
        actor="alice",
    )


def test_the_confirmation_names_the_plan_once_and_says_which_election_it_replaces(alice):
    first = _deferral(alice, at(2026, 11, 10, 9, 30), 10)
    second = _deferral(alice, at(2026, 11, 20, 14, 5), 12)
    doc = election_confirmation_render(election=second, actor="worker", now=at(2026, 11, 20, 14, 6))
    raw = text_of(document_bytes(doc), "election-confirmation")
    text = flat(raw)
    assert text.count("Executive Deferred Compensation Plan") == 1, text
    assert (
        f"Replaces Your election received November 10, 2026, 9:30 a.m. Eastern Time (reference deferralelection-{first.pk})"
        in text
    )
    assert_no_internal_note_or_username(raw, "alice", "worker")
    first_doc = election_confirmation_render(election=first, actor="worker", now=at(2026, 11, 10, 9, 31))
    assert "No earlier election: this is your first of its kind" in flat(
        text_of(document_bytes(first_doc), "first")
    )


def test_a_quote_the_catalog_lacks_is_not_explained_by_the_catalog(alice):
    """The 2011 EDCP text has no 3.2(d): the confirmation quotes what there is, with no note about the catalog."""
    election = _deferral(alice, at(2026, 11, 20, 14, 5), 12)
    raw = text_of(
        document_bytes(election_confirmation_render(election=election, actor="w", now=at(2026, 11, 21))), "c"
    )
    assert "EDCP 3.2" in raw
    assert_no_internal_note_or_username(raw, "alice")


def test_the_blank_form_has_room_for_name_and_number_a_signature_block_and_the_return_address(db):
    plan = Plan.objects.get(code="EDCP")
    doc = blank_form_render(plan=plan, plan_year=2027, actor="staff1", now=at(2026, 10, 1))
    raw = text_of(document_bytes(doc), "blank-form")
    text = flat(raw)
    for part in (
        "Your full name (print)",
        "Employee number",
        "Participant's signature",
        "Received by the Committee",
        "Return this form to Administrative Committee Executive Benefits 12800 Tuckahoe Creek Parkway",
        "nqdc-committee@example.com",
    ):
        assert part in text, part
    assert text.count("Executive Deferred Compensation Plan") == 1
    assert_no_internal_note_or_username(raw, "staff1")
