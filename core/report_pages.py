"""A staff report page that shows the figures of its report job (core.report_files, issue 15).

A report whose work grows with the population is never computed in the request: the page shows the figures the
job kept for the asked parameters (`Rows.summary`), says when they were computed, and links the CSV the same run
wrote. Until then it offers to compute them (the report's "prepare" job, the same capability), then shows the
job's progress and reloads itself when it is done (static/js/progress.js).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from core.report_files import ReportState, report_file_state

QUEUED = "queued"  # the page's parameter after the compute button: the job is queued, show its progress


def report_page(request, *, name: str, params: Sequence[tuple[str, str]], now: dt.datetime) -> dict:
    """The template context of a report page (core/_report_state.html): the run's state for the parameters,
    the compute form, and whether the job was just queued (no run recorded yet: a worker has not claimed it)."""
    state = report_file_state(name=name, args=[value for _, value in params], now=now)
    back = f"{request.path}?{urlencode([*params, (QUEUED, '1')])}"
    just_queued = state.run is None and request.GET.get(QUEUED) == "1"
    return {
        "report_state": state,
        "report_status": "running" if just_queued else state.status,
        "report_prepare": {"name": name, "params": list(params), "next": back},
        "report_progress_url": reverse("core:job_key_progress", args=["report", state.key]),
    }


def report_csv(state: ReportState, *, page: str) -> HttpResponse:
    """The page's CSV link: the file the done run wrote (the same answer as the page's figures), else the page,
    which offers to compute it. Never the report computed in the request."""
    if state.document is not None:
        return redirect("document_download", pk=state.document.pk)
    return redirect(page)
