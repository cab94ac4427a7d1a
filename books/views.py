"""Staff and portal pages of the books.

Portal pages read only the signed-in participant's books: every query starts from request.user.person,
and an account of anyone else answers 404.
"""

from __future__ import annotations

import datetime as dt
import io
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from books import selectors
from books.forms import ParallelRunForm, ToleranceForm
from books.models import (
    Account,
    ContributionDeclaration,
    Forfeiture,
    LedgerEntry,
    ParallelRun,
    ParallelRunTolerance,
    PendingTransaction,
)
from books.report_files import LIABILITY, liability_figures
from books.services import parallel
from core.charts import line_chart_with_table
from core.csv_export import CsvWriter
from core.dates import date_in_range, out_of_range_message
from core.decorators import capability_required, participant_required
from core.inputs import date_or_none
from core.report_pages import report_csv, report_page
from core.roles import Cap, has_cap

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
    participations = selectors.person_books(person=person, on=today)
    account_ids = [row["account"].id for p in participations for row in p["accounts"]]
    range_key, start = _chart_range(request, today)
    history = selectors.value_history(account_ids=account_ids, start=start, end=today)
    return render(
        request,
        "books/portal_overview.html",
        {
            "person": person,
            "today": today,
            "participations": participations,
            "total": sum((p["total"] for p in participations), 0),
            "vested": sum((p["vested"] for p in participations), 0),
            "chart": line_chart_with_table(
                history, title="Balance of all your accounts", empty_text="No balance history yet"
            ),
            "ranges": [(k, label) for k, (label, _) in RANGES.items()],
            "range": range_key,
            "last_valued": history[-1][0] if history else None,
        },
    )


@participant_required
def portal_account(request, pk: int):
    person = request.user.person
    account = get_object_or_404(
        Account.objects.select_related("participation__plan"), pk=pk, participation__person=person
    )
    today = timezone.localdate()
    (books,) = [
        p
        for p in selectors.person_books(person=person, on=today)
        if p["participation"].id == account.participation_id
    ]
    (row,) = [r for r in books["accounts"] if r["account"].id == account.id]
    range_key, start = _chart_range(request, today)
    entries = Paginator(
        LedgerEntry.objects.filter(account=account)
        .select_related("position__fund")
        .order_by("-valuation_date", "-id"),
        50,
    ).get_page(request.GET.get("page"))
    return render(
        request,
        "books/portal_account.html",
        {
            "person": person,
            "account": account,
            "row": row,
            "plan": account.participation.plan,
            "today": today,
            "entries": entries,
            "ranges": [(k, label) for k, (label, _) in RANGES.items()],
            "range": range_key,
            "chart": line_chart_with_table(
                selectors.value_history(account_ids=[account.id], start=start, end=today),
                title=account.label,
                empty_text="No balance history yet",
            ),
        },
    )


@capability_required(Cap.VIEW_STAFF)
def overview(request):
    today = timezone.localdate()
    totals = selectors.books_totals(on=today)
    return render(
        request,
        "books/overview.html",
        {
            "today": today,
            **totals,
            "forfeitures": Forfeiture.objects.select_related(
                "account__participation__person", "account__participation__plan"
            ).order_by("-on", "-id")[:20],
            "declarations": ContributionDeclaration.objects.select_related("plan").all()[:20],
            "pending_count": PendingTransaction.objects.filter(
                status=PendingTransaction.Status.PENDING
            ).count(),
        },
    )


def _day_asked(request, default: dt.date) -> tuple[dt.date, str]:
    text = request.GET.get("as_of", "").strip()
    if not text:
        return default, ""
    day = date_or_none(text)
    if day is None:
        return default, f"{text!r} is not a date (YYYY-MM-DD); showing {default:%B %-d, %Y}."
    if day > default:
        return default, f"{day:%B %-d, %Y} is in the future; showing {default:%B %-d, %Y}."
    if not date_in_range(day):
        return default, f"{out_of_range_message('the date', text)}; showing {default:%B %-d, %Y}."
    return day, ""


@capability_required(Cap.VIEW_STAFF)
def liability(request):
    """What the Company owes under each plan on a date (EDCP 10.1, RRP 8.02, BRP 8.1): books.liability.

    Its work grows with the population (every account and every defined benefit), so the page shows the figures
    the report job computed for the date, with its CSV, or offers to compute them (core.report_pages)."""
    today = timezone.localdate()
    as_of, error = _day_asked(request, today)
    params = [("as_of", as_of.isoformat())]
    page = report_page(request, name=LIABILITY.name, params=params, now=timezone.now())
    state = page["report_state"]
    if request.GET.get("format") == "csv":
        return report_csv(state, page=f"{request.path}?{urlencode(params)}")
    return render(
        request,
        "books/liability.html",
        {
            "figures": liability_figures(state.summary) if state.summary else None,
            "as_of": as_of,
            "today": today,
            "error": error,
            "report_what": f"the liability as of {as_of:%B %-d, %Y}",
            **page,
        },
    )


