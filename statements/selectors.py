"""Reads of the statements: one person's, newest first (the portal shows only the signed-in participant's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from statements.models import Statement

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from participants.models import Person


def statements_of(*, person: Person) -> QuerySet[Statement]:
    return (
        Statement.objects.filter(person=person)
        .select_related("participation__plan", "document")
        .order_by("-period_end", "participation__plan__code", "kind", "id")
    )
