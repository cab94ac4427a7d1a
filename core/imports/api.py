"""The API of imports: each app's api.py names its kind; GET lists batches (staff), POST uploads a CSV file."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.response import Response

from core.imports.runner import import_file, importer_for
from core.models import ImportBatch
from core.permissions import HasCapability
from core.roles import Cap

_UPLOAD_DOC = (
    "POST takes multipart/form-data with a `file` field, or the CSV itself as a text/csv body (`?name=` "
    "names it). Answers 201 when applied, 200 when the same file was already applied (nothing is applied "
    "again), 400 when refused, listing every bad row with its line number; a refused file applies nothing."
)


class ImportErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="Line of the file (the header is line 1); 0 for the whole file")
    column = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()
    message = serializers.CharField(help_text="The reason in plain English, starting with the line number")


class ImportBatchSerializer(serializers.ModelSerializer):
    errors = ImportErrorSerializer(many=True, read_only=True)  # type: ignore[assignment]  # a declared field: the serializer metaclass moves it to _declared_fields, so it never replaces Serializer.errors

    class Meta:
        model = ImportBatch
        fields = [
            "id",
            "kind",
            "file_name",
            "sha256",
            "status",
            "rows_total",
            "rows_applied",
            "rows_skipped",
            "errors",
            "uploaded_by",
            "uploaded_at",
        ]
        read_only_fields = fields


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The CSV file (UTF-8, a header line naming the columns)")


class CsvBodyParser(BaseParser):
    """A text/csv request body becomes the uploaded `file`."""

    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        name = (request.query_params.get("name") if request is not None else "") or "upload.csv"
        return {
            "file": SimpleUploadedFile(
                name, stream.read(settings.IMPORT_MAX_BYTES + 1) if stream else b"", content_type="text/csv"
            )
        }


class ImportBatchesView(generics.ListAPIView):
    """Imports of one kind: staff read them; those allowed to import data upload a new file."""

    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.IMPORT_DATA
    parser_classes = [MultiPartParser, FormParser, CsvBodyParser]
    serializer_class = ImportBatchSerializer
    queryset = ImportBatch.objects.all()
    kind = ""

    def get_queryset(self):
        return ImportBatch.objects.filter(kind=self.kind)

    @classmethod
    def for_kind(cls, kind: str):
        importer = importer_for(kind)
        label = ImportBatch.Kind(kind).label.lower()
        view = type(
            f"{kind.title().replace('_', '')}ImportsView", (cls,), {"kind": kind, "__doc__": importer.help}
        )
        return extend_schema_view(
            get=extend_schema(summary=f"List {label} imports", operation_id=f"{kind}_imports_list"),
            post=extend_schema(
                summary=f"Upload a {label} file",
                description=f"{importer.help}\n\n{_UPLOAD_DOC}",
                operation_id=f"{kind}_imports_create",
                request={
                    "multipart/form-data": ImportUploadSerializer,
                    "text/csv": {"type": "string", "format": "binary"},
                },
                responses={
                    201: ImportBatchSerializer,
                    200: OpenApiResponse(
                        ImportBatchSerializer, description="Already applied: nothing applied again"
                    ),
                    400: OpenApiResponse(
                        ImportBatchSerializer, description="Refused: every bad row with its line"
                    ),
                },
            ),
        )(view)

    def post(self, request, *args, **kwargs):
        upload = ImportUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        file = upload.validated_data["file"]
        batch = import_file(
            kind=self.kind,
            file_name=file.name,
            content=file.read(settings.IMPORT_MAX_BYTES + 1),
            actor=request.user,
            now=timezone.now(),
        )
        code = {
            ImportBatch.Status.APPLIED: status.HTTP_201_CREATED,
            ImportBatch.Status.DUPLICATE: status.HTTP_200_OK,
            ImportBatch.Status.REFUSED: status.HTTP_400_BAD_REQUEST,
        }[batch.status]
        return Response(ImportBatchSerializer(batch).data, status=code)


class ImportBatchView(generics.RetrieveAPIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    serializer_class = ImportBatchSerializer
    queryset = ImportBatch.objects.all()
    kind = ""

    def get_queryset(self):
        return ImportBatch.objects.filter(kind=self.kind)

    @classmethod
    def for_kind(cls, kind: str):
        view = type(f"{kind.title().replace('_', '')}ImportView", (cls,), {"kind": kind})
        return extend_schema_view(
            get=extend_schema(
                operation_id=f"{kind}_imports_retrieve",
                summary=f"One {ImportBatch.Kind(kind).label.lower()} import",
            )
        )(view)


def import_urls(kind: str, prefix: str) -> list:
    """The two endpoints of one kind: <prefix>/ (list, upload) and <prefix>/<pk>/ (one batch)."""
    return [
        path(f"{prefix}/", ImportBatchesView.for_kind(kind).as_view(), name=f"{kind}_imports"),
        path(f"{prefix}/<int:pk>/", ImportBatchView.for_kind(kind).as_view(), name=f"{kind}_import"),
    ]
