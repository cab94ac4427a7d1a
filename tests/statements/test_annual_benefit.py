"""The BRP annual benefit statement of a participant not yet in pay: the benefit and each form on the plan's basis."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from core.pdf import document_bytes, pdf_text
from pensions.selectors import brp_benefit_page
from statements.models import Statement
from statements.pdf import amount
from statements.services import annual_statements_issue
from tests.pensions.factories import brp_participation

pytestmark = pytest.mark.django_db
YEAR_END = dt.date(2025, 12, 31)


def test_the_annual_statement_shows_the_benefit_and_every_form_of_the_pensions_quote(
    toy_basis, no_key_employees, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    participation = brp_participation(first_name="Brenda", last_name="Pension")
    result = annual_statements_issue(
        participation_ids=[participation.id], period_end=YEAR_END, now=timezone.now()
    )
    assert (result.issued, result.not_issued) == (1, [])
    statement = Statement.objects.get(participation=participation, kind="annual_benefit")
    text = pdf_text(document_bytes(statement.document))

    quote = brp_benefit_page(participation=participation, today=YEAR_END)["quote"]
    assert quote is not None
    assert "Benefit statement as of December 31, 2025" in text
    assert f"{amount(quote.single_life_annual)} a year" in text
    for option in quote.forms:
        if option.unavailable:
            continue
        shown = option.annual if option.form == "lump_sum" else option.monthly
        assert amount(shown) in text, option.form
    assert quote.basis in " ".join(text.split())
    again = annual_statements_issue(
        participation_ids=[participation.id], period_end=YEAR_END, now=timezone.now()
    )
    assert (again.issued, again.skipped) == (0, 1)


def test_an_issued_statement_is_announced_once_by_the_notice_service(
    toy_basis, no_key_employees, settings, tmp_path, django_capture_on_commit_callbacks
):
    from core.models import Notice

    settings.MEDIA_ROOT = str(tmp_path)
    participation = brp_participation(first_name="Nora", last_name="Notice")
    for _ in range(2):  # a rerun of the period finds the statement made and announces nothing
        with django_capture_on_commit_callbacks(execute=True):
            annual_statements_issue(
                participation_ids=[participation.id], period_end=YEAR_END, now=timezone.now()
            )
    statement = Statement.objects.get(participation=participation, kind="annual_benefit")
    (notice,) = Notice.objects.filter(person=participation.person, kind="statement_available")
    assert notice.document_id == statement.document_id
    assert (
        notice.channel == "paper"
    )  # no consent to electronic delivery: the statement goes to the print queue
