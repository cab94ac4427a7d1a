"""API representations of the plan catalog."""

from __future__ import annotations

from rest_framework import serializers

from plans.models import Fund, FundPrice, Plan, PlanVersion, Provision


class ProvisionSerializer(serializers.ModelSerializer):
    value = serializers.JSONField()

    class Meta:
        model = Provision
        fields = ["key", "label", "value", "citation", "reading"]


class PlanVersionSerializer(serializers.ModelSerializer):
    provisions = ProvisionSerializer(many=True, read_only=True)

    class Meta:
        model = PlanVersion
        fields = ["id", "effective_date", "title", "source_document", "notes", "provisions"]


class PlanSerializer(serializers.ModelSerializer):
    versions = PlanVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Plan
        fields = ["id", "code", "name", "sponsor", "kind", "description", "versions"]


class FundSerializer(serializers.ModelSerializer):
    plan: serializers.SlugRelatedField[Plan] = serializers.SlugRelatedField(slug_field="code", read_only=True)

    class Meta:
        model = Fund
        fields = ["id", "plan", "code", "name", "is_default", "active"]


class FundPriceSerializer(serializers.ModelSerializer):
    class Meta:
        model = FundPrice
        fields = ["date", "price", "loaded_at", "source"]