portal_account.access_model = Account  # tests/test_access.py: the URL's pk is an Account


# --- the parallel run after a conversion (books.services.parallel; docs/parallel-run.md) ---------------------


@capability_required(Cap.VIEW_STAFF)
def parallel_runs(request):
    """The comparisons kept, a file to compare (import_data) and the Committee's tolerance (manage_plans)."""
    user = request.user
    upload = (
        ParallelRunForm(request.POST or None, request.FILES or None) if "compare" in request.POST else None
    )
    tolerance = ToleranceForm(request.POST or None) if "tolerance" in request.POST else None
    error = ""
    if request.method == "POST":
        if upload is not None:
            if not has_cap(user, Cap.IMPORT_DATA):
                raise PermissionDenied("comparing a valuation file needs the import_data capability")
            if upload.is_valid():
                try:
                    stream = upload.cleaned_data["file"]
                    valuation = parallel.valuation_file_read(stream=stream, name=stream.name)
                    run = parallel.parallel_run_compare(valuation=valuation, actor=user, at=timezone.now())
                except parallel.ParallelFileError as exc:
                    error = exc.message
                    upload.add_error("file", exc.message)
                else:
                    return redirect("books_staff:parallel_run", pk=run.pk)
        elif tolerance is not None:
            if not has_cap(user, Cap.MANAGE_PLANS):  # the Committee's decision, as its other plan settings
                raise PermissionDenied("setting the tolerance needs the manage_plans capability")
            if tolerance.is_valid():
                parallel.tolerance_set(
                    amount=tolerance.cleaned_data["amount"],
                    actor=user,
                    at=timezone.now(),
                    note=tolerance.cleaned_data["note"],
                )
                return redirect("books_staff:parallel_runs")
    page = Paginator(ParallelRun.objects.all(), 25).get_page(request.GET.get("page"))
    return render(
        request,
        "books/parallel_runs.html",
        {
            "page": page,
            "upload": upload or ParallelRunForm(),
            "tolerance_form": tolerance or ToleranceForm(),
            "tolerance": parallel.tolerance_in_force(),
            "tolerances": ParallelRunTolerance.objects.all()[:5],
            "can_compare": has_cap(user, Cap.IMPORT_DATA),
            "can_set": has_cap(user, Cap.MANAGE_PLANS),
            "error": error,
            "columns": ",".join(parallel.COLUMNS),
        },
        status=400 if error else 200,
    )


@capability_required(Cap.VIEW_STAFF)
def parallel_run(request, pk: int):
    """One comparison: totals per day, then every difference (paged; CSV)."""
    run = get_object_or_404(ParallelRun, pk=pk)
    differences = run.difference_rows.all()
    day = date_or_none(request.GET.get("day", ""))
    if day is not None:
        differences = differences.filter(valuation_date=day)
    if request.GET.get("format") == "csv":
        return _parallel_csv(run, differences)
    page = Paginator(differences, 100).get_page(request.GET.get("page"))
    return render(
        request,
        "books/parallel_run.html",
        {"run": run, "days": run.days.all(), "page": page, "day": day},
    )


parallel_run.access_model = ParallelRun  # tests/test_access.py: the URL's pk is a kept comparison


def _parallel_csv(run: ParallelRun, differences) -> HttpResponse:
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(
        [
            "valuation_date",
            "line",
            "kind",
            "employee_number",
            "plan",
            "account",
            "fund",
            "prior_units",
            "our_units",
            "prior_value",
            "our_value",
            "value_difference",
        ]
    )
    for d in differences.iterator(chunk_size=2000):
        writer.writerow(
            [
                d.valuation_date,
                d.line or "",
                d.kind,
                d.employee_number,
                d.plan_code,
                d.account,
                d.fund_code,
                d.prior_units if d.prior_units is not None else "",
                d.our_units if d.our_units is not None else "",
                d.prior_value if d.prior_value is not None else "",
                d.our_value if d.our_value is not None else "",
                d.value_difference,
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="parallel-run-{run.pk}-differences.csv"'
    return response
