"""Staff pages of the paper notices' print queue: one merged PDF per day (an address page before each
document), downloaded and then marked printed and mailed."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core import notices
from core.decorators import capability_required
from core.inputs import date_or_none
from core.roles import Cap


def _day(value: str) -> dt.date:
    day = date_or_none(value)
    if day is None:
        raise Http404("not a date")
    if not 1900 <= day.year <= 2199:
        raise Http404("date out of range")
    return day


@capability_required(Cap.PRINT_NOTICES)
def print_queue(request):
    days = notices.print_days()
    chosen = request.GET.get("day")
    day = _day(chosen) if chosen else (days[0]["queued_on"] if days else None)
    return render(
        request,
        "core/print_queue.html",
        {"days": days, "day": day, "items": list(notices.print_queue(day=day)) if day else []},
    )


@capability_required(Cap.PRINT_NOTICES)
def print_batch(request, day: str):
    when = _day(day)
    try:
        data = notices.print_batch_pdf(day=when)
    except notices.NoticeError as exc:
        raise Http404(str(exc)) from None
    response = HttpResponse(data, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="print-queue-{when.isoformat()}.pdf"'
    return response


@require_POST
@capability_required(Cap.PRINT_NOTICES)
def print_batch_printed(request, day: str):
    when = _day(day)
    try:
        count = notices.print_batch_mark_printed(day=when, actor=request.user, as_of=timezone.now())
    except notices.NoticeError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Marked {count} notice{'s' if count != 1 else ''} of {when:%B %d, %Y} printed."
        )
    return redirect(f"{reverse('core:print_queue')}?day={when.isoformat()}")
