from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from claims.models import Capacity, Claim, ClaimTransition, Delivery, Subject
from claims.selectors import claim_deadlines, claim_notices
from core.fields import ApiDateField
from participants.models import Person
from plans.models import Plan


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
        fields = [
            "id",
            "number",
            "plan",
            "claimant_name",
            "capacity",
            "subject",
            "description",
            "state",
            "received_on",
            "decision_due_on",
            "appeal_due_on",
            "review_due_on",
            "legal_action_until",
            "next_deadline_on",
            "next_deadline_kind",
            "deadlines",
            "extensions",
            "notices",
            "transitions",
        ]

    def get_deadlines(self, claim: Claim) -> list[dict]:
        """`due_on` is null while the period is suspended (`suspended_since`), awaiting the claimant's information;
        `days_tolled` is how much later a tolled period falls due (29 CFR 2560.503-1(f)(4), (i)(4))."""
        return [
            {
                "kind": d.kind,
                "label": d.label,
                "due_on": d.due_on,
                "cite": d.cite,
                "done_on": d.done_on,
                "suspended_since": d.suspended_since,
                "days_remaining": d.days_remaining,
                "days_tolled": d.days_tolled,
            }
            for d in claim_deadlines(claim=claim).all()
        ]

    def get_extensions(self, claim: Claim) -> list[dict]:
        return [
            {
                "level": e.level,
                "issued_on": e.issued_on,
                "expected_on": e.expected_on,
                "special_circumstances": e.special_circumstances,
                "requests_information": e.requests_information,
                "information_requested": e.information_requested,
                "information_received_on": e.information_received_on,
            }
            for e in claim.extensions.all()
        ]

    def get_notices(self, claim: Claim) -> list[dict]:
        return [
            {
                "id": d.pk,
                "kind": d.kind,
                "title": d.title,
                "sha256": d.sha256,
                "url": reverse("document_download", args=[d.pk]),
            }
            for d in claim_notices(claim=claim)
        ]


class StaffClaimSerializer(ClaimSerializer):
    reviewer = serializers.CharField(source="reviewer.get_username", default=None)

    class Meta(ClaimSerializer.Meta):
        fields = [*ClaimSerializer.Meta.fields, "reviewer", "channel", "filed_by"]


# --- input: filing a claim or an appeal (multipart) ----------------------------------------------------------
class _Strict(serializers.Serializer):
    """Refuses fields it does not know, so a participant cannot slip in what only staff record (received_on,
    claimant_number...) and have it silently dropped."""

    ignored = frozenset({"csrfmiddlewaretoken"})

    def validate(self, attrs):
        keys = set(self.initial_data.keys()) if hasattr(self.initial_data, "keys") else set()
        unknown = sorted(keys - set(self.fields) - self.ignored)
        if unknown:
            raise serializers.ValidationError(f"not a field of this request: {', '.join(unknown)}")
        return attrs


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart request; its type and size are checked by claims.services.upload_check."""


def _person_field(help_text: str) -> serializers.SlugRelatedField:
    return serializers.SlugRelatedField(
        slug_field="employee_number",
        queryset=Person.objects.all(),
        required=False,
        allow_null=True,
        help_text=help_text,
        error_messages={"does_not_exist": "No person has employee number {value}."},
    )


def _files(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=UploadField(), required=False, help_text=help_text)


class ClaimFileIn(_Strict):
    """A written claim (EDCP 11.1, BRP 7.1, RRP 7.01) filed by the signed-in participant or beneficiary, as in the
    portal: as the claimant, or as the claimant's representative with their signed authorisation."""

    plan = serializers.SlugRelatedField(slug_field="code", queryset=Plan.objects.all(), help_text="Plan code")
    capacity = serializers.ChoiceField(choices=Capacity.choices, help_text="The claimant is a")
    subject = serializers.ChoiceField(choices=Subject.choices)
    description = serializers.CharField(help_text="What is claimed, and why")
    attachments = _files("PDF, PNG or JPEG files of at most 10 MB each, checked against their content")
    participant_number = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default="",
        max_length=20,
        help_text="Beneficiary claims: employee number of the participant. The answer is 202 whether or not the "
        "number is known or in the plan; a received claim is then listed with your claims.",
    )
    on_behalf_of = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=20,
        help_text="Filing for someone else: their employee number (needs `authorisation`). The answer is 202 "
        "whether or not the number is known; staff verify the authorisation before you see the claim.",
    )
    authorisation = UploadField(
        required=False,
        help_text="The claimant's signed authorisation of you as their representative (PDF, PNG or JPEG)",
    )


class PaperClaimIn(_Strict):
    """A paper claim recorded by staff (record_events), with the date the Committee's delegate received it."""

    plan = serializers.SlugRelatedField(slug_field="code", queryset=Plan.objects.all(), help_text="Plan code")
    capacity = serializers.ChoiceField(choices=Capacity.choices)
    subject = serializers.ChoiceField(choices=Subject.choices)
    description = serializers.CharField(help_text="What is claimed, and why")
    received_on = ApiDateField(help_text="Date the claim was received (plan time zone)")
    delivery = serializers.ChoiceField(
        choices=Delivery.choices, default=Delivery.MAIL, help_text="Send notices by"
    )
    claimant_number = _person_field("Claimant's employee number, if on record")
    claimant_name = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Claimant's name, if not on record"
    )
    claimant_address = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Claimant's mailing address, if not on record"
    )
    participant_number = _person_field("Beneficiary claims: employee number of the participant")
    representative_number = _person_field(
        "Authorized representative's employee number (needs `authorisation`)"
    )
    authorisation = UploadField(required=False, help_text="The representative's authorisation")
    attachments = _files("The claim and its attachments: PDF, PNG or JPEG, at most 10 MB each")


class AppealIn(_Strict):
    """A written notice of appeal (EDCP 11.3, BRP 7.3, RRP 7.03) of the claimant's own denied claim."""

    issues = serializers.CharField(help_text="The issues you raise")
    evidence = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="The evidence you deem relevant"
    )
    files = _files("Evidence: PDF, PNG or JPEG files of at most 10 MB each")


class PaperAppealIn(AppealIn):
    """A paper appeal recorded by staff (record_events), with the date it was received."""

    received_on = ApiDateField(help_text="Date the appeal was received (plan time zone)")


class InformationIn(_Strict):
    """The claimant's answer to an extension notice that asked for information (29 CFR 2560.503-1(f)(4), (i)(4))."""

    response = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Your answer to the request, in words"
    )
    files = _files("The documents requested: PDF, PNG or JPEG files of at most 10 MB each")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if not attrs.get("response", "").strip() and not attrs.get("files"):
            raise serializers.ValidationError("send the information requested: a response, files, or both")
        return attrs


class PaperInformationIn(InformationIn):
    """A paper response recorded by staff (record_events), with the date it was received."""

    received_on = ApiDateField(help_text="Date the response was received (plan time zone)")


class RefusalOut(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the plan refuses, naming its section and the regulation")
