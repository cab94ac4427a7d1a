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
    extensions = serializers.SerializerMethodField()
    notices = serializers.SerializerMethodField()
    transitions = TransitionSerializer(many=True, read_only=True)

    class Meta:
        model = Claim
        fields = ["id", "number", "plan", "claimant_name", "capacity", "subject", "description", "state",
                  "received_on", "decision_due_on", "appeal_due_on", "review_due_on", "legal_action_until",
                  "next_deadline_on", "next_deadline_kind", "deadlines", "extensions", "notices", "transitions"]

    def get_deadlines(self, claim: Claim) -> list[dict]:
        """`due_on` is null while the period is suspended (`suspended_since`), awaiting the claimant's information;
        `days_tolled` is how much later a tolled period falls due (29 CFR 2560.503-1(f)(4), (i)(4))."""
        return [{"kind": d.kind, "label": d.label, "due_on": d.due_on, "cite": d.cite, "done_on": d.done_on,
                 "suspended_since": d.suspended_since, "days_remaining": d.days_remaining,
                 "days_tolled": d.days_tolled}
                for d in claim_deadlines(claim).all()]

    def get_extensions(self, claim: Claim) -> list[dict]:
        return [{"level": e.level, "issued_on": e.issued_on, "expected_on": e.expected_on,
                 "special_circumstances": e.special_circumstances, "requests_information": e.requests_information,
                 "information_requested": e.information_requested,
                 "information_received_on": e.information_received_on}
                for e in claim.extensions.all()]

    def get_notices(self, claim: Claim) -> list[dict]:
        return [{"id": d.pk, "kind": d.kind, "title": d.title, "sha256": d.sha256,
                 "url": reverse("document_download", args=[d.pk])} for d in claim_notices(claim)]


class StaffClaimSerializer(ClaimSerializer):
    reviewer = serializers.CharField(source="reviewer.get_username", default=None)

    class Meta(ClaimSerializer.Meta):
        fields = [*ClaimSerializer.Meta.fields, "reviewer", "channel", "filed_by"]
