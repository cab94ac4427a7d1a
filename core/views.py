"""Home, the staff dashboard and job runs. Thin views: reads through selectors, writes through services."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.decorators import capability_required
from core.errors import ApplicationError
from core.inputs import date_or_none
from core.jobs import job_is_stale, job_retry, job_run_now, job_runs_for_staff, job_runs_marked
from core.models import AuditEvent, Document, ImportBatch, JobRun
from core.pdf import document_bytes
from core.roles import Cap, has_cap, is_participant_user, is_staff_user
from core.schedules import job_kinds
from plans.models import Plan


def home(request):
    if is_staff_user(request.user):
        return redirect("core:dashboard")
    if is_participant_user(request.user):
        return redirect("portal_home")
    return render(request, "core/no_role.html", status=403)


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


@capability_required(Cap.VIEW_STAFF)
def dashboard(request):
    now = timezone.now()
    can_run = has_cap(request.user, Cap.RUN_JOBS)
    return render(
        request,
        "core/dashboard.html",
        {
            "plans": Plan.objects.prefetch_related("versions").all(),
            "runs": job_runs_marked(job_runs_for_staff(now=now)[:10], now=now, retry_allowed=can_run),
            "imports": ImportBatch.objects.defer("errors")[:10],  # a refused file's errors are not read here
            "events": AuditEvent.objects.all()[:10],
            **_run_now_context(can_run, now),
        },
    )


def _run_now_context(can_run: bool, now: dt.datetime) -> dict:
    if not can_run:
        return {"job_kinds": []}
    return {"job_kinds": list(job_kinds().values()), "today": timezone.localdate(now)}


@capability_required(Cap.VIEW_STAFF)
def job_runs(request):
    now = timezone.now()
    kind = request.GET.get("kind", "")
    can_run = has_cap(request.user, Cap.RUN_JOBS)
    return render(
        request,
        "core/job_runs.html",
        {
            "runs": job_runs_marked(
                job_runs_for_staff(now=now, kind=kind)[:200], now=now, retry_allowed=can_run
            ),
            "kind": kind,
            "kinds": JobRun.objects.order_by("kind").values_list("kind", flat=True).distinct(),
            **_run_now_context(can_run, now),
        },
    )


def _progress(run: JobRun | None, now: dt.datetime) -> dict:
    if run is None:
        return {
            "status": "queued",
            "percent": 0,
            "message": "waiting for a worker (a day with nothing to do records no run)",
            "done": 0,
            "total": 0,
        }
    stale = job_is_stale(run, now=now)
    return {
        "status": "stale" if stale else run.status,
        "percent": run.percent,
        "message": run.message,
        "done": run.progress_done,
        "total": run.progress_total,
        "attempts": run.attempts,
    }


@capability_required(Cap.VIEW_STAFF)
def job_progress_fragment(request, pk: int):
    return JsonResponse(_progress(get_object_or_404(JobRun, pk=pk), timezone.now()))


@capability_required(Cap.VIEW_STAFF)
def job_detail(request, kind: str, key: str):
    """One job's run for one key, with its progress bar: where a retry or a run-now lands."""
    now = timezone.now()
    job = job_kinds().get(kind)
    run = JobRun.objects.filter(kind=kind, key=key).first()
    if job is None and run is None:
        raise Http404("no such job")
    runs = job_runs_marked([run] if run else [], now=now, retry_allowed=has_cap(request.user, Cap.RUN_JOBS))
    return render(
        request,
        "core/job_detail.html",
        {
            "job": job,
            "kind": kind,
            "key": key,
            "run": runs[0] if runs else None,
            "progress": _progress(run, now),
        },
    )


@capability_required(Cap.VIEW_STAFF)
def job_key_progress(request, kind: str, key: str):
    return JsonResponse(_progress(JobRun.objects.filter(kind=kind, key=key).first(), timezone.now()))


@require_POST
@capability_required(Cap.RUN_JOBS)
def job_retry_view(request, pk: int):
    run = get_object_or_404(JobRun, pk=pk)
    try:
        job = job_retry(run=run, actor=request.user, now=timezone.now())
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("core:job_runs")
    messages.success(request, f"{job.label} {run.key} queued again.")
    return redirect(reverse("core:job_detail", args=[run.kind, run.key]))


@require_POST
@capability_required(Cap.RUN_JOBS)
def job_run_now_view(request):
    kind = request.POST.get("kind", "")
    day = date_or_none(request.POST.get("day"))
    if day is None:
        messages.error(request, "Give the day to run as YYYY-MM-DD.")
        return redirect("core:job_runs")
    try:
        job = job_run_now(kind=kind, day=day, actor=request.user, now=timezone.now())
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("core:job_runs")
    messages.success(request, f"{job.label} {day} queued.")
    return redirect(reverse("core:job_detail", args=[kind, day.isoformat()]))


@capability_required(Cap.VIEW_STAFF)
def audit_log(request):
    return render(
        request, "core/audit_log.html", {"events": AuditEvent.objects.select_related("actor")[:500]}
    )


def document_download(request, pk: int):
    """A stored PDF: staff see every document; a participant only their own (anyone else gets 404)."""
    doc = get_object_or_404(Document, pk=pk)
    if not has_cap(request.user, Cap.VIEW_STAFF):
        person = getattr(request.user, "person", None) if is_participant_user(request.user) else None
        if person is None or doc.person_id != person.pk:
            raise Http404("no such document")
    response = HttpResponse(document_bytes(doc), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{doc.kind}-{doc.pk}.pdf"'
    response["X-Content-SHA256"] = doc.sha256
    return response
