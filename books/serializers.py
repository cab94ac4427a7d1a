"""API representations of the books: accounts with balances and positions, ledger entries, job runs."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from books.models import Account, LedgerEntry
from core.fields import ApiDateField
from core.models import JobRun


class PositionSerializer(serializers.Serializer):
    fund = serializers.CharField(source="fund.code")
    fund_name = serializers.CharField(source="fund.name")
    units = serializers.DecimalField(max_digits=20, decimal_places=6)
    price = serializers.DecimalField(max_digits=18, decimal_places=6)
    value = serializers.DecimalField(max_digits=16, decimal_places=2)
    earnings = serializers.DecimalField(
        max_digits=16, decimal_places=2, help_text="Earnings credited that day"
    )


class AccountSerializer(serializers.ModelSerializer):
    """An account and its whole value (vested and unvested) at the end of `as_of` (context: as_of, values)."""

    plan = serializers.CharField(source="participation.plan.code")
    employee_number = serializers.CharField(source="participation.person.employee_number")
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field: the serializer metaclass moves it to _declared_fields, so it never replaces Field.label
    as_of = serializers.SerializerMethodField()
    balance = serializers.SerializerMethodField()

    class Meta:
        model = Account
        fields = [
            "id",
            "plan",
            "employee_number",
            "kind",
            "name",
            "label",
            "specified_month",
            "opened_on",
            "as_of",
            "balance",
        ]

    @extend_schema_field(OpenApiTypes.DATE)
    def get_as_of(self, account):
        return self.context["as_of"]

    @extend_schema_field(serializers.DecimalField(max_digits=16, decimal_places=2))
    def get_balance(self, account):
        return str(self.context["values"].get(account.id, "0.00"))


class AccountDetailSerializer(AccountSerializer):
    positions = serializers.SerializerMethodField()

    class Meta(AccountSerializer.Meta):
        fields = AccountSerializer.Meta.fields + ["positions"]

    @extend_schema_field(PositionSerializer(many=True))
    def get_positions(self, account):
        return PositionSerializer(self.context["positions"], many=True).data


class LedgerEntrySerializer(serializers.ModelSerializer):
    fund = serializers.CharField(source="position.fund.code")

    class Meta:
        model = LedgerEntry
        fields = [
            "id",
            "kind",
            "source",
            "effective_date",
            "valuation_date",
            "fund",
            "units",
            "price",
            "amount",
            "reverses",
            "idempotency_key",
            "actor",
            "posted_at",
            "memo",
        ]


class BalancePointSerializer(serializers.Serializer):
    date = ApiDateField()
    value = serializers.DecimalField(max_digits=16, decimal_places=2)


class JobRunSerializer(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)

    class Meta:
        model = JobRun
        fields = [
            "id",
            "kind",
            "key",
            "status",
            "percent",
            "progress_done",
            "progress_total",
            "message",
            "attempts",
            "worker",
            "started_at",
            "heartbeat_at",
            "finished_at",
            "stats",
        ]
