"""The payments API (DRF): unforeseeable emergencies (EDCP 5.5) and domestic relations orders (EDCP 5.9,
RRP 2017 4.01(c)).

Staff read everything (view_staff), record requests and orders (record_events) and the Committee
decides requests (approve_emergency). Participants file and read their own requests (IsParticipant,
every query filtered on request.user.person: someone else's request answers 404). Writes go through
the same services as the pages and the simulator; a refusal answers 422 with the plan section.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import ApplicationError
from core.fields import ApiDateField
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap
from core.signin.decorators import FreshSecondFactor
from participants.models import Participation
from payments import selectors
from payments.models import DomesticRelationsOrder, EmergencyWithdrawal
from payments.services.withdrawals import (
    WithdrawalError,
    dro_record,
    emergency_approve,
    emergency_deny,
    emergency_request_record,
)


def _money(value) -> str | None:
    return None if value is None else f"{value:.2f}"


def payment_json(p) -> dict:
    return {
        "id": p.pk,
        "account": p.account.name,
        "payment_date": p.payment_date.isoformat(),
        "release_date": p.release_date.isoformat(),
        "amount": _money(p.amount),
        "status": p.status,
        "paid_on": p.paid_on.isoformat() if p.paid_on else None,
        "payee": p.payee_name or None,
        "cite": p.cite,
    }


def emergency_json(e: EmergencyWithdrawal, *, staff: bool) -> dict:
    out = {
        "id": e.pk,
        "plan": e.participation.plan.code,
        "requested_amount": _money(e.requested_amount),
        "requested_on": e.requested_on.isoformat(),
        "need": e.need,
        "documents": e.documents,
        "status": e.status,
        "approved_amount": _money(e.approved_amount),
        "decided_on": e.decided_on.isoformat() if e.decided_on else None,
        "reason": e.reason,
        "cite": e.cite,
        "deferrals_cancelled": e.deferrals_cancelled,
        "payments": [payment_json(p) for p in selectors.emergency_payments(emergency=e)],
    }
    if e.cancellation is not None:
        out["deferrals_cancelled_through"] = e.cancellation.ends_on.isoformat()
    if staff:
        out.update(
            participation=e.participation_id,
            employee_number=e.participation.person.employee_number,
            channel=e.channel,
            recorded_by=e.recorded_by,
            decided_by=e.decided_by,
        )
    return out


def order_json(o: DomesticRelationsOrder) -> dict:
    return {
        "id": o.pk,
        "participation": o.participation_id,
        "employee_number": o.participation.person.employee_number,
        "plan": o.participation.plan.code,
        "alternate_payee": o.alternate_payee,
        "order_date": o.order_date.isoformat(),
        "percent": o.percent,
        "amount": _money(o.amount),
        "account": o.account_name or None,
        "total": _money(o.total),
        "cite": o.cite,
        "payments": [payment_json(p) for p in selectors.order_payments(order=o)],
    }


def _refused(exc: Exception) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)


def _valid(serializer_class, data) -> dict:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    return s.validated_data


class EmergencyOut(serializers.Serializer):
    id = serializers.IntegerField()
    plan = serializers.CharField()
    requested_amount = serializers.CharField()
    status = serializers.CharField()
    approved_amount = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    cite = serializers.CharField()


class OrderOut(serializers.Serializer):
    id = serializers.IntegerField()
    plan = serializers.CharField()
    alternate_payee = serializers.CharField()
    order_date = ApiDateField()
    total = serializers.CharField()
    cite = serializers.CharField()


class RequestIn(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0)
    need = serializers.CharField(max_length=4000)
    documents = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class StaffRequestIn(RequestIn):
    participation = serializers.IntegerField()
    requested_on = ApiDateField()


class MyRequestIn(RequestIn):
    plan = serializers.CharField(help_text="The plan's code")


class DecisionIn(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "deny"])
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, required=False)
    decided_on = ApiDateField()
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    cancel_deferrals = serializers.BooleanField(required=False, default=False)

    def validate_decided_on(self, value):
        if value > timezone.localdate():
            raise serializers.ValidationError("a decision cannot be dated in the future")
        return value

    def validate(self, data):
        if data["decision"] == "approve" and data.get("amount") is None:
            raise serializers.ValidationError({"amount": "give the amount the Committee approves"})
        return data


class OrderIn(serializers.Serializer):
    participation = serializers.IntegerField()
    alternate_payee = serializers.CharField(max_length=200)
    order_date = ApiDateField()
    percent = serializers.IntegerField(required=False, allow_null=True)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, required=False, allow_null=True)
    account = serializers.CharField(max_length=40, required=False, allow_blank=True, default="")

    def validate_order_date(self, value):
        if value > timezone.localdate():
            raise serializers.ValidationError("an order cannot be dated in the future")
        return value


# --- staff ---------------------------------------------------------------------------------------------


class StaffEmergencies(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.RECORD_EVENTS

    @extend_schema(responses=EmergencyOut(many=True))
    def get(self, request):
        wanted = request.query_params.get("status", "")
        rows = selectors.emergencies(status=wanted if wanted in EmergencyWithdrawal.Status.values else "")[
            :500
        ]
        return Response([emergency_json(e, staff=True) for e in rows])

    @extend_schema(request=StaffRequestIn, responses={201: EmergencyOut})
    def post(self, request):
        d = _valid(StaffRequestIn, request.data)
        participation = get_object_or_404(
            Participation.objects.select_related("plan", "person"), pk=d["participation"]
        )
        try:
            e = emergency_request_record(
                participation=participation,
                amount=d["amount"],
                requested_on=d["requested_on"],
                need=d["need"],
                documents=d["documents"],
                channel="api",
                actor=request.user,
                now=timezone.now(),
            )
        except WithdrawalError as exc:
            return _refused(exc)
        return Response(emergency_json(e, staff=True), status=status.HTTP_201_CREATED)


class StaffEmergency(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    access_model = EmergencyWithdrawal

    @extend_schema(responses=EmergencyOut)
    def get(self, request, pk: int):
        return Response(emergency_json(get_object_or_404(selectors.emergencies(), pk=pk), staff=True))


class StaffEmergencyDecision(APIView):
    """The Committee approves an amount or denies with reasons; either may cancel deferrals (EDCP 3.7)."""

    permission_classes = [HasCapability, FreshSecondFactor]
    required_capability = Cap.APPROVE_EMERGENCY
    write_capability = Cap.APPROVE_EMERGENCY
    access_model = EmergencyWithdrawal

    @extend_schema(request=DecisionIn, responses={200: EmergencyOut, 422: None})
    def post(self, request, pk: int):
        emergency = get_object_or_404(EmergencyWithdrawal, pk=pk)
        d = _valid(DecisionIn, request.data)
        try:
            if d["decision"] == "approve":
                emergency_approve(
                    emergency=emergency,
                    amount=d["amount"],
                    approved_on=d["decided_on"],
                    reason=d["reason"],
                    cancel_deferrals=d["cancel_deferrals"],
                    actor=request.user,
                    now=timezone.now(),
                )
            else:
                emergency_deny(
                    emergency=emergency,
                    decided_on=d["decided_on"],
                    reason=d["reason"],
                    cancel_deferrals=d["cancel_deferrals"],
                    actor=request.user,
                    now=timezone.now(),
                )
        except WithdrawalError as exc:
            return _refused(exc)
        return Response(emergency_json(get_object_or_404(selectors.emergencies(), pk=pk), staff=True))


class StaffOrders(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.RECORD_EVENTS

    @extend_schema(responses=OrderOut(many=True))
    def get(self, request):
        return Response([order_json(o) for o in selectors.orders()[:500]])

    @extend_schema(request=OrderIn, responses={201: OrderOut, 422: None})
    def post(self, request):
        d = _valid(OrderIn, request.data)
        participation = get_object_or_404(
            Participation.objects.select_related("plan", "person"), pk=d["participation"]
        )
        try:
            order = dro_record(
                participation=participation,
                alternate_payee=d["alternate_payee"],
                order_date=d["order_date"],
                percent=d.get("percent"),
                amount=d.get("amount"),
                account_name=d["account"].strip(),
                actor=request.user,
                now=timezone.now(),
            )
        except ApplicationError as exc:
            return _refused(exc)
        return Response(order_json(order), status=status.HTTP_201_CREATED)


class StaffOrder(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    access_model = DomesticRelationsOrder

    @extend_schema(responses=OrderOut)
    def get(self, request, pk: int):
        return Response(order_json(get_object_or_404(selectors.orders(), pk=pk)))


# --- participants ------------------------------------------------------------------------------------------


class MyEmergencies(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(responses=EmergencyOut(many=True))
    def get(self, request):
        return Response(
            [emergency_json(e, staff=False) for e in selectors.person_emergencies(person=request.user.person)]
        )

    @extend_schema(request=MyRequestIn, responses={201: EmergencyOut, 422: None})
    def post(self, request):
        d = _valid(MyRequestIn, request.data)
        today = timezone.localdate()
        found = [
            p
            for p in selectors.emergency_participations(person=request.user.person, on=today)
            if p.plan.code == d["plan"]
        ]
        if not found:
            raise NotFound("you take no part in a plan that pays unforeseeable emergencies under that code")
        try:
            e = emergency_request_record(
                participation=found[0],
                amount=d["amount"],
                requested_on=today,
                need=d["need"],
                documents=d["documents"],
                channel="api",
                actor=request.user,
                now=timezone.now(),
            )
        except WithdrawalError as exc:
            return _refused(exc)
        return Response(emergency_json(e, staff=False), status=status.HTTP_201_CREATED)


class MyEmergency(APIView):
    permission_classes = [IsParticipant]
    access_model = EmergencyWithdrawal

    @extend_schema(responses=EmergencyOut)
    def get(self, request, pk: int):
        return Response(
            emergency_json(
                get_object_or_404(selectors.person_emergencies(person=request.user.person), pk=pk),
                staff=False,
            )
        )
