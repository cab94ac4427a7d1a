"""ERISA claims and appeals (EDCP Article XI, BRP Article VII, RRP Article VII; 29 CFR 2560.503-1).

A Claim moves through the states below only by the services in claims.services; every move is a
ClaimTransition row (who, when, why) and every model keeps its history (django-simple-history).
Deadlines are computed from the plan's `claims` provision by claims.selectors.claim_deadlines and
stored on the claim (so the staff queue can sort by them in SQL); they are refreshed on each move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from participants.models import Person
from plans.models import Plan, PlanSection

if TYPE_CHECKING:
    from claims.selectors import ClaimsRules


class State(models.TextChoices):
    RECEIVED = "received", "Received"
    UNDER_REVIEW = "under_review", "Under review"
    EXTENDED = "extended", "Extended"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    APPEAL_RECEIVED = "appeal_received", "Appeal received"
    APPEAL_UNDER_REVIEW = "appeal_under_review", "Appeal under review"
    APPEAL_EXTENDED = "appeal_extended", "Appeal extended"
    APPEAL_APPROVED = "appeal_approved", "Approved on appeal"
    APPEAL_DENIED = "appeal_denied", "Denied on appeal"
    ABANDONED = "abandoned", "Abandoned"
    CLOSED = "closed", "Closed"


# Where each state may go. Abandoned is final: the claim may not be reasserted (EDCP 11.3, BRP 7.3, RRP 7.03).
TRANSITIONS: dict[str, frozenset[str]] = {
    State.RECEIVED: frozenset({State.UNDER_REVIEW, State.EXTENDED, State.APPROVED, State.DENIED}),
    State.UNDER_REVIEW: frozenset({State.EXTENDED, State.APPROVED, State.DENIED}),
    State.EXTENDED: frozenset({State.APPROVED, State.DENIED}),
    State.APPROVED: frozenset({State.CLOSED}),
    State.DENIED: frozenset({State.APPEAL_RECEIVED, State.ABANDONED}),
    State.APPEAL_RECEIVED: frozenset(
        {State.APPEAL_UNDER_REVIEW, State.APPEAL_EXTENDED, State.APPEAL_APPROVED, State.APPEAL_DENIED}
    ),
    State.APPEAL_UNDER_REVIEW: frozenset({State.APPEAL_EXTENDED, State.APPEAL_APPROVED, State.APPEAL_DENIED}),
    State.APPEAL_EXTENDED: frozenset({State.APPEAL_APPROVED, State.APPEAL_DENIED}),
    State.APPEAL_APPROVED: frozenset({State.CLOSED}),
    State.APPEAL_DENIED: frozenset({State.CLOSED}),
    State.ABANDONED: frozenset(),
    State.CLOSED: frozenset(),
}
AWAITING_DECISION = (State.RECEIVED, State.UNDER_REVIEW, State.EXTENDED)
AWAITING_REVIEW = (State.APPEAL_RECEIVED, State.APPEAL_UNDER_REVIEW, State.APPEAL_EXTENDED)
OPEN_STATES = (*AWAITING_DECISION, State.DENIED, *AWAITING_REVIEW)
# Claim.next_deadline_kind while the decision period is tolled, waiting for the claimant's information.
AWAITING_CLAIMANT = "awaiting_claimant"


class Capacity(models.TextChoices):
    PARTICIPANT = "participant", "Participant"
    FORMER_PARTICIPANT = "former_participant", "Former Participant"
    BENEFICIARY = "beneficiary", "Beneficiary"


class RepresentativeStatus(models.TextChoices):
    """Staff verify a representative's authorisation before the representative learns anything about the claim
    (29 CFR 2560.503-1(b)(4): the plan may establish procedures for verifying an authorized representative)."""

    PENDING = "pending", "Awaiting staff verification"
    VERIFIED = "verified", "Verified by staff"
    REJECTED = "rejected", "Not verified"


class Subject(models.TextChoices):
    AMOUNT = "amount", "Amount of a benefit"
    TIMING = "timing", "Time or form of payment"
    VESTING = "vesting", "Vesting or eligibility"
    BENEFICIARY = "beneficiary", "Benefit as a Beneficiary"
    OTHER = "other", "Other"


class Delivery(models.TextChoices):
    PORTAL = "portal", "Posted to the participant portal"
    MAIL = "mail", "First-class mail"


class Level(models.TextChoices):
    INITIAL = "initial", "Initial decision"
    REVIEW = "review", "Decision on review"


class Outcome(models.TextChoices):
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"


class Claim(models.Model):
    """A written claim for benefits (EDCP 11.1, BRP 7.1, RRP 7.01)."""

    _rules: ClaimsRules | None  # not a column: claims.selectors.claim_rules() caches the claim's rules here

    class Channel(models.TextChoices):
        PORTAL = "portal", "Participant portal"
        PAPER = "paper", "Paper, recorded by staff"

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="claims")
    participant = models.ForeignKey(
        Person,
        on_delete=models.PROTECT,
        related_name="claims_on_account",
        help_text="The participant whose benefits are claimed",
    )
    capacity = models.CharField(max_length=20, choices=Capacity.choices)
    claimant = models.ForeignKey(
        Person,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="claims",
        help_text="The claimant when on record as a person (portal access, notices)",
    )
    claimant_name = models.CharField(max_length=200)
    claimant_address = models.TextField(
        blank=True, help_text="Mailing address for the notices, one line each"
    )
    representative = models.ForeignKey(
        Person, null=True, blank=True, on_delete=models.PROTECT, related_name="represented_claims"
    )
    representative_authorisation = models.ForeignKey(
        "ClaimDocument", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # 29 CFR 2560.503-1(b)(4): until staff verify the authorisation the representative sees and receives nothing.
    representative_status = models.CharField(max_length=10, choices=RepresentativeStatus.choices, blank=True)
    representative_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    representative_decided_at = models.DateTimeField(null=True, blank=True)
    representative_decision_reason = models.TextField(blank=True)
    subject = models.CharField(max_length=20, choices=Subject.choices)
    description = models.TextField(help_text="What is claimed, and why")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    delivery = models.CharField(
        max_length=10,
        choices=Delivery.choices,
        help_text="How notices reach the claimant (fixes when the claimant receives them)",
    )
    received_on = models.DateField(
        help_text="Date the Committee's delegate received the claim (plan time zone)"
    )
    received_at = models.DateTimeField()
    filed_by = models.CharField(max_length=200)
    state = models.CharField(max_length=20, choices=State.choices, default=State.RECEIVED)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="assigned_claims",
    )
    # Deadlines, stored from claims.selectors.claim_deadlines on every transition. A decision period tolled while
    # the claimant's information is awaited (29 CFR 2560.503-1(f)(4), (i)(4)) has no due date until it arrives:
    # its due date is empty and next_deadline_kind is AWAITING_CLAIMANT.
    decision_due_on = models.DateField(null=True, blank=True)
    appeal_due_on = models.DateField(null=True, blank=True)
    review_due_on = models.DateField(null=True, blank=True)
    legal_action_until = models.DateField(null=True, blank=True)
    next_deadline_on = models.DateField(null=True, blank=True)
    next_deadline_kind = models.CharField(max_length=30, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-received_on", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=State.values), name="claim_state_known"),
            models.CheckConstraint(
                condition=Q(representative__isnull=True) | Q(representative_authorisation__isnull=False),
                name="claim_representative_authorised",
            ),
            models.CheckConstraint(
                condition=Q(representative__isnull=True, representative_status="")
                | Q(representative__isnull=False, representative_status__in=RepresentativeStatus.values),
                name="claim_representative_status_known",
            ),
        ]
        indexes = [models.Index(fields=["state", "next_deadline_on"])]

    def __str__(self) -> str:
        return f"{self.number} {self.claimant_name} ({self.plan.code})"

    @property
    def number(self) -> str:
        return f"C-{self.pk:06d}" if self.pk else "C-new"

    @property
    def address_lines(self) -> list[str]:
        return [line for line in self.claimant_address.splitlines() if line.strip()]

    @property
    def representative_verified(self) -> bool:
        return (
            self.representative_id is not None and self.representative_status == RepresentativeStatus.VERIFIED
        )

    def may_act_for_claimant(self, person) -> bool:
        """The claimant, or their representative once staff verified the authorisation (29 CFR 2560.503-1(b)(4))."""
        if person is None:
            return False
        if self.claimant_id is not None and person.pk == self.claimant_id:
            return True
        return self.representative_verified and person.pk == self.representative_id

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES


def upload_path(sha256: str, extension: str) -> str:
    return f"claims/uploads/{sha256[:2]}/{sha256}{extension}"


class ClaimDocument(models.Model):
    """A file submitted with a claim or appeal, an authorisation, or a record staff relied on."""

    class Kind(models.TextChoices):
        SUBMISSION = "submission", "Submitted with the claim"
        AUTHORISATION = "authorisation", "Authorisation of a representative"
        EVIDENCE = "evidence", "Submitted with the appeal"
        INFORMATION = "information", "Information the plan asked for"
        RECORD = "record", "Plan record relied on"

    claim = models.ForeignKey(
        Claim, null=True, blank=True, on_delete=models.PROTECT, related_name="documents"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    original_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=40)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    path = models.CharField(max_length=300, help_text="Relative to MEDIA_ROOT")
    uploaded_at = models.DateTimeField()
    uploaded_by = models.CharField(max_length=200)
    history = HistoricalRecords()

    class Meta:
        ordering = ["uploaded_at", "id"]

    def __str__(self) -> str:
        return f"{self.original_name} ({self.sha256[:12]})"

    @property
    def is_pdf(self) -> bool:
        return self.content_type == "application/pdf"


class ClaimTransition(models.Model):
    """One action on a claim: a state change (from, to) or a step that keeps the state (assignment, claim file)."""

    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="transitions")
    action = models.CharField(max_length=40)
    from_state = models.CharField(max_length=20, choices=State.choices, blank=True)
    to_state = models.CharField(max_length=20, choices=State.choices)
    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=200)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.claim.number} {self.action}: {self.from_state or '-'} -> {self.to_state}"


class ClaimExtension(models.Model):
    """The one extension of a decision period, with the notice sent before the period ends.

    When the special circumstance is the claimant's failure to submit information necessary to decide the
    claim, the notice asks for it and the period is tolled from the notice date until the claimant responds
    (29 CFR 2560.503-1(f)(4) initial, (i)(4) on review)."""

    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="extensions")
    level = models.CharField(max_length=10, choices=Level.choices)
    special_circumstances = models.TextField()
    expected_on = models.DateField(help_text="Date by which the plan expects to decide")
    issued_on = models.DateField()
    issued_at = models.DateTimeField()
    issued_by = models.CharField(max_length=200)
    notice = models.ForeignKey("core.Document", null=True, on_delete=models.PROTECT, related_name="+")
    requests_information = models.BooleanField(
        default=False,
        help_text="The special circumstance is the claimant's failure to submit information: the "
        "notice asks for it and the period is tolled until the claimant responds",
    )
    information_requested = models.TextField(blank=True, help_text="The information needed from the claimant")
    information_received_on = models.DateField(
        null=True, blank=True, help_text="Date the claimant's response was received (plan time zone)"
    )
    information_received_at = models.DateTimeField(null=True, blank=True)
    information_response = models.TextField(
        blank=True, help_text="What the claimant sent, in their words or staff's"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["issued_at"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "level"], name="one_extension_per_level"),
            models.CheckConstraint(
                condition=Q(
                    requests_information=False, information_requested="", information_received_on__isnull=True
                )
                | (Q(requests_information=True) & ~Q(information_requested="")),
                name="extension_information_request_stated",
            ),
            models.CheckConstraint(
                condition=Q(information_received_on__isnull=True)
                | Q(information_received_on__gte=models.F("issued_on")),
                name="extension_response_not_before_request",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim.number} {self.level} extension to {self.expected_on}"

    @property
    def awaiting_information(self) -> bool:
        return self.requests_information and self.information_received_on is None

    @property
    def days_tolled(self) -> int:
        """Days the period stood still: from the notice date to the response (0 until the response is in)."""
        if not self.requests_information or self.information_received_on is None:
            return 0
        return (self.information_received_on - self.issued_on).days


class ClaimAppeal(models.Model):
    """A written notice of appeal (EDCP 11.3, BRP 7.3, RRP 7.03): the issues and the evidence."""

    claim = models.OneToOneField(Claim, on_delete=models.PROTECT, related_name="appeal")
    received_on = models.DateField()
    received_at = models.DateTimeField()
    filed_by = models.CharField(max_length=200)
    issues = models.TextField()
    evidence = models.TextField(blank=True, help_text="The evidence the claimant deems relevant")
    history = HistoricalRecords()

    def __str__(self) -> str:
        return f"Appeal of {self.claim.number} received {self.received_on}"


class ClaimDecision(models.Model):
    """A decision (initial or on review) and the notice that communicates it."""

    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="decisions")
    level = models.CharField(max_length=10, choices=Level.choices)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    partial = models.BooleanField(default=False, help_text="Denied in part")
    reasons = models.TextField()
    provisions = models.ManyToManyField(PlanSection, blank=True, related_name="+")
    additional_material = models.TextField(
        blank=True, help_text="Material needed to perfect the claim, and why"
    )
    review_procedure = models.TextField(blank=True)
    approved_benefit = models.TextField(blank=True, help_text="Approvals: what is granted")
    records_relied_on = models.ManyToManyField(ClaimDocument, blank=True, related_name="+")
    decided_on = models.DateField()
    decided_at = models.DateTimeField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    deciding_body = models.CharField(max_length=200)
    due_on = models.DateField(help_text="The last day the decision was due")
    late = models.BooleanField(default=False)
    days_taken = models.PositiveIntegerField(
        help_text="Days from receipt of the claim (or appeal) to the decision"
    )
    delivery = models.CharField(max_length=10, choices=Delivery.choices)
    claimant_receives_on = models.DateField(help_text="When the claimant is treated as receiving the notice")
    notice = models.ForeignKey("core.Document", null=True, on_delete=models.PROTECT, related_name="+")
    history = HistoricalRecords(m2m_fields=[provisions, records_relied_on])

    class Meta:
        ordering = ["decided_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "level"], name="one_decision_per_level"),
            models.CheckConstraint(condition=~Q(reasons=""), name="decision_has_reasons"),
            models.CheckConstraint(
                condition=Q(outcome="approved")
                | Q(level="review")
                | (~Q(additional_material="") & ~Q(review_procedure="")),
                name="denial_states_material_and_procedure",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim.number} {self.level} {self.outcome} {self.decided_on}"

    @property
    def days_late(self) -> int:
        return max(0, (self.decided_on - self.due_on).days)


class ClaimFileRequest(models.Model):
    """A request for the claim file (29 CFR 2560.503-1(h)(2)(iii), (m)(8)): furnished free of charge."""

    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="file_requests")
    requested_on = models.DateField()
    requested_at = models.DateTimeField()
    requested_by = models.CharField(max_length=200)
    fulfilled_on = models.DateField(null=True, blank=True)
    fulfilled_at = models.DateTimeField(null=True, blank=True)
    document = models.ForeignKey(
        "core.Document", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Issue 12: what the bundle holds (claims.pdf.claim_file_contents_key); an unchanged claim file is furnished
    # again from the bundle already stored, not written anew on every request.
    contents_sha256 = models.CharField(max_length=64, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["requested_at", "id"]

    def __str__(self) -> str:
        return f"Claim file of {self.claim.number} requested {self.requested_on}"


class ClaimFlag(models.Model):
    """A deadline the daily job flagged; one row per claim, kind and due date, so a rerun sends nothing twice."""

    class Kind(models.TextChoices):
        APPROACHING = "approaching", "Deadline approaching"
        OVERDUE = "overdue", "Deadline passed"
        ABANDONED = "abandoned", "Marked abandoned"

    claim = models.ForeignKey(Claim, on_delete=models.PROTECT, related_name="flags")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    deadline_kind = models.CharField(max_length=30)
    deadline_on = models.DateField()
    flagged_on = models.DateField()
    emailed_to = models.TextField(blank=True)

    class Meta:
        ordering = ["-flagged_on", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["claim", "kind", "deadline_kind", "deadline_on"], name="one_flag_per_deadline"
            )
        ]

    def __str__(self) -> str:
        return f"{self.claim.number} {self.kind} {self.deadline_kind} {self.deadline_on}"
