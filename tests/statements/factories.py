"""A statement without a credited quarter: hand-made figures drawn and stored as the job stores them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from statements.figures import AccountFigures, FundLine, StatementFigures, modified_dietz
from statements.models import Statement
from statements.pdf import QUARTERLY_LAYOUT, quarterly_pdf
from statements.services import _Made, _store_all

END = dt.date(2026, 3, 31)


def statement_for(participation, *, beginning: str = "1000.00", ending: str = "1100.00") -> Statement:
    b, e = Decimal(beginning), Decimal(ending)
    account = AccountFigures(
        account_id=0,
        name="retirement_termination",
        label="Retirement/Termination Account",
        beginning=b,
        earnings=e - b,
        ending=e,
        funds=[FundLine(code="SV", name="Stable Value", value_begin=b, value_end=e, earnings=e - b)],
    )
    figures = StatementFigures(
        participation=participation,
        period_start=dt.date(2026, 1, 1),
        period_end=END,
        begin_date=dt.date(2025, 12, 31),
        end_date=END,
        accounts=[account],
        quarter=modified_dietz(beginning=b, ending=e, flows=[], start=dt.date(2026, 1, 1), end=END),
        year=modified_dietz(beginning=b, ending=e, flows=[], start=dt.date(2026, 1, 1), end=END),
        investment=["No investment election."],
        beneficiaries=["None on file."],
    )
    data = quarterly_pdf(figures=figures, reference=f"test-{participation.pk}")
    _store_all(
        [
            _Made(
                participation=participation,
                kind=Statement.Kind.QUARTERLY,
                start=dt.date(2026, 1, 1),
                end=END,
                data=data,
                layout=QUARTERLY_LAYOUT,
                figures={"ending": str(e)},
                beginning=b,
                ending=e,
            )
        ],
        now=timezone.now(),
    )
    return Statement.objects.get(participation=participation, period_end=END)
