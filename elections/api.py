"""The elections API (DRF). Participants submit and read their own elections (IsParticipant, every query
filtered on request.user.person: someone else's election answers 404); staff read everything
(view_staff) and key paper elections (record_events) or open windows (manage_plans).

Submissions go through the same services as the portal and the simulator: an accepted election
answers 201, a refused one 422 with the section it breaks (it is stored as refused all the same).
"""

from __future__ import annotations

import datetime as dt

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from core.dates import parse_month, year_in_range
from core.errors import InvalidInput
from core.fields import ApiDateField
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap
from elections import selectors as S
from elections import services
from elections.models import Channel, DeferralElection, EnrollmentWindow, Status
from participants.models import Participation
from plans.models import Fund, Plan


def _when(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def election_json(e) -> dict:
    kind = S.kind_of(election=e)
    out = {
        "id": e.pk,
        "kind": kind,
        "plan": e.participation.plan.code,
        "status": e.status,
        "rule": e.rule,
        "message": e.message,
        "submitted_at": _when(e.submitted_at),
        "irrevocable_at": _when(e.irrevocable_at),
        "channel": e.channel,
        "submitted": e.request_data,
    }
    if kind == "deferral":
        out.update(
            plan_year=e.plan_year,
            election_kind=e.kind,
            percentages={line.component: f"{line.percent:.0f}" for line in e.lines.all()},
            accounts={
                (
                    f"{a.account_kind}:{a.specified_month:%Y-%m}" if a.specified_month else a.account_kind
                ): a.percent
                for a in e.allocations.all()
            },
            covers_pay_from=e.covers_pay_from.isoformat() if e.covers_pay_from else None,
        )
    elif kind == "distribution":
        out.update(
            account_kind=e.account_kind,
            form=e.form,
            installments=e.installments,
            lump_sum_percent=e.lump_sum_percent,
            delay_months=e.delay_months,
        )
    elif kind == "schedule_change":
        out.update(
            account_kind=e.account_kind,
            previous_first_payment=e.previous_first_payment.isoformat() if e.previous_first_payment else None,
            new_first_payment=e.new_first_payment.isoformat() if e.new_first_payment else None,
            takes_effect_on=e.takes_effect_on.isoformat() if e.takes_effect_on else None,
        )
    elif kind == "investment":
        out.update(
            applies_to=e.applies_to,
            effective_on=e.effective_on.isoformat() if e.effective_on else None,
            allocation={line.fund.code: line.percent for line in e.lines.all()},
        )
    elif kind == "annuity":
        out.update(
            form=e.form,
            defer_years=e.defer_years,
            is_change=e.is_change,
            takes_effect_on=e.takes_effect_on.isoformat() if e.takes_effect_on else None,
        )
    document = S.confirmation_of(election=e)
    out["confirmation"] = f"/documents/{document.pk}/" if document else None
    return out


def _answer(election) -> Response:
    if election.status == Status.ACCEPTED:
        services.confirmation_queue(election=election)
        return Response(election_json(election), status=status.HTTP_201_CREATED)
    return Response(election_json(election), status=status.HTTP_422_UNPROCESSABLE_ENTITY)


def _year_param(request) -> int:
    """plan_year: a year from 1900 to 2199, else 400 naming it (issue 12: 99999999999 is not a 500)."""
    raw = request.query_params.get("plan_year", "").strip()
    if not raw.isdigit() or not year_in_range(int(raw)):
        raise ValidationError({"plan_year": f"{raw[:20]!r} is not a year from 1900 to 2199"})
    return int(raw)


class ElectionOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    plan = serializers.CharField()
    status = serializers.CharField()
    rule = serializers.CharField()
    message = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    irrevocable_at = serializers.DateTimeField(allow_null=True)


class Percent(serializers.CharField):
    """A percentage as the participant sent it; the validators decide (whole, within limits)."""


class ScheduleIn(serializers.Serializer):
    form = serializers.CharField()
    installments = serializers.IntegerField(required=False, allow_null=True)
    lump_sum_percent = serializers.IntegerField(required=False, allow_null=True)
    delay_months = serializers.IntegerField(required=False, default=0)


class DeferralIn(serializers.Serializer):
    plan = serializers.CharField()
    plan_year = serializers.IntegerField()
    percentages = serializers.DictField(child=Percent())
    accounts = serializers.DictField(child=Percent(), required=False)
    schedules = serializers.DictField(child=ScheduleIn(), required=False)
    performance_period_start = ApiDateField(required=False)
    performance_period_end = ApiDateField(required=False)


class PaperDeferralIn(DeferralIn):
    participation = serializers.IntegerField()
    plan = serializers.CharField(required=False)
    received_at = serializers.DateTimeField()


class DistributionIn(ScheduleIn):
    plan = serializers.CharField()
    account = serializers.CharField()


class InvestmentIn(serializers.Serializer):
    plan = serializers.CharField()
    allocation = serializers.DictField(child=Percent())
    applies_to = serializers.CharField(default="both")


class ScheduleChangeIn(serializers.Serializer):
    plan = serializers.CharField()
    account = serializers.CharField()
    new_month = serializers.CharField(required=False)
    delay_years = serializers.IntegerField(required=False)
    form = serializers.CharField(required=False)
    installments = serializers.IntegerField(required=False)


class AnnuityIn(serializers.Serializer):
    plan = serializers.CharField()
    form = serializers.CharField()
    defer_years = serializers.IntegerField(default=0)


class WindowIn(serializers.Serializer):
    plan = serializers.CharField()
    plan_year = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=[EnrollmentWindow.Kind.ANNUAL, EnrollmentWindow.Kind.PERFORMANCE])
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField()
    performance_period_start = ApiDateField(required=False)
    performance_period_end = ApiDateField(required=False)
    reminder_days = serializers.ListField(child=serializers.IntegerField(min_value=0), required=False)


