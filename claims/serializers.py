from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from claims.models import Claim, ClaimTransition
from claims.selectors import claim_deadlines, claim_notices


class TransitionSerializer(serializers.ModelSerializer):
    from_state = serializers.CharField(read_only=True, help_text="State before the step (blank when filed)")
    to_state = serializers.CharField(read_only=True)

    class Meta:
        model = ClaimTransition
        fields = ["action", "from_state", "to_state", "at", "reason"]


class ClaimSerializer(serializers.ModelSerializer):
    """A claim as its claimant sees it: status, deadlines, notices and the log of each step."""

    number = serializers.CharField(read_only=True)
    plan = serializers.CharField(source="plan.code")
    deadlines = serializers.SerializerMethodField()
    notices = serializers.SerializerMethodField()
    transitions = TransitionSerializer(many=True, read_only=True)

    class Meta:
        model = Claim
        fields = ["id", "number", "plan", "claimant_name", "capacity", "subject", "description", "state",
                  "received_on", "decision_due_on", "appeal_due_on", "review_due_on", "legal_action_until",
                  "next_deadline_on", "next_deadline_kind", "deadlines", "notices", "transitions"]

    def get_deadlines(self, claim: Claim) -> list[dict]:
        return [{"kind": d.kind, "label": d.label, "due_on": d.due_on, "cite": d.cite, "done_on": d.done_on}
                for d in claim_deadlines(claim).all()]

    def get_notices(self, claim: Claim) -> list[dict]:
        return [{"id": d.pk, "kind": d.kind, "title": d.title, "sha256": d.sha256,
                 "url": reverse("document_download", args=[d.pk])} for d in claim_notices(claim)]


class StaffClaimSerializer(ClaimSerializer):
    reviewer = serializers.CharField(source="reviewer.get_username", default=None)

    class Meta(ClaimSerializer.Meta):
        fields = [*ClaimSerializer.Meta.fields, "reviewer", "channel", "filed_by"]
