"""The FICA feed of a pay date for payroll (staff with tax_files; every read is a recorded take) and a
participant's own year-end figures."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from core.inputs import date_or_none
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap
from taxes.selectors import person_years
from taxes.services.files import feed_take

FEED_ROW = inline_serializer(
    "FicaFeedRow",
    {
        "employee_number": serializers.CharField(),
        "date": serializers.DateField(),
        "amount": serializers.DecimalField(max_digits=14, decimal_places=2),
        "plan": serializers.CharField(),
        "kind": serializers.CharField(),
        "cite": serializers.CharField(),
    },
    many=True,
)


class FicaFeed(APIView):
    """The FICA wages payroll adds to Social Security and Medicare wages on this pay date (26 CFR
    31.3121(v)(2)-1); vesting between pay dates is in the next pay date's feed."""

    permission_classes = [HasCapability]
    required_capability = Cap.TAX_FILES

    @extend_schema(responses=FEED_ROW, operation_id="taxes_fica_feed")
    def get(self, request, day: str):
        feed_date = date_or_none(day)
        if feed_date is None:
            raise NotFound("not a date (YYYY-MM-DD)")
        _, rows = feed_take(feed_date=feed_date, actor=request.user, now=timezone.now(), via="api")
        return Response(
            [
                {
                    "employee_number": r.person.employee_number,
                    "date": r.date.isoformat(),
                    "amount": f"{r.amount:.2f}",
                    "plan": r.participation.plan.code,
                    "kind": r.kind,
                    "cite": r.cite,
                }
                for r in rows
            ]
        )


class MyTaxYears(APIView):
    """My year-end figures: FICA wages from the plans (W-2 boxes 3/5), box 1, box 11, and 1099-MISC box 3."""

    permission_classes = [IsParticipant]

    @extend_schema(
        responses=inline_serializer(
            "TaxYear",
            {
                "year": serializers.IntegerField(),
                "fica_wages": serializers.CharField(),
                "w2_box_1": serializers.CharField(),
                "w2_box_11": serializers.CharField(allow_null=True),
            },
            many=True,
        ),
        operation_id="taxes_me_years",
    )
    def get(self, request):
        return Response(
            [
                {
                    "year": year,
                    "fica_wages": f"{fig.fica_wages:.2f}",
                    "w2_box_1": f"{fig.w2_box_1:.2f}",
                    "w2_box_11": None if fig.w2_box_11 is None else f"{fig.w2_box_11:.2f}",
                }
                for year, fig in person_years(person=request.user.person)
            ]
        )
