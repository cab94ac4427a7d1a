"""API representations of people (staff reads)."""

from __future__ import annotations

from rest_framework import serializers

from participants.models import EmploymentEvent, KeyEmployeeList, Participation, Person
from plans.models import Plan


class ParticipationSerializer(serializers.ModelSerializer):
    plan: serializers.SlugRelatedField[Plan] = serializers.SlugRelatedField(slug_field="code", read_only=True)

    class Meta:
        model = Participation
        fields = ["id", "plan", "eligible_on", "entered_on", "ended_on", "eligible"]


class EmploymentEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = EmploymentEvent
        fields = ["id", "kind", "reason", "effective_date", "recorded_at", "recorded_by", "note"]


class PersonSerializer(serializers.ModelSerializer):
    participations = ParticipationSerializer(many=True, read_only=True)
    employment_events = EmploymentEventSerializer(many=True, read_only=True)

    class Meta:
        model = Person
        fields = [
            "id",
            "employee_number",
            "first_name",
            "last_name",
            "birth_date",
            "hire_date",
            "marital_status",
            "email",
            "address_line1",
            "address_line2",
            "city",
            "state",
            "postal_code",
            "participations",
            "employment_events",
        ]


class KeyEmployeeListSerializer(serializers.ModelSerializer):
    members: serializers.SlugRelatedField[Person] = serializers.SlugRelatedField(
        slug_field="employee_number", many=True, read_only=True
    )

    class Meta:
        model = KeyEmployeeList
        fields = ["id", "identification_year", "members", "recorded_at", "recorded_by", "note"]
