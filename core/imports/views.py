"""Staff pages of imports: upload a file (Cap.IMPORT_DATA); read a batch and its refusal table (Cap.VIEW_STAFF)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from core.decorators import capability_required
from core.imports.runner import IMPORTERS, import_file, importer_for, sample_csv
from core.models import ImportBatch
from core.roles import Cap


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, ImportBatch.Kind(k).label) for k in IMPORTERS])
    file = forms.FileField(help_text="A CSV file (UTF-8) whose first line names the columns")


def _kinds() -> list[dict]:
    out = []
    for kind in IMPORTERS:
        importer = importer_for(kind)
        out.append(
            {
                "kind": kind,
                "label": ImportBatch.Kind(kind).label,
                "help": importer.help,
                "required": importer.required,
                "optional": importer.optional,
            }
        )
    return out


@capability_required(Cap.IMPORT_DATA)
def imports(request):
    form = UploadForm(request.POST or None, request.FILES or None, initial={"kind": request.GET.get("kind")})
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        batch = import_file(
            kind=form.cleaned_data["kind"],
            file_name=upload.name,
            content=upload.read(settings.IMPORT_MAX_BYTES + 1),  # a larger file is refused unread
            actor=request.user,
            now=timezone.now(),
        )
        return redirect("core:import_detail", pk=batch.pk)
    status = request.GET.get("status", "")
    batches = ImportBatch.objects.defer("errors")
    if status in ImportBatch.Status.values:  # the work queue links the refused files
        batches = batches.filter(status=status)
    return render(
        request,
        "core/imports.html",
        {"form": form, "kinds": _kinds(), "batches": batches[:50], "status": status},
    )


@capability_required(Cap.VIEW_STAFF)
def import_samples(request):
    """Every import kind with its columns and a sample file to download."""
    return render(request, "core/import_samples.html", {"kinds": _kinds()})


@capability_required(Cap.VIEW_STAFF)
def import_sample(request, kind: str):
    """A sample CSV of one import kind: every column the importer reads, and example lines."""
    if kind not in IMPORTERS:
        raise Http404("no such import")
    response = HttpResponse(sample_csv(importer_for(kind)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="sample-{kind}.csv"'
    return response


@capability_required(Cap.VIEW_STAFF)
def import_detail(request, pk: int):
    batch = get_object_or_404(ImportBatch, pk=pk)
    return render(request, "core/imports_detail.html", {"batch": batch})


import_detail.access_model = ImportBatch
