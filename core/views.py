"""Home, the staff dashboard and job runs. Thin views: reads through selectors, writes through services."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core.audit_links import audit_actions, events_about_person, object_url, person_by_number
from core.decorators import capability_required
from core.errors import ApplicationError
from core.inputs import date_or_none
from core.jobs import job_is_stale, job_retry, job_run_now, job_runs_for_staff, job_runs_marked
from core.lists import staff_list
from core.models import AuditEvent, Document, ImportBatch, JobRun
from core.pdf import document_bytes
from core.report_files import (
    JOB_KIND,
    report_args,
    report_file_document,
    report_file_queue,
    report_file_title,
    report_files,
)
from core.roles import ROLE_CAPABILITIES, Cap, has_cap, is_participant_user, is_staff_user
from core.schedules import job_kinds
from core.templatetags.nav import link_allowed
from core.workqueue import work_queue
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
    queue = [
        # a line whose page this user may not open keeps its count and loses its link (no link to a 403)
        line if link_allowed(request.user, line.url.split("?")[0]) else replace(line, url="")
        for line in work_queue(today=timezone.localdate(now), now=now)
    ]
    return render(
        request,
        "core/dashboard.html",
        {
            "queue": queue,
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
    listing = staff_list(
        request, job_runs_for_staff(now=now, kind=kind), person_path=None, statuses=JobRun.Status.choices
    )
    return render(
        request,
        "core/job_runs.html",
        {
            **listing,
            "runs": job_runs_marked(listing["page"].object_list, now=now, retry_allowed=can_run),
            "kind": kind,
            "keep": [("kind", kind)],
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
            "document": report_file_document(run),
            "title": report_file_title(key=key) if kind == JOB_KIND else None,
        },
    )


@require_POST
@capability_required(Cap.VIEW_STAFF)
def report_file_prepare(request, name: str):
    """Queue the job that prepares a report as a file (with the capability of viewing the report); its page, or
    the report's own page when the form names it (`next`: the page shows the job's progress, then its figures)."""
    report = report_files().get(name)
    if report is None:
        raise Http404("no such report")
    if not has_cap(request.user, report.capability):
        raise PermissionDenied(f"this report needs the {report.capability} capability")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    try:
        key = report_file_queue(
            name=name, args=report_args(report, request.POST), actor=request.user, now=timezone.now()
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect(back or "core:job_runs")
    return redirect(back or reverse("core:job_detail", args=[JOB_KIND, key]))


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


AUDIT_PAGE_SIZE = 50


@capability_required(Cap.VIEW_STAFF)
def audit_log(request):
    """Every audit event, newest first, filtered by actor, action, participant and date range, paged on the
    server; each event links to the staff page of its object."""
    events = AuditEvent.objects.select_related("actor")
    actor = request.GET.get("actor", "").strip()[:200]
    action = request.GET.get("action", "").strip()[:80]
    number = request.GET.get("participant", "").strip()[:40]
    since, until = date_or_none(request.GET.get("from")), date_or_none(request.GET.get("to"))
    person = person_by_number(number) if number else None
    if actor:
        events = events.filter(actor_label__iexact=actor)
    if action:
        events = events.filter(action=action)
    if number:
        events = events_about_person(events, person_pk=person.pk) if person else events.none()
    if since:
        events = events.filter(at__date__gte=since)
    if until:
        events = events.filter(at__date__lte=until)
    page = Paginator(events, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    for event in page.object_list:
        event.url = object_url(event.object_type, event.object_id)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "core/audit_log.html",
        {
            "page": page,
            "actions": audit_actions(),
            "filters": {"actor": actor, "action": action, "participant": number, "from": since, "to": until},
            "person": person,
            "query": query.urlencode(),
        },
    )


def document_download(request, pk: int):
    """A stored document (a PDF, a prepared CSV report): staff see every document; a participant only their own
    (anyone else gets 404), so a document without a person is staff-only."""
    doc = get_object_or_404(Document, pk=pk)
    if not has_cap(request.user, Cap.VIEW_STAFF):
        person = getattr(request.user, "person", None) if is_participant_user(request.user) else None
        if person is None or doc.person_id != person.pk:
            raise Http404("no such document")
    response = HttpResponse(document_bytes(doc), content_type=doc.content_type)
    disposition = "inline" if doc.extension == "pdf" else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{doc.kind}-{doc.pk}.{doc.extension}"'
    response["X-Content-SHA256"] = doc.sha256
    return response


CAPABILITY_WORDS = {
    Cap.VIEW_STAFF: "read the staff pages",
    Cap.IMPORT_DATA: "import participant, price and payroll files",
    Cap.RUN_JOBS: "start and retry batch jobs",
    Cap.MANAGE_PLANS: "manage the plan catalog, funds and windows",
    Cap.MAINTAIN_TABLES: "maintain dated figures, rates and lists",
    Cap.DECLARE_CONTRIBUTIONS: "declare company contributions",
    Cap.RECORD_EVENTS: "record separations, deaths and paper elections",
    Cap.PREPARE_PAYMENTS: "prepare payment runs",
    Cap.APPROVE_PAYMENTS: "approve and release payment runs",
    Cap.APPROVE_EMERGENCY: "decide emergency withdrawals",
    Cap.DECIDE_CLAIMS: "decide claims",
    Cap.DECIDE_APPEALS: "decide appeals",
    Cap.UNLOCK_ACCOUNTS: "lift sign-in lockouts",
    Cap.ISSUE_DOCUMENTS: "issue stored documents",
    Cap.DIRECT_DISTRIBUTIONS: "direct discretionary distributions",
}


def permission_denied(request, exception=None):
    """The 403 page (config.urls handler403): what is missing, who holds it, and the way back."""
    cap = getattr(exception, "capability", None)
    if cap is None:
        cap = next((c for c in Cap if exception is not None and f" {c.value} " in f" {exception} "), None)
    back = request.META.get("HTTP_REFERER", "")
    if not back or not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("home")
    context = {
        "capability": cap,
        "capability_words": CAPABILITY_WORDS.get(cap, "") if cap else "",
        "holders": sorted(role.value for role, caps in ROLE_CAPABILITIES.items() if cap in caps)
        if cap
        else [],
        "reason": str(exception or ""),
        "back": back,
    }
    return render(request, "403.html", context, status=403)
