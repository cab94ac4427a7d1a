"""API of people: staff reads, and the participant and Key Employee imports."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.views import APIView

from core.imports.api import ImportBatchesView, ImportBatchView
from core.models import ImportBatch
from core.permissions import HasCapability
from core.roles import Cap
from participants.models import KeyEmployeeList, Person
from participants.serializers import KeyEmployeeListSerializer, PersonSerializer


class StaffRead(APIView):
    """Staff reads: the VIEW_STAFF capability (deny by default)."""

    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF


def _people():
    return Person.objects.prefetch_related("participations__plan", "employment_events")


@extend_schema_view(
    get=extend_schema(
        parameters=[
            OpenApiParameter(
                "search", OpenApiTypes.STR, description="Employee number, or the start of a last name"
            ),
            OpenApiParameter("plan", OpenApiTypes.STR, description="Only participants of this plan (code)"),
        ]
    )
)
class PersonList(StaffRead, generics.ListAPIView):
    serializer_class = PersonSerializer
    queryset = Person.objects.all()

    def get_queryset(self):
        people = _people()
        search = self.request.query_params.get("search", "").strip()
        if search:
            people = people.filter(Q(employee_number=search) | Q(last_name__istartswith=search))
        plan = self.request.query_params.get("plan", "").strip()
        if plan:
            people = people.filter(participations__plan__code=plan)
        return people


class PersonDetail(StaffRead, generics.RetrieveAPIView):
    serializer_class = PersonSerializer
    queryset = Person.objects.all()

    def get_queryset(self):
        return _people()


class KeyEmployeeListList(StaffRead, generics.ListAPIView):
    serializer_class = KeyEmployeeListSerializer
    queryset = KeyEmployeeList.objects.prefetch_related("members")


ParticipantImports = ImportBatchesView.for_kind(ImportBatch.Kind.PARTICIPANTS)
ParticipantImport = ImportBatchView.for_kind(ImportBatch.Kind.PARTICIPANTS)
KeyEmployeeImports = ImportBatchesView.for_kind(ImportBatch.Kind.KEY_EMPLOYEES)
KeyEmployeeImport = ImportBatchView.for_kind(ImportBatch.Kind.KEY_EMPLOYEES)
