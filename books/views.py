"""Staff and portal pages of the books.

Portal pages read only the signed-in participant's books: every query starts from request.user.person,
and an account of anyone else answers 404.
"""
from __future__ import annotations

import datetime as dt

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from books import selectors
from books.models import Account, ContributionDeclaration, Forfeiture, LedgerEntry, PendingTransaction
from core.charts import line_chart
from core.decorators import capability_required, participant_required
from core.roles import Cap

RANGES = {"3m": ("3 months", 92), "1y": ("1 year", 366), "2y": ("2 years", 731), "all": ("All", None)}


def _chart_range(request, today: dt.date) -> tuple[str, dt.date]:
    key = request.GET.get("range", "1y")
    if key not in RANGES:
        key = "1y"
    days = RANGES[key][1]
    return key, (today - dt.timedelta(days=days)) if days else dt.date(1900, 1, 1)


@participant_required
def portal_overview(request):
    person = request.user.person
    today = timezone.localdate()
    participations = selectors.person_books(person, today)
    account_ids = [row["account"].id for p in participations for row in p["accounts"]]
    range_key, start = _chart_range(request, today)
    history = selectors.value_history(account_ids, start, today)
    return render(request, "books/portal_overview.html", {
        "person": person, "today": today, "participations": participations,
        "total": sum((p["total"] for p in participations), 0), "vested": sum((p["vested"] for p in participations), 0),
        "chart": line_chart(history, title="Balance of all your accounts", empty_text="No balance history yet"),
        "ranges": [(k, label) for k, (label, _) in RANGES.items()], "range": range_key,
        "last_valued": history[-1][0] if history else None,
    })


@participant_required
def portal_account(request, pk: int):
    person = request.user.person
    account = get_object_or_404(Account.objects.select_related("participation__plan"), pk=pk,
                                participation__person=person)
    today = timezone.localdate()
    (books,) = [p for p in selectors.person_books(person, today) if p["participation"].id == account.participation_id]
    (row,) = [r for r in books["accounts"] if r["account"].id == account.id]
    range_key, start = _chart_range(request, today)
    entries = Paginator(LedgerEntry.objects.filter(account=account).select_related("position__fund")
                        .order_by("-valuation_date", "-id"), 50).get_page(request.GET.get("page"))
    return render(request, "books/portal_account.html", {
        "person": person, "account": account, "row": row, "plan": account.participation.plan, "today": today,
        "entries": entries, "ranges": [(k, label) for k, (label, _) in RANGES.items()], "range": range_key,
        "chart": line_chart(selectors.value_history([account.id], start, today), title=account.label,
                            empty_text="No balance history yet"),
    })


@capability_required(Cap.VIEW_STAFF)
def overview(request):
    today = timezone.localdate()
    totals = selectors.books_totals(today)
    return render(request, "books/overview.html", {
        "today": today, **totals,
        "forfeitures": Forfeiture.objects.select_related("account__participation__person",
                                                          "account__participation__plan").order_by("-on", "-id")[:20],
        "declarations": ContributionDeclaration.objects.select_related("plan").all()[:20],
        "pending_count": PendingTransaction.objects.filter(status=PendingTransaction.Status.PENDING).count(),
    })


portal_account.access_model = Account  # tests/test_access.py: the URL's pk is an Account
