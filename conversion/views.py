"""Staff pages of a conversion (issue 14). Thin: every check and write is conversion.staff's, which runs the
same services as `manage.py convert`."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from conversion import staff
from conversion.models import ConversionRun
from core.decorators import capability_required
from core.roles import Cap, has_cap
from core.signin.decorators import fresh_second_factor_required


@capability_required(Cap.VIEW_STAFF)
def runs(request):
    """Every conversion run (dry runs, applies, refusals) and, for importers, the upload of a package."""
    page = Paginator(ConversionRun.objects.select_related("uploaded_by", "applied_by"), 25).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "conversion/staff_runs.html",
        {"page": page, "can_upload": has_cap(request.user, Cap.IMPORT_DATA)},
    )


@require_POST
@capability_required(Cap.IMPORT_DATA)
def upload(request):
    uploads = [staff.Upload(name=f.name, file=f) for f in request.FILES.getlist("package")]
    try:
        key = staff.conversion_upload(uploads=uploads, actor=request.user, now=timezone.now())
    except staff.ConversionRefused as exc:
        messages.error(request, exc.message)
        return redirect("conversion_staff:runs")
    messages.success(request, "The package is stored and its dry run queued. Nothing is written yet.")
    return redirect("conversion_staff:job", key=key)


@capability_required(Cap.VIEW_STAFF)
def job(request, key: str):
    """A conversion job's progress; once it is done, the run it wrote."""
    try:
        state = staff.conversion_job_state(key=key, now=timezone.now())
    except staff.ConversionRefused as exc:
        raise Http404(exc.message) from exc
    if state.run is not None and state.conversion_run_id is not None:
        messages.info(request, f"{state.title}: {state.run.message}.")
        return redirect("conversion_staff:run", pk=state.conversion_run_id)
    return render(request, "conversion/staff_job.html", {"state": state})


@capability_required(Cap.VIEW_STAFF)
def run_detail(request, pk: int):
    """The dry-run report: what would be written, the control totals side by side, every exception (paged)."""
    run = get_object_or_404(ConversionRun.objects.select_related("uploaded_by", "applied_by"), pk=pk)
    lines = staff.control_lines(run=run)
    code = request.GET.get("code", "")
    exceptions = run.exceptions.all()
    if code:
        exceptions = exceptions.filter(code=code)
    return render(
        request,
        "conversion/staff_run.html",
        {
            "run": run,
            "rows": staff.written_by_kind(lines=lines),
            "by_plan": staff.value_by_plan(lines=lines),
            "differences": [ln for ln in lines if not ln.matches],
            "codes": run.exceptions.values("code").annotate(n=Count("id")).order_by("code"),
            "code": code,
            "page": Paginator(exceptions, 100).get_page(request.GET.get("page")),
            "refusal": staff.apply_refusal(run=run, actor=request.user),
            "apply_job": staff.apply_job_of(run=run, now=timezone.now()),
            "due": staff.due_payments(run=run),
        },
    )


run_detail.access_model = ConversionRun  # tests/test_access.py: the URL's pk is a conversion run


@capability_required(Cap.VIEW_STAFF)  # the same capability as the report it comes from
def run_exceptions_csv(request, pk: int):
    """Every exception of the run as CSV (file, line, code, message), streamed; `?code=` keeps one code."""
    run = get_object_or_404(ConversionRun, pk=pk)
    response = StreamingHttpResponse(
        staff.exception_csv_lines(run=run, code=request.GET.get("code", "")), content_type="text/csv"
    )
    response["Content-Disposition"] = f'attachment; filename="conversion-{run.pk}-exceptions.csv"'
    return response


run_exceptions_csv.access_model = ConversionRun


@require_http_methods(["GET", "POST"])
@capability_required(Cap.APPROVE_PAYMENTS)
@fresh_second_factor_required
def run_apply(request, pk: int):
    """GET: the summary to apply (counts, control); POST: apply the package, by a second person."""
    run = get_object_or_404(ConversionRun.objects.select_related("uploaded_by"), pk=pk)
    refusal = staff.apply_refusal(run=run, actor=request.user)
    if request.method == "GET":
        lines = staff.control_lines(run=run)
        return render(
            request,
            "conversion/staff_run_apply.html",
            {
                "run": run,
                "refusal": refusal,
                "reviewed": staff.run_reviewed(run=run),
                "rows": staff.written_by_kind(lines=lines),
                "by_plan": staff.value_by_plan(lines=lines),
            },
        )
    if not refusal and request.POST.get("reviewed") != staff.run_reviewed(run=run):
        messages.error(
            request, f"Review conversion run {run.pk}'s summary before applying it (it is shown here)."
        )
        return redirect("conversion_staff:run_apply", pk=pk)
    try:
        key = staff.conversion_apply_queue(run=run, actor=request.user, now=timezone.now())
    except staff.ConversionRefused as exc:
        messages.error(request, exc.message)
        return render(
            request, "conversion/staff_run_apply.html", {"run": run, "refusal": exc.message}, status=403
        )
    messages.success(request, f"The apply of conversion run {run.pk} is queued.")
    return redirect("conversion_staff:job", key=key)


run_apply.access_model = ConversionRun


@require_POST
@capability_required(Cap.ISSUE_DOCUMENTS)  # writes a stored document: not the auditor
def run_reconciliation(request, pk: int):
    """The reconciliation report as a PDF a Committee signs (stored as a document, then downloaded)."""
    run = get_object_or_404(ConversionRun.objects.select_related("uploaded_by", "applied_by"), pk=pk)
    doc = staff.conversion_reconciliation_pdf(run=run, actor=request.user, now=timezone.now())
    return redirect("document_download", pk=doc.pk)


run_reconciliation.access_model = ConversionRun
