"""Issue 14, the reconciliation after an apply: the prior recordkeeper's control totals beside THIS system's
figures read from the books on the conversion date (ledger units, positions' valuation, the plan liability
report), not beside totals recomputed from the package; a difference is marked in the PDF."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone
from pypdf import PdfReader

from books.models import Account, EntryKind, PendingTransaction, Source
from conversion.models import ConversionRun
from conversion.services import conversion_run
from conversion.staff import control_lines, conversion_reconciliation_pdf
from core.pdf import document_bytes
from tests.claims.factories import user_in

pytestmark = pytest.mark.django_db
PACKAGE = Path(__file__).parent / "sample" / "package"
NOW = dt.datetime(2026, 12, 1, 17, 0, tzinfo=dt.UTC)
CD = dt.date(2026, 11, 30)


def _control() -> dict[tuple[str, ...], Decimal]:
    out = {}
    for line in (PACKAGE / "control.csv").read_text().splitlines()[1:]:
        *key, total = line.split(",")
        out[tuple(key)] = Decimal(total)
    return out


def _pdf_text(run: ConversionRun) -> str:
    doc = conversion_reconciliation_pdf(run=run, actor=user_in("committee", f"c{run.pk}"), now=timezone.now())
    reader = PdfReader(io.BytesIO(document_bytes(doc)))
    return " ".join(" ".join(page.extract_text() or "" for page in reader.pages).split())


def _apply() -> ConversionRun:
    outcome = conversion_run(folder=PACKAGE, dry_run=False, actor="test", now=NOW)
    assert outcome.run.status == ConversionRun.Status.APPLIED
    return outcome.run


def test_after_the_apply_every_balance_of_the_books_ties_to_the_control_to_the_cent():
    run = _apply()
    lines = control_lines(run=run)
    control = _control()
    balances = [ln for ln in lines if ln.books is not None]
    balance_keys = {
        k
        for k in control
        if (k[0], k[1])
        in {
            ("positions.csv", "units"),
            ("positions.csv", "market_value"),
            ("accounts.csv", "value"),
            ("accounts.csv", "vested_value"),
        }
    }
    assert {
        (ln.file, ln.measure, ln.plan, ln.account, ln.fund, ln.plan_year, ln.source) for ln in balances
    } == (balance_keys)
    for ln in balances:  # read from the books, compared as numbers, to the cent (units to six decimals)
        assert Decimal(ln.books) == Decimal(ln.control), ln
        assert ln.matches
    # history and monthly benefits are not balances: compared with the package as written
    assert all(
        ln.books is None and ln.matches for ln in lines if ln.file in ("contributions.csv", "db_benefits.csv")
    )
    text = _pdf_text(run)
    assert "every control total ties" in text and "This system's books" in text and " NO " not in f" {text} "
    assert f"{control[('positions.csv', 'market_value', '', '', '', '', '')]:,.2f}" in text


def test_a_balance_the_books_hold_apart_from_the_package_is_a_difference_shown_in_both_columns():
    run = _apply()
    account = Account.objects.filter(participation__plan__code="RRP", kind="matching").order_by("id").first()
    PendingTransaction.objects.create(  # money credited here on the conversion date, not in the package
        account=account,
        kind=EntryKind.CREDIT,
        source=Source.ADJUSTMENT,
        amount=Decimal("123.45"),
        effective_date=CD,
        idempotency_key="reconciliation-test",
        actor="test",
        created_at=NOW,
    )
    lines = {(ln.file, ln.measure, ln.plan, ln.account): ln for ln in control_lines(run=run) if not ln.fund}
    value = lines[("accounts.csv", "value", "RRP", "matching")]
    control = _control()[("accounts.csv", "value", "RRP", "matching", "", "", "")]
    assert Decimal(value.control) == control and Decimal(value.package) == control
    assert Decimal(value.books) == control + Decimal("123.45") and not value.matches
    plan = lines[("positions.csv", "market_value", "RRP", "")]
    assert not plan.matches and Decimal(plan.books) - Decimal(plan.control) == Decimal("123.45")
    text = _pdf_text(run)
    assert "DIFFER" in text and " NO " in text
    assert f"{control:,.2f}" in text and f"{control + Decimal('123.45'):,.2f}" in text
