"""API of the plan catalog: staff reads, and the fund price import."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.generics import get_object_or_404
from rest_framework.views import APIView

from core.api import date_param
from core.imports.api import ImportBatchesView, ImportBatchView
from core.models import ImportBatch
from core.permissions import HasCapability
from core.roles import Cap
from plans.models import Fund, FundPrice, Plan, PlanVersion
from plans.serializers import FundPriceSerializer, FundSerializer, PlanSerializer


class StaffRead(APIView):
    """Staff reads: the VIEW_STAFF capability (deny by default)."""

    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF


def _plans():
    return Plan.objects.prefetch_related(
        Prefetch(
            "versions", queryset=PlanVersion.objects.order_by("effective_date").prefetch_related("provisions")
        )
    )


class PlanList(StaffRead, generics.ListAPIView):
    """Every plan with its versions and each version's provisions and citations."""

    serializer_class = PlanSerializer
    queryset = Plan.objects.all()

    def get_queryset(self):
        return _plans()


class PlanDetail(StaffRead, generics.RetrieveAPIView):
    serializer_class = PlanSerializer
    queryset = Plan.objects.all()
    lookup_field = "code"

    def get_queryset(self):
        return _plans()


@extend_schema_view(
    get=extend_schema(parameters=[OpenApiParameter("plan", OpenApiTypes.STR, description="Plan code")])
)
class FundList(StaffRead, generics.ListAPIView):
    serializer_class = FundSerializer
    queryset = Fund.objects.all()

    def get_queryset(self):
        funds = Fund.objects.select_related("plan").order_by("plan__code", "code")
        plan = self.request.query_params.get("plan")
        return funds.filter(plan__code=plan) if plan else funds


@extend_schema_view(
    get=extend_schema(
        parameters=[OpenApiParameter("start", OpenApiTypes.DATE), OpenApiParameter("end", OpenApiTypes.DATE)]
    )
)
class FundPriceList(StaffRead, generics.ListAPIView):
    """The prices of one fund, oldest first."""

    serializer_class = FundPriceSerializer
    queryset = FundPrice.objects.all()
    access_model = Fund

    def get_queryset(self):
        fund = get_object_or_404(Fund, pk=self.kwargs["pk"])
        prices = FundPrice.objects.filter(fund=fund).order_by("date")
        start, end = date_param(self.request, "start"), date_param(self.request, "end")
        if start:
            prices = prices.filter(date__gte=start)
        if end:
            prices = prices.filter(date__lte=end)
        return prices


PriceImports = ImportBatchesView.for_kind(ImportBatch.Kind.PRICES)
PriceImport = ImportBatchView.for_kind(ImportBatch.Kind.PRICES)
