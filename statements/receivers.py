"""What happens when a statement is issued: the participant is told it is available (core.notices), by email
with the PDF when they consented to electronic delivery, else the statement goes to the print queue."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core.notices import statement_available_send
from statements.models import Statement


def statement_announce(sender: Any, statement: Statement, **kwargs: Any) -> None:
    """Connected to statements.hooks.statement_issued (sent once per new statement, after its commit)."""
    if statement.kind == Statement.Kind.QUARTERLY:
        period = f"the quarter ended {statement.period_end:%B %-d, %Y}"
    else:
        period = f"the year {statement.period_end:%Y}"
    statement_available_send(
        person=statement.person,
        statement=statement,
        document=statement.document,
        link=reverse("statements_portal:list"),
        period=period,
        as_of=statement.issued_at,
    )