def _valid(serializer_class, data) -> dict:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    return s.validated_data


def _mine(request, plan_code: str) -> Participation:
    found = (
        Participation.objects.select_related("plan", "person")
        .filter(person=request.user.person, plan__code=plan_code)
        .first()
    )
    if found is None:
        raise NotFound("you take no part in that plan")
    return found


def _period(d: dict):
    if d.get("performance_period_start") and d.get("performance_period_end"):
        return d["performance_period_start"], d["performance_period_end"]
    return None


# --- participant endpoints -------------------------------------------------------------------------------


class MyElections(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(responses=ElectionOut(many=True))
    def get(self, request):
        return Response([election_json(e) for e in S.elections_of(person=request.user.person)])


class MyElection(APIView):
    permission_classes = [IsParticipant]
    access_model = DeferralElection  # tests/test_access.py walks `kind`-keyed URLs with kind "deferral"

    @extend_schema(responses=ElectionOut)
    def get(self, request, kind: str, pk: int):
        model = S.ELECTION_MODELS.get(kind)
        if model is None:
            raise NotFound("no such election")
        return Response(
            election_json(get_object_or_404(model, pk=pk, participation__person=request.user.person))
        )


class MyDeferral(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(request=DeferralIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        d = _valid(DeferralIn, request.data)
        election, _ = services.enrollment_submit(
            participation=_mine(request, d["plan"]),
            plan_year=d["plan_year"],
            percentages=d["percentages"],
            accounts=d.get("accounts") or None,
            schedules=d.get("schedules") or None,
            performance_period=_period(d),
            submitted_at=timezone.now(),
            channel=Channel.API,
            actor=request.user,
        )
        return _answer(election)


class MyDistribution(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(request=DistributionIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        d = _valid(DistributionIn, request.data)
        return _answer(
            services.distribution_election_submit(
                participation=_mine(request, d["plan"]),
                account=d["account"],
                form=d["form"],
                installments=d.get("installments"),
                lump_sum_percent=d.get("lump_sum_percent"),
                delay_months=d.get("delay_months") or 0,
                submitted_at=timezone.now(),
                channel=Channel.API,
                actor=request.user,
            )
        )


class MyInvestment(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(request=InvestmentIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        d = _valid(InvestmentIn, request.data)
        participation = _mine(request, d["plan"])
        funds = {f.code: f.pk for f in Fund.objects.filter(plan=participation.plan)}
        unknown = [code for code in d["allocation"] if code not in funds]
        if unknown:
            raise ValidationError(
                {"allocation": f"not funds of {participation.plan.code}: {', '.join(unknown)}"}
            )
        return _answer(
            services.investment_election_submit(
                participation=participation,
                allocation={funds[c]: pct for c, pct in d["allocation"].items()},
                applies_to=d["applies_to"],
                submitted_at=timezone.now(),
                channel=Channel.API,
                actor=request.user,
            )
        )


class MyScheduleChange(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(request=ScheduleChangeIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        d = _valid(ScheduleChangeIn, request.data)
        try:
            new_month = parse_month(d["new_month"]) if d.get("new_month") else None
        except InvalidInput as exc:
            raise ValidationError({"new_month": exc.message})
        return _answer(
            services.schedule_change_submit(
                participation=_mine(request, d["plan"]),
                account=d["account"],
                new_month=new_month,
                delay_years=d.get("delay_years"),
                form=d.get("form"),
                installments=d.get("installments"),
                submitted_at=timezone.now(),
                channel=Channel.API,
                actor=request.user,
            )
        )


class PreviewOut(serializers.Serializer):
    current_first_payment = ApiDateField(allow_null=True)
    latest_filing = ApiDateField(allow_null=True)
    earliest_allowed = ApiDateField(allow_null=True)
    refused = serializers.CharField(allow_null=True)


class MyScheduleChangePreview(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(responses=PreviewOut)
    def get(self, request):
        participation = _mine(request, request.query_params.get("plan", ""))
        account = request.query_params.get("account", "")
        if account not in {
            s.account for s in S.account_schedules(participation=participation, as_of=timezone.localdate())
        }:
            raise NotFound("no such account")
        p = services.schedule_change_preview(
            participation=participation, account=account, as_of=timezone.localdate()
        )
        refused = (
            p.violation.text
            if p.violation and p.earliest_allowed is None and p.takes_effect_on is None
            else None
        )
        return Response(
            {
                "current_first_payment": p.current_first_payment,
                "latest_filing": p.latest_filing,
                "earliest_allowed": p.earliest_allowed,
                "refused": refused,
                "rule": p.violation.rule if refused else None,
            }
        )


class MyAnnuity(APIView):
    permission_classes = [IsParticipant]

    @extend_schema(request=AnnuityIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        d = _valid(AnnuityIn, request.data)
        return _answer(
            services.annuity_election_submit(
                participation=_mine(request, d["plan"]),
                form=d["form"],
                defer_years=d["defer_years"],
                submitted_at=timezone.now(),
                channel=Channel.API,
                actor=request.user,
            )
        )


# --- staff endpoints ----------------------------------------------------------------------------------------


class StaffDeferrals(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.RECORD_EVENTS

    @extend_schema(responses=ElectionOut(many=True))
    def get(self, request):
        qs = (
            DeferralElection.objects.select_related("participation__plan", "participation__person")
            .prefetch_related("lines", "allocations")
            .order_by("-submitted_at")
        )
        if request.query_params.get("plan"):
            qs = qs.filter(participation__plan__code=request.query_params["plan"])
        if request.query_params.get("plan_year"):
            qs = qs.filter(plan_year=_year_param(request))
        if request.query_params.get("status"):
            qs = qs.filter(status=request.query_params["status"])
        return Response([election_json(e) for e in qs[:1000]])

    @extend_schema(request=PaperDeferralIn, responses={201: ElectionOut, 422: ElectionOut})
    def post(self, request):
        """A paper Compensation Deferral Agreement keyed by staff, as received by the Committee."""
        d = _valid(PaperDeferralIn, request.data)
        if d["received_at"] > timezone.now():
            raise ValidationError({"received_at": "a paper form cannot be received in the future"})
        participation = get_object_or_404(Participation, pk=d["participation"])
        election, _ = services.enrollment_submit(
            participation=participation,
            plan_year=d["plan_year"],
            percentages=d["percentages"],
            accounts=d.get("accounts") or None,
            schedules=d.get("schedules") or None,
            performance_period=_period(d),
            submitted_at=d["received_at"],
            channel=Channel.STAFF,
            actor=request.user,
        )
        return _answer(election)


class StaffRefused(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF

    @extend_schema(responses=ElectionOut(many=True))
    def get(self, request):
        plan = Plan.objects.filter(code=request.query_params.get("plan", "")).first()
        return Response([election_json(e) for e in S.refused_elections(plan=plan)])


class WindowOut(serializers.Serializer):
    id = serializers.IntegerField()
    plan = serializers.CharField()
    plan_year = serializers.IntegerField()
    kind = serializers.CharField()
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField()


def _window_json(w: EnrollmentWindow) -> dict:
    return {
        "id": w.pk,
        "plan": w.plan.code,
        "plan_year": w.plan_year,
        "kind": w.kind,
        "opens_at": _when(w.opens_at),
        "closes_at": _when(w.closes_at),
        "participation": w.participation_id,
        "performance_period_start": w.performance_period_start,
        "performance_period_end": w.performance_period_end,
        "reminder_days": w.reminder_days,
    }


class StaffWindows(APIView):
    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.MANAGE_PLANS

    @extend_schema(responses=WindowOut(many=True))
    def get(self, request):
        qs = EnrollmentWindow.objects.select_related("plan").order_by("-plan_year", "opens_at")
        if request.query_params.get("plan"):
            qs = qs.filter(plan__code=request.query_params["plan"])
        return Response([_window_json(w) for w in qs[:500]])

    @extend_schema(request=WindowIn, responses={201: WindowOut})
    def post(self, request):
        d = _valid(WindowIn, request.data)
        plan = get_object_or_404(Plan, code=d["plan"])
        try:
            window = services.enrollment_window_open(
                plan=plan,
                plan_year=d["plan_year"],
                kind=d["kind"],
                opens_at=d["opens_at"],
                closes_at=d["closes_at"],
                performance_period=_period(d),
                reminder_days=d.get("reminder_days"),
                actor=request.user,
                now=timezone.now(),
            )
        except services.ElectionError as exc:
            return Response(
                {"rule": exc.rule, "message": exc.message}, status=status.HTTP_422_UNPROCESSABLE_ENTITY
            )
        return Response(_window_json(window), status=status.HTTP_201_CREATED)


class InForceOut(serializers.Serializer):
    employee_number = serializers.CharField()
    name = serializers.CharField()
    plan = serializers.CharField()
    plan_year = serializers.IntegerField()
    component = serializers.CharField()
    percent = serializers.CharField()
    kind = serializers.CharField()
    election_id = serializers.IntegerField()
    irrevocable_at = serializers.CharField()


class StaffInForce(APIView):
    """The deferral percentages in force for a plan year (what payroll applies)."""

    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF

    @extend_schema(responses=InForceOut(many=True))
    def get(self, request):
        plan = get_object_or_404(Plan, code=request.query_params.get("plan", ""))
        year = _year_param(request)
        return Response(list(S.payroll_export_rows(plan=plan, plan_year=year)))
