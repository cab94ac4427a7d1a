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


def test_the_annual_statement_of_a_participant_in_pay_shows_the_benefit_the_payments_and_the_withholding(
    toy_basis, no_key_employees, settings, tmp_path
):
    """In pay: the form and monthly benefit, each payment made in the year (gross, federal and state withholding,
    net) and the year's totals, read from the PDF text. Figures of tests/pensions/test_payments.py: a Single
    Life Annuity of 70,000 a year, 5,833.33 a month; 22% federal (1,283.33) and Virginia 5.75% (335.42)."""
    from decimal import Decimal

    from payments.models import ScheduledPayment
    from payments.services.processing import payment_day_process
    from payments.services.runs import payment_run_approve, payment_run_prepare
    from tests.conftest import eastern
    from tests.payments.factories import staff_user
    from tests.pensions.factories import separate
    from tests.pensions.test_payments import credited

    settings.MEDIA_ROOT = str(tmp_path)
    participation = brp_participation(first_name="Ines", last_name="Inpay")
    separate(participation, dt.date(2026, 4, 20))  # BRP 4.2(a): paid monthly from May 1, 2026
    preparer, approver = staff_user("prep", "administrator"), staff_user("appr", "committee")
    for due, last_credited in (
        (dt.date(2026, 5, 1), dt.date(2026, 4, 30)),
        (dt.date(2026, 6, 1), dt.date(2026, 5, 29)),
    ):
        credited(last_credited)
        payment_day_process(day=due, now=eastern(due.year, due.month, due.day, 7))
        run = payment_run_prepare(
            period_end=due, actor=preparer, now=eastern(due.year, due.month, due.day, 8)
        )
        payment_run_approve(run=run, actor=approver, now=eastern(due.year, due.month, due.day, 10))
    paid = list(
        ScheduledPayment.objects.filter(
            participation=participation, status=ScheduledPayment.Status.PAID
        ).order_by("paid_on")
    )
    assert [p.paid_on for p in paid] == [dt.date(2026, 5, 1), dt.date(2026, 6, 1)]

    period_end = dt.date(2026, 12, 31)
    result = annual_statements_issue(
        participation_ids=[participation.id], period_end=period_end, now=timezone.now()
    )
    assert (result.issued, result.not_issued) == (1, [])
    statement = Statement.objects.get(participation=participation, kind="annual_benefit")
    text = pdf_text(document_bytes(statement.document))
    words = " ".join(text.split())

    assert "Benefit statement as of December 31, 2026" in words
    assert "Your benefit in pay" in words and "Payments made in 2026" in words
    assert "Commencement May 1, 2026" in words
    assert f"Monthly benefit {amount(Decimal('5833.33'))}" in words
    for row in paid:  # each payment of the year: gross, federal and state withholding, net
        assert row.amount == Decimal("5833.33")
        assert (row.federal_withholding, row.state_withholding) == (Decimal("1283.33"), Decimal("335.42"))
        assert row.net_amount == Decimal("4214.58")
    line = " ".join(amount(Decimal(v)) for v in ("5833.33", "1283.33", "335.42", "4214.58"))
    assert words.count(line) == 2, words
    # the totals of the year: 2 x 5,833.33 gross, 2 x 1,283.33 federal, 2 x 335.42 state, 2 x 4,214.58 net
    totals = " ".join(amount(Decimal(v)) for v in ("11666.66", "2566.66", "670.84", "8429.16"))
    assert f"Total {totals}" in words
    assert statement.figures["in_pay"] is True
    assert statement.figures["paid"] == {
        "gross": "11666.66",
        "federal": "2566.66",
        "state": "670.84",
        "net": "8429.16",
    }
