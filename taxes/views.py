"""Staff pages of the tax figures (the FICA feed, the year-end figures and files) and the portal's Tax section."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.decorators import capability_required, participant_required
from core.inputs import date_or_none
from core.jobs import JobBusy, job_lock
from core.roles import Cap, has_cap
from participants.models import Beneficiary, Person
from participants.services import ParticipantError, beneficiary_tax_info_record
from taxes import selectors
from taxes.models import FeedTake, YearEndTake
from taxes.services.fica import fica_wages_record
from taxes.services.files import YEAR_END_FILES, feed_csv, feed_take, year_end_take


def _csv(text: str, name: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@capability_required(Cap.VIEW_STAFF)
def feed_list(request):
    today = timezone.localdate()
    return render(
        request,
        "taxes/feed_list.html",
        {
            "today": today,
            "feeds": selectors.feed_dates(),
            "unassigned": selectors.feed_unassigned(),
            "can_take": has_cap(request.user, Cap.TAX_FILES),
            "years": list(range(today.year, today.year - 4, -1)),
        },
    )


@require_POST
@capability_required(Cap.TAX_FILES)
def feed_record(request):
    """Bring the FICA rows up to date with the books, through today (the job is idempotent)."""
    try:
        with job_lock("taxes.record_fica_wages"):  # the task's lock: never two at once
            result = fica_wages_record(through=timezone.localdate(), now=timezone.now())
    except JobBusy as exc:
        messages.error(request, str(exc))
        return redirect("taxes_staff:feeds")
    messages.success(
        request,
        f"FICA wages recorded: {result.written} new, {result.corrections} corrections, {result.unchanged} unchanged.",
    )
    return redirect("taxes_staff:feeds")


@capability_required(Cap.VIEW_STAFF)
def feed_detail(request, day: str):
    feed_date = _date(day)
    last, new = selectors.feed_changes(feed_date=feed_date)
    rows = list(selectors.feed_rows(feed_date=feed_date))
    if not rows and last is None:
        raise Http404("no FICA feed for that pay date")
    new_ids = {r.pk for r in new}
    return render(
        request,
        "taxes/feed_detail.html",
        {
            "feed_date": feed_date,
            "rows": rows,
            "total": sum((r.amount for r in rows), 0),
            "last": last,
            "new_ids": new_ids,
            "new_total": sum((r.amount for r in new), 0),
            "takes": FeedTake.objects.filter(feed_date=feed_date)[:20],
            "can_take": has_cap(request.user, Cap.TAX_FILES),
        },
    )


@capability_required(Cap.TAX_FILES)
def feed_download(request, day: str):
    feed_date = _date(day)
    _, rows = feed_take(feed_date=feed_date, actor=request.user, now=timezone.now(), via="csv")
    return _csv(feed_csv(rows=rows), f"fica-feed-{feed_date.isoformat()}.csv")


def _date(text: str) -> dt.date:
    day = date_or_none(text)
    if day is None:
        raise Http404("not a date")
    return day


@capability_required(Cap.VIEW_STAFF)
def year_end(request, year: int):
    figures = selectors.year_figures(year=year)
    people = Person.objects.in_bulk(list(figures))
    rows = sorted(
        ((people[pid], fig) for pid, fig in figures.items()), key=lambda item: item[0].employee_number
    )
    lines = selectors.form_1099_lines(year=year)
    return render(
        request,
        "taxes/year_end.html",
        {
            "year": year,
            "rows": rows,
            "lines": lines,
            "reconciliation": selectors.reconciliation(year=year),
            "takes": YearEndTake.objects.filter(year=year)[:20],
            "can_take": has_cap(request.user, Cap.TAX_FILES),
            "can_see_ids": has_cap(request.user, Cap.VIEW_TAX_IDS),
        },
    )


@capability_required(Cap.TAX_FILES)
def year_end_file(request, year: int, file: str):
    if file not in YEAR_END_FILES:
        raise Http404("no such file")
    if file == "1099" and not has_cap(request.user, Cap.VIEW_TAX_IDS):
        return render(
            request, "core/refused.html", {"message": "The 1099-MISC file needs view_tax_ids."}, status=403
        )
    text = year_end_take(year=year, file=file, actor=request.user, now=timezone.now())
    return _csv(text, f"{file}-{year}.csv")


@capability_required(Cap.VIEW_TAX_IDS)
def beneficiary_tax_info(request, pk: int):
    beneficiary = get_object_or_404(Beneficiary.objects.select_related("designation__person"), pk=pk)
    info = getattr(beneficiary, "tax_info", None)
    error = ""
    if request.method == "POST":
        try:
            beneficiary_tax_info_record(
                beneficiary=beneficiary,
                taxpayer_number=request.POST.get("taxpayer_number", ""),
                address_line1=request.POST.get("address_line1", ""),
                address_line2=request.POST.get("address_line2", ""),
                city=request.POST.get("city", ""),
                state=request.POST.get("state", ""),
                postal_code=request.POST.get("postal_code", ""),
                email=request.POST.get("email", ""),
                actor=request.user,
                now=timezone.now(),
            )
        except ParticipantError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Form 1099-MISC information recorded for {beneficiary.name}.")
            return redirect("taxes_staff:beneficiary_tax_info", pk=pk)
    return render(
        request,
        "taxes/beneficiary_tax_info.html",
        {"beneficiary": beneficiary, "info": info, "error": error, "data": request.POST},
        status=400 if error else 200,
    )


beneficiary_tax_info.access_model = Beneficiary  # tests/test_access.py's walk


@participant_required
def portal_tax(request):
    person = request.user.person
    return render(request, "taxes/portal_tax.html", {"years": selectors.person_years(person=person)})
