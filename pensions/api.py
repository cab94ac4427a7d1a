"""API of the defined benefit plan: Domestic Relations Orders against a Supplemental Benefit (BRP 6.7).

Staff read with Cap.VIEW_STAFF and record with Cap.RECORD_EVENTS (deny by default, core.permissions). The Pension
Plan figures come in through the import endpoint (/api/pensions/imports/pension-figures/).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.permissions import HasCapability
from core.roles import Cap
from participants.models import Participation
from pensions.models import BenefitOrder
from pensions.services.orders import BenefitOrderError, benefit_order_record
from plans.models import Plan


class BenefitOrderIn(serializers.Serializer):
    participation = serializers.IntegerField()
    alternate_payee = serializers.CharField(max_length=200)
    received_on = serializers.DateField()
    percent = serializers.DecimalField(max_digits=5, decimal_places=2, required=False, allow_null=True)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, required=False, allow_null=True)
    lump_sum = serializers.BooleanField(required=False, default=False)

    def validate_received_on(self, value):
        if value > timezone.localdate():
            raise serializers.ValidationError("an order cannot be received in the future")
        return value


class BenefitOrderOut(serializers.Serializer):
    id = serializers.IntegerField()
    participation = serializers.IntegerField(source="participation_id")
    employee_number = serializers.CharField(source="participation.person.employee_number")
    alternate_payee = serializers.CharField()
    received_on = serializers.DateField()
    percent = serializers.DecimalField(max_digits=5, decimal_places=2, allow_null=True)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
    lump_sum = serializers.BooleanField()
    share = serializers.CharField(source="share_label")
    cite = serializers.CharField()


def _orders():
    return BenefitOrder.objects.select_related("participation__person").order_by("-received_on", "-id")


class StaffBenefitOrders(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.RECORD_EVENTS

    @extend_schema(responses=BenefitOrderOut(many=True))
    def get(self, request):
        return Response(BenefitOrderOut(_orders()[:500], many=True).data)

    @extend_schema(request=BenefitOrderIn, responses={201: BenefitOrderOut, 422: None})
    def post(self, request):
        s = BenefitOrderIn(data=request.data)
        s.is_valid(raise_exception=True)
        d = dict(s.validated_data)
        participation = get_object_or_404(
            Participation.objects.filter(plan__kind=Plan.Kind.DEFINED_BENEFIT).select_related(
                "plan", "person"
            ),
            pk=d.pop("participation"),
        )
        try:
            order = benefit_order_record(
                participation=participation, actor=request.user, now=timezone.now(), **d
            )
        except BenefitOrderError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        return Response(BenefitOrderOut(order).data, status=status.HTTP_201_CREATED)


class StaffBenefitOrder(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    access_model = BenefitOrder

    @extend_schema(responses=BenefitOrderOut)
    def get(self, request, pk: int):
        return Response(BenefitOrderOut(get_object_or_404(_orders(), pk=pk)).data)
