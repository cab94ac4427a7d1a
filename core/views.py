"""Home, the staff dashboard and job runs. Thin views: reads through selectors, writes through services."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.decorators import capability_required
from core.models import AuditEvent, ImportBatch, JobRun
from core.roles import Cap, is_participant_user, is_staff_user


def home(request):
    if is_staff_user(request.user):
        return redirect("core:dashboard")
    if is_participant_user(request.user):
        return redirect("portal_home")
    return render(request, "core/no_role.html", status=403)


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


def portal_home(request):
    """The participant's landing page lives with the books (balances); this name is its stable entry."""
    from books.views import portal_overview

    return portal_overview(request)


@capability_required(Cap.VIEW_STAFF)
def dashboard(request):
    from plans.models import Plan

    return render(
        request,
        "core/dashboard.html",
        {
            "plans": Plan.objects.prefetch_related("versions").all(),
            "runs": JobRun.objects.all()[:10],
            "imports": ImportBatch.objects.all()[:10],
            "events": AuditEvent.objects.all()[:10],
        },
    )


@capability_required(Cap.VIEW_STAFF)
def job_runs(request):
    kind = request.GET.get("kind", "")
    runs = JobRun.objects.all()
    if kind:
        runs = runs.filter(kind=kind)
    return render(
        request,
        "core/job_runs.html",
        {"runs": runs[:200], "kind": kind, "kinds": JobRun.objects.values_list("kind", flat=True).distinct()},
    )


@capability_required(Cap.VIEW_STAFF)
def job_progress_fragment(request, pk: int):
    run = get_object_or_404(JobRun, pk=pk)
    return JsonResponse(
        {
            "status": run.status,
            "percent": run.percent,
            "message": run.message,
            "done": run.progress_done,
            "total": run.progress_total,
        }
    )


@capability_required(Cap.VIEW_STAFF)
def audit_log(request):
    return render(
        request, "core/audit_log.html", {"events": AuditEvent.objects.select_related("actor")[:500]}
    )


def document_download(request, pk: int):
    """A stored PDF: staff see every document; a participant only their own (anyone else gets 404)."""
    from django.http import Http404

    from core.models import Document
    from core.pdf import document_bytes
    from core.roles import has_cap

    doc = get_object_or_404(Document, pk=pk)
    if not has_cap(request.user, Cap.VIEW_STAFF):
        person = getattr(request.user, "person", None) if is_participant_user(request.user) else None
        if person is None or doc.person_id != person.pk:
            raise Http404("no such document")
    response = HttpResponse(document_bytes(doc), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{doc.kind}-{doc.pk}.pdf"'
    response["X-Content-SHA256"] = doc.sha256
    return response
