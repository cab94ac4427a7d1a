"""Staff lists at scale (issue 15): every staff list pages on the server and searches by name, employee number and
status the same way, through this one helper and its two templates (core/_list_search.html, core/_pager.html).

The search is a prefix search: each word of the query must begin the person's last name, first name or employee
number, ignoring case. On PostgreSQL each of those three is served by an expression index on UPPER(column::text)
with text_pattern_ops (participants migration 0017_person_search_indexes), which is what Django's `istartswith`
compares (a trigram index would serve a substring search, but pg_trgm is a contrib extension that a database may
not have). The status filter is an equality on a column that has an index of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest

PAGE_SIZE = 50
MAX_WORDS = 4  # a longer query adds nothing a person types and costs a join per word


class ListSearchForm(forms.Form):
    q = forms.CharField(
        label="Name or employee number",
        required=False,
        max_length=100,
        help_text="The beginning of a last name, first name or employee number",
    )
    status = forms.ChoiceField(label="Status", required=False)

    def __init__(self, *args: Any, statuses: Sequence[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if statuses is None:
            del self.fields["status"]
        else:
            self.fields["status"].choices = [("", "Any status"), *statuses]  # type: ignore[attr-defined]


def people_filter(query: str, *, path: str = "") -> Q:
    """Each word of `query` begins the last name, first name or employee number of the person at `path` (a
    lookup prefix such as "participation__person__"; "" for Person itself)."""
    condition = Q()
    for word in query.split()[:MAX_WORDS]:
        condition &= (
            Q(**{f"{path}last_name__istartswith": word})
            | Q(**{f"{path}first_name__istartswith": word})
            | Q(**{f"{path}employee_number__istartswith": word})
        )
    return condition


def list_search(
    request: HttpRequest, *, people: bool = True, statuses: Sequence[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """The request's search: `search` (the form), `query` (empty without `people`) and `status`."""
    form = ListSearchForm(request.GET or None, statuses=statuses)
    if not people:
        del form.fields["q"]
    query = status = ""
    if form.is_bound and form.is_valid():
        query = form.cleaned_data.get("q", "").strip()
        status = form.cleaned_data.get("status", "")
    return {"search": form, "query": query, "status": status}


def staff_list(
    request: HttpRequest,
    queryset: QuerySet,
    *,
    person_path: str | None = "",
    statuses: Sequence[tuple[str, str]] | None = None,
    status_field: str = "status",
    per_page: int = PAGE_SIZE,
) -> dict[str, Any]:
    """One page of `queryset` (already ordered deterministically) filtered by the request's `q` (on the person at
    `person_path`; None: the list has no person) and `status` (when `statuses` are given), as the context the two
    templates read: `page`, `search` (the form), `query`, `status`."""
    found = list_search(request, people=person_path is not None, statuses=statuses)
    if found["query"] and person_path is not None:
        queryset = queryset.filter(people_filter(found["query"], path=person_path))
    if found["status"]:
        queryset = queryset.filter(**{status_field: found["status"]})
    return {**found, "page": page_of(request, queryset, per_page=per_page)}


def page_of(request: HttpRequest, rows: QuerySet | Sequence[Any], *, per_page: int = PAGE_SIZE) -> Page:
    """A page of rows, for a list that has its own filters."""
    return Paginator(rows, per_page).get_page(request.GET.get("page"))
