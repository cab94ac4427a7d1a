"""API of the books. Staff read every account; a participant reads only their own, under /api/books/me/."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from books.models import Account, LedgerEntry
from books.selectors import account_values, balance_history, positions_on
from books.serializers import (
    AccountDetailSerializer,
    AccountSerializer,
    BalancePointSerializer,
    JobRunSerializer,
    LedgerEntrySerializer,
)
from core.api import date_param
from core.imports.api import ImportBatchesView, ImportBatchView
from core.models import ImportBatch, JobRun
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap
from plans.models import Plan

AS_OF = OpenApiParameter(
    "as_of", OpenApiTypes.DATE, description="Balances at the end of this day (default today)"
)
RANGE = [
    OpenApiParameter("start", OpenApiTypes.DATE, description="Default: a year before end"),
    OpenApiParameter("end", OpenApiTypes.DATE, description="Default: today"),
]


def _accounts():
    return Account.objects.select_related("participation__plan", "participation__person").order_by(
        "participation__plan__code", "kind", "specified_month", "id"
    )


def _share_plans(accounts: list[Account]) -> list[Account]:
    """One Plan instance per plan, so its versions and provisions are read once (account labels)."""
    plans: dict[int, Plan] = {}
    for account in accounts:
        plan = plans.setdefault(account.participation.plan_id, account.participation.plan)
        account.participation.plan = plan
    return accounts


class AccountReads(generics.GenericAPIView):
    """Accounts with their balances on `as_of`; subclasses choose whose accounts."""

    def as_of(self) -> dt.date:
        return date_param(self.request, "as_of", timezone.localdate())

    def list(self, request, *args, **kwargs):
        as_of = self.as_of()
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        accounts = _share_plans(list(page if page is not None else queryset))
        context = {
            **self.get_serializer_context(),
            "as_of": as_of,
            "values": account_values(accounts=accounts, on=as_of),
        }
        data = AccountSerializer(accounts, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    def retrieve(self, request, *args, **kwargs):
        as_of = self.as_of()
        account = self.get_object()
        context = {
            **self.get_serializer_context(),
            "as_of": as_of,
            "values": account_values(accounts=[account], on=as_of),
            "positions": positions_on(account=account, on=as_of),
        }
        return Response(AccountDetailSerializer(account, context=context).data)


class BalanceHistory(generics.GenericAPIView):
    pagination_class = None

    def history(self, account_ids: list[int]) -> Response:
        end = date_param(self.request, "end", timezone.localdate())
        start = date_param(self.request, "start", end - dt.timedelta(days=365))
        points = [
            {"date": day, "value": value}
            for day, value in balance_history(account_ids=account_ids, start=start, end=end)
        ]
        return Response(BalancePointSerializer(points, many=True).data)


# --- staff ------------------------------------------------------------------------------------


class StaffRead(APIView):
    """Staff reads: the VIEW_STAFF capability (deny by default)."""

    permission_classes = [HasCapability]
    required_capability = Cap.VIEW_STAFF


@extend_schema_view(
    get=extend_schema(
        parameters=[
            AS_OF,
            OpenApiParameter(
                "person", OpenApiTypes.INT, description="Only this person's accounts (person id)"
            ),
            OpenApiParameter("plan", OpenApiTypes.STR, description="Only accounts of this plan (code)"),
        ]
    )
)
class AccountList(StaffRead, AccountReads, generics.ListAPIView):
    serializer_class = AccountSerializer
    queryset = Account.objects.all()

    def get_queryset(self):
        accounts = _accounts()
        person = self.request.query_params.get("person", "").strip()
        if person.isdigit():
            accounts = accounts.filter(participation__person_id=int(person))
        plan = self.request.query_params.get("plan", "").strip()
        if plan:
            accounts = accounts.filter(participation__plan__code=plan)
        return accounts


@extend_schema_view(get=extend_schema(parameters=[AS_OF]))
class AccountDetail(StaffRead, AccountReads, generics.RetrieveAPIView):
    serializer_class = AccountDetailSerializer
    queryset = Account.objects.all()

    def get_queryset(self):
        return _accounts()


class AccountEntries(StaffRead, generics.ListAPIView):
    """The ledger of one account, in posting order."""

    serializer_class = LedgerEntrySerializer
    queryset = LedgerEntry.objects.all()
    access_model = Account

    def get_queryset(self):
        account = generics.get_object_or_404(Account, pk=self.kwargs["pk"])
        return (
            LedgerEntry.objects.filter(account=account)
            .select_related("position__fund")
            .order_by("valuation_date", "id")
        )


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("kind", OpenApiTypes.STR)]))
class JobRunList(StaffRead, generics.ListAPIView):
    serializer_class = JobRunSerializer
    queryset = JobRun.objects.all()

    def get_queryset(self):
        kind = self.request.query_params.get("kind", "").strip()
        return JobRun.objects.filter(kind=kind) if kind else JobRun.objects.all()


class JobRunDetail(StaffRead, generics.RetrieveAPIView):
    serializer_class = JobRunSerializer
    queryset = JobRun.objects.all()


PayrollImports = ImportBatchesView.for_kind(ImportBatch.Kind.PAYROLL)
PayrollImport = ImportBatchView.for_kind(ImportBatch.Kind.PAYROLL)


# --- the participant's own ---------------------------------------------------------------------


class OwnAccounts(generics.GenericAPIView):
    """Only the signed-in participant's accounts: anyone else's answers 404."""

    permission_classes = [IsParticipant]
    queryset = Account.objects.all()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no participant
            return Account.objects.none()
        return _accounts().filter(participation__person=self.request.user.person)


@extend_schema_view(get=extend_schema(parameters=[AS_OF], operation_id="me_accounts_list"))
class MyAccountList(OwnAccounts, AccountReads, generics.ListAPIView):
    serializer_class = AccountSerializer


@extend_schema_view(get=extend_schema(parameters=[AS_OF], operation_id="me_accounts_retrieve"))
class MyAccountDetail(OwnAccounts, AccountReads, generics.RetrieveAPIView):
    serializer_class = AccountDetailSerializer


@extend_schema_view(
    get=extend_schema(
        parameters=RANGE, operation_id="me_account_history", responses=BalancePointSerializer(many=True)
    )
)
class MyAccountHistory(OwnAccounts, BalanceHistory, generics.GenericAPIView):
    """One of my accounts' value on each Valuation Date."""

    serializer_class = BalancePointSerializer

    def get(self, request, *args, **kwargs):
        return self.history([self.get_object().pk])


@extend_schema_view(
    get=extend_schema(
        parameters=RANGE, operation_id="me_history", responses=BalancePointSerializer(many=True)
    )
)
class MyBalanceHistory(OwnAccounts, BalanceHistory, generics.GenericAPIView):
    """The value of all my accounts together on each Valuation Date."""

    serializer_class = BalancePointSerializer

    def get(self, request, *args, **kwargs):
        return self.history(list(self.get_queryset().values_list("id", flat=True)))
