"""Issue 11, documents: the BRP statement is titled as an estimate for the chosen separation date and carries
no internal catalog note (which table or rate the catalog lacked): that note is for staff pages only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from core.pdf import document_bytes
from pensions.services import benefit
from pensions.services.benefit import brp_benefit_quote, brp_quote_document
from plans import actuarial
from tests.pensions.factories import TOY, brp_participation
from tests.staffui.pdfs import assert_no_internal_note_or_username, flat, text_of

pytestmark = pytest.mark.django_db
NOTE = "the 2026 table is not in the catalog; the 2025 table is used"


@pytest.fixture
def noted_basis(monkeypatch):
    monkeypatch.setattr(actuarial, "mortality_table", lambda year: (TOY, NOTE))
    monkeypatch.setattr(
        actuarial,
        "segment_rates_for",
        lambda day, lookback=1, boundaries=(5, 20): (actuarial.InterestBasis.flat(0.0), ""),
    )


def test_the_statement_is_an_estimate_for_the_separation_date_without_internal_notes(
    noted_basis, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    participation = brp_participation()
    quote = brp_benefit_quote(
        participation=participation, separation_date=dt.date(2026, 4, 20), as_of=dt.date(2026, 3, 1)
    )
    assert (
        quote.basis_notes == [NOTE] and NOTE not in quote.notes
    )  # kept for staff, apart from the reader's notes
    doc = brp_quote_document(quote=quote, as_of=dt.date(2026, 3, 1), actor="adm-q9", now=timezone.now())
    raw = text_of(document_bytes(doc), "brp-statement")
    text = flat(raw)
    assert (
        "Statement of Supplemental Benefit: an estimate for a separation from service on April 20, 2026"
        in text
    )
    assert "An estimate, not a promise of payment" in text
    assert text.count("Benefit Restoration Plan") == 1
    assert_no_internal_note_or_username(raw, "adm-q9")
    assert benefit.QUOTE_KIND == doc.kind
