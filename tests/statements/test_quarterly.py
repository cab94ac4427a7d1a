"""Quarterly statements: every printed figure read back from the PDF and tied to the ledger."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.db.models import Sum
from django.utils import timezone

from books.models import DailyValuation, LedgerEntry, Position
from core.models import Document, JobRun
from core.pdf import document_bytes, pdf_text
from statements.figures import modified_dietz, statement_figures
from statements.hooks import statement_issued
from statements.models import Statement
from statements.pdf import amount as fmt
from statements.pdf import quarterly_pdf
from statements.services import (
    JOB_BATCH,
    JOB_QUARTERLY,
    quarterly_statements_issue,
    statements_batch_run,
    statements_period_start,
)
from tests.statements.conftest import OPENING, QUARTER_END

pytestmark = pytest.mark.django_db
# The books of a whole quarter are credited day by day (tests/statements/conftest.py): minutes on a busy machine.
slow_books = pytest.mark.slow

NOW = dt.datetime(2026, 4, 2, 12, 0, tzinfo=dt.UTC)


def _issue(participation) -> Statement:
    result = quarterly_statements_issue(participation_ids=[participation.id], period_end=QUARTER_END, now=NOW)
    assert result.not_issued == [], result.not_issued
    return Statement.objects.get(participation=participation)


def _line(text: str, label: str) -> list[str]:
    """The figures printed on the first line that starts with `label`."""
    for line in text.splitlines():
        if line.strip().startswith(label):
            return re.findall(r"\(?[\d,]+\.\d{2}\)?", line[len(line) - len(line.lstrip()) + len(label) :])
    raise AssertionError(f"no line {label!r} in the statement:\n{text}")


def _money(s: str) -> Decimal:
    negative = s.startswith("(")
    value = Decimal(s.strip("()").replace(",", ""))
    return -value if negative else value


@slow_books
def test_every_figure_on_the_statement_ties_to_the_ledger(quarter):
    participation = quarter["participation"]
    statement = _issue(participation)
    text = pdf_text(document_bytes(statement.document))

    positions = list(Position.objects.filter(account__participation=participation))
    begin = DailyValuation.objects.filter(position__in=positions, valuation_date=OPENING).aggregate(
        t=Sum("value")
    )["t"]
    end = DailyValuation.objects.filter(position__in=positions, valuation_date=QUARTER_END).aggregate(
        t=Sum("value")
    )["t"]
    quarter_entries = LedgerEntry.objects.filter(
        position__in=positions, valuation_date__gt=OPENING, valuation_date__lte=QUARTER_END
    )
    by_source = dict(
        quarter_entries.filter(kind="credit")
        .values("source")
        .annotate(t=Sum("amount"))
        .values_list("source", "t")
    )
    distributions = quarter_entries.filter(kind="distribution").aggregate(t=Sum("amount"))["t"]
    earnings = DailyValuation.objects.filter(
        position__in=positions, valuation_date__gt=OPENING, valuation_date__lte=QUARTER_END
    ).aggregate(t=Sum("earnings"))["t"]

    assert by_source == {"deferral": Decimal("1000.00"), "company_matching": Decimal("500.00")}
    assert distributions == Decimal("-200.00")
    # The books themselves: beginning + activity + earnings = ending.
    assert begin + sum(by_source.values()) + distributions + earnings == end

    assert _money(_line(text, "Beginning balance")[0]) == begin
    assert _money(_line(text, "Credits: Deferral")[0]) == by_source["deferral"]
    assert _money(_line(text, "Credits: Company contribution (matching)")[0]) == by_source["company_matching"]
    assert _money(_line(text, "Earnings (investment gain or loss)")[0]) == earnings
    assert _money(_line(text, "Distributions")[0]) == distributions
    assert _money(_line(text, "Forfeitures")[0]) == Decimal("0")
    assert _money(_line(text, "Ending balance")[0]) == end
    vested, unvested = (
        _money(_line(text, "of which vested")[0]),
        _money(_line(text, "of which not yet vested")[0]),
    )
    assert vested + unvested == end
    # EDCP 4.2: the Company Contribution Account vests after two years of service; this participant has them
    # (hired 2010), so everything is vested.
    assert unvested == Decimal("0")

    # By account: each account's beginning, credits, earnings, paid out, forfeited and ending, tied.
    for account_label, kind in (
        ("Retirement/Termination Account", "retirement_termination"),
        ("Company Contribution Account", "company_contribution"),
    ):
        figures = [_money(x) for x in _line(text, account_label)]
        beginning, credits, earned, paid, forfeited, ending = figures[:6]
        entries = quarter_entries.filter(account__kind=kind)
        rows = DailyValuation.objects.filter(position__account__kind=kind, position__in=positions)
        assert beginning == (rows.filter(valuation_date=OPENING).aggregate(t=Sum("value"))["t"] or 0)
        assert credits == entries.filter(kind="credit").aggregate(t=Sum("amount"))["t"]
        assert earned == rows.filter(valuation_date__gt=OPENING).aggregate(t=Sum("earnings"))["t"]
        assert paid == (entries.filter(kind="distribution").aggregate(t=Sum("amount"))["t"] or 0)
        assert forfeited == 0
        assert ending == rows.get(valuation_date=QUARTER_END).value
        assert beginning + credits + earned + paid + forfeited == ending

    # By fund: units and price at the end are the books' own.
    row = DailyValuation.objects.get(
        position__account__kind="retirement_termination", position__in=positions, valuation_date=QUARTER_END
    )
    fund_lines = text.split("By fund")[1].split("Retirement/Termination Account")[1]
    fund_line = next(line for line in fund_lines.splitlines() if "SV Stable Value" in line)
    assert (
        f"{row.units:,.6f}" in fund_line and f"{row.price:,.6f}" in fund_line and fmt(row.value) in fund_line
    )

    # The return printed is the Modified Dietz return of the ledger's flows, and the formula is stated.
    flows = [(e.valuation_date, e.amount) for e in quarter_entries.exclude(kind="exchange")]
    dietz = modified_dietz(
        beginning=begin, ending=end, flows=flows, start=dt.date(2026, 1, 1), end=QUARTER_END
    )
    assert dietz.percent in _line_text(text, "Quarter to Mar 31")
    assert "R = (E - B - F) / (B + sum of Wi x Fi)" in text
    assert statement.beginning_balance == begin and statement.ending_balance == end
    assert "Stable Value" in text or "default fund" in text
    assert "None on file" in text  # beneficiaries on file (none)


def _line_text(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(label))


def test_the_modified_dietz_return_worked_by_hand():
    """B = 10,000.00 at the close of Dec 31; E = 11,500.00 at the close of Mar 31 (CD = 31 + 28 + 31 = 90 days).
    Flows: +1,000.00 credited on Jan 30 (D = 30, W = (90 - 30) / 90 = 2/3) and -200.00 paid on Mar 16
    (D = 75, W = 15/90 = 1/6).
    F = 1,000 - 200 = 800.00; E - B - F = 11,500 - 10,000 - 800 = 700.00;
    B + sum(W x F) = 10,000 + 666.6667 - 33.3333 = 10,633.3333;
    R = 700 / 10,633.3333 = 0.065831 -> 0.0658 (6.58%).
    """
    result = modified_dietz(
        beginning=Decimal("10000.00"),
        ending=Decimal("11500.00"),
        flows=[(dt.date(2026, 1, 30), Decimal("1000.00")), (dt.date(2026, 3, 16), Decimal("-200.00"))],
        start=dt.date(2026, 1, 1),
        end=dt.date(2026, 3, 31),
    )
    assert result.days == 90
    assert result.net_flows == Decimal("800.00")
    assert result.gain == Decimal("700.00")
    assert result.weighted_flows == Decimal("633.33")
    assert result.rate == Decimal("0.0658")
    assert result.percent == "6.58%"


def test_no_money_invested_has_no_return():
    result = modified_dietz(
        beginning=Decimal("0"),
        ending=Decimal("0"),
        flows=[],
        start=dt.date(2026, 1, 1),
        end=dt.date(2026, 3, 31),
    )
    assert result.rate is None and result.percent == "n/a"


@slow_books
def test_a_rerun_makes_no_duplicate_and_the_same_bytes(quarter):
    participation = quarter["participation"]
    first = _issue(participation)
    again = quarterly_statements_issue(participation_ids=[participation.id], period_end=QUARTER_END, now=NOW)
    assert (again.issued, again.skipped) == (0, 1)
    assert Statement.objects.count() == 1
    assert Document.objects.filter(kind="statement_quarterly").count() == 1
    figures = statement_figures(participations=[participation], period_end=QUARTER_END)[participation.id]
    redrawn = quarterly_pdf(figures=figures, reference=first.figures and _reference(first))
    import hashlib

    assert hashlib.sha256(redrawn).hexdigest() == first.sha256 == first.document.sha256


def _reference(statement: Statement) -> str:
    from statements.services import statement_reference

    return statement_reference(
        participation=statement.participation, kind="quarterly", period_end=statement.period_end
    )


@slow_books
def test_a_statement_that_does_not_tie_is_not_issued_and_the_job_names_the_account(quarter):
    participation = quarter["participation"]
    position = Position.objects.get(
        account__participation=participation, account__kind="retirement_termination"
    )
    # A ledger entry no crediting valued: the books no longer tie for this account.
    LedgerEntry.objects.create(
        position=position,
        account_id=position.account_id,
        kind="adjustment",
        source="adjustment",
        effective_date=dt.date(2026, 2, 2),
        valuation_date=dt.date(2026, 2, 2),
        units=Decimal("1.000000"),
        price=Decimal("10.000000"),
        amount=Decimal("10.00"),
        idempotency_key="untied",
        actor="test",
        posted_at=timezone.now(),
    )
    batches: list = []
    run = statements_period_start(
        kind=JOB_QUARTERLY, period_end=QUARTER_END, now=NOW, dispatch=batches.extend
    )
    assert run.status == "running" and len(batches) == 1
    kind, end, number, ids = batches[0]
    statements_batch_run(
        kind=kind, period_end=dt.date.fromisoformat(end), number=number, participation_ids=ids, now=NOW
    )
    parent = JobRun.objects.get(kind=JOB_QUARTERLY, key=QUARTER_END.isoformat())
    assert parent.status == "failed"
    assert (
        "retirement_termination" in parent.message
        and str(participation.person.employee_number) in parent.message
    )
    assert JobRun.objects.get(kind=JOB_BATCH).status == "failed"
    assert not Statement.objects.exists()


@slow_books
def test_the_period_job_runs_in_batches_reports_progress_and_a_rerun_changes_nothing(quarter, edcp):
    from tests.factories import ParticipationFactory

    ParticipationFactory(plan=edcp)  # no account: no statement
    sent: list = []
    statement_issued.connect(
        receiver := (lambda sender, statement, **kw: sent.append(statement.pk)), weak=False
    )
    try:
        batches: list = []
        statements_period_start(kind=JOB_QUARTERLY, period_end=QUARTER_END, now=NOW, dispatch=batches.extend)
        for kind, end, number, ids in batches:
            statements_batch_run(
                kind=kind,
                period_end=dt.date.fromisoformat(end),
                number=number,
                participation_ids=ids,
                now=NOW,
            )
        parent = JobRun.objects.get(kind=JOB_QUARTERLY, key=QUARTER_END.isoformat())
        assert parent.status == "done", parent.message
        assert parent.progress_done == parent.progress_total == 1
        assert parent.stats["issued"] == 1
        again: list = []
        rerun = statements_period_start(
            kind=JOB_QUARTERLY, period_end=QUARTER_END, now=NOW, dispatch=again.extend
        )
        assert rerun.status == "done" and again == []
        assert Statement.objects.count() == 1
    finally:
        statement_issued.disconnect(receiver)


@slow_books
def test_a_quarter_not_yet_credited_is_refused(quarter):
    run = statements_period_start(
        kind=JOB_QUARTERLY, period_end=dt.date(2026, 6, 30), now=NOW, dispatch=lambda b: None
    )
    assert run.status == "refused" and "not credited" in run.message
