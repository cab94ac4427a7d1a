from __future__ import annotations

from django.conf import settings
from django.db import models
from simple_history.models import HistoricalRecords


class MarketClosure(models.Model):
    """An ad hoc NYSE closure the exchange calendar does not know (a day of mourning, a storm)."""

    date = models.DateField(unique=True)
    reason = models.CharField(max_length=200)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    recorded_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-date"]

    def __str__(self) -> str:
        return f"{self.date}: {self.reason}"


class JobRun(models.Model):
    """One run of a batch job for one key (a Valuation Date, a payment day).

    The unique (kind, key) row is the claim: a second worker finds it and does not repeat the work.
    """

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        REFUSED = "refused", "Refused"

    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=60)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    # What the run works on now (core.jobs.job_item), named by a failure as where it stopped; not a column.
    item: str = ""

    class Meta:
        ordering = ["-started_at"]
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="jobrun_one_per_kind_and_key")]
        indexes = [
            models.Index(fields=["kind", "status"]),
            models.Index(fields=["status", "started_at"], name="jobrun_status"),  # the jobs list's filter
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({self.status})"

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_done / self.progress_total))


class AuditEvent(models.Model):
    """A business action with its actor and reason (STYLE 5); model history comes from simple-history."""

    at = models.DateTimeField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    actor_label = models.CharField(max_length=200)
    action = models.CharField(max_length=80)
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["object_type", "object_id"]),
            models.Index(fields=["action"]),
            # newest first (the ordering): the audit log's pages and the dashboard's last ten read the end of this
            # index instead of sorting every event ever recorded (issue 15)
            models.Index(fields=["at", "id"], name="audit_event_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label} {self.action}"


class ImportBatch(models.Model):
    """One uploaded file (participants, prices, payroll): validated whole, then applied whole or refused."""

    class Kind(models.TextChoices):
        PARTICIPANTS = "participants", "Participants"
        PRICES = "prices", "Fund prices"
        PAYROLL = "payroll", "Payroll"
        KEY_EMPLOYEES = "key_employees", "Key Employee list"
        PENSION_FIGURES = "pension_figures", "Pension Plan figures (BRP)"

    class Status(models.TextChoices):
        APPLIED = "applied", "Applied"
        REFUSED = "refused", "Refused"
        DUPLICATE = "duplicate", "Already applied"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    file_name = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices)
    rows_total = models.PositiveIntegerField(default=0)
    rows_applied = models.PositiveIntegerField(default=0)
    rows_skipped = models.PositiveIntegerField(
        default=0, help_text="Rows already applied by an earlier import"
    )
    errors = models.JSONField(default=list, blank=True)
    uploaded_by = models.CharField(max_length=200)
    uploaded_at = models.DateTimeField()

    class Meta:
        ordering = ["-uploaded_at", "-id"]
        indexes = [models.Index(fields=["kind", "sha256"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import {self.file_name} ({self.status})"


class Document(models.Model):
    """A generated document (a PDF notice, form, confirmation, register; a CSV report prepared as a file):
    stored once by content hash, never edited. `content_type` and `extension` say what it is (PDF by default).

    `person` is the participant the document belongs to: only they (and staff) may download it; a document
    without a person (a staff report) is staff-only.
    Rendering the same data again gives the same bytes and therefore the same hash.
    """

    kind = models.CharField(max_length=60)
    title = models.CharField(max_length=300)
    person = models.ForeignKey(
        "participants.Person", null=True, blank=True, on_delete=models.PROTECT, related_name="documents"
    )
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    path = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    template = models.CharField(max_length=200)
    content_type = models.CharField(max_length=100, default="application/pdf")
    extension = models.CharField(max_length=10, default="pdf")
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"]), models.Index(fields=["person", "kind"])]

    def __str__(self) -> str:
        return f"{self.title} ({self.sha256[:12]})"


class DeliveryChoice(models.Model):
    """A person's choice of how notices reach them (append-only: the newest row is in force).

    Paper is the default until the person consents to electronic delivery; the consent is recorded with the
    version and hash of the text they agreed to, when, and (optionally) from which address and browser.
    """

    class Delivery(models.TextChoices):
        ELECTRONIC = "electronic", "Electronic (email with a link and the document attached)"
        PAPER = "paper", "Paper (first-class mail to my address)"

    person = models.ForeignKey(
        "participants.Person", on_delete=models.PROTECT, related_name="delivery_choices"
    )
    delivery = models.CharField(max_length=10, choices=Delivery.choices)
    consent_version = models.CharField(max_length=20, blank=True)
    consent_sha256 = models.CharField(max_length=64, blank=True)
    chosen_at = models.DateTimeField()
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    actor = models.CharField(max_length=200)

    class Meta:
        ordering = ["-chosen_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(delivery="electronic") | ~models.Q(consent_version=""),
                name="electronic_delivery_needs_consent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.person_id} {self.delivery} {self.chosen_at:%Y-%m-%d}"


class Notice(models.Model):
    """One notice sent to one person (or staff user): what, to whom, when, which document, and how it went.

    `key` makes sending idempotent per (kind, object, recipient): a retried task finds the row and sends nothing.
    """

    class Channel(models.TextChoices):
        EMAIL = "email", "Email"
        PAPER = "paper", "Paper"

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        QUEUED = "queued", "In the print queue"
        PRINTED = "printed", "Printed and mailed"
        FAILED = "failed", "Failed"
        UNDELIVERABLE = "undeliverable", "No email or mailing address on file"

    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=200, unique=True)
    person = models.ForeignKey(
        "participants.Person", null=True, blank=True, on_delete=models.PROTECT, related_name="notices"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="notices"
    )
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    channel = models.CharField(max_length=5, choices=Channel.choices)
    status = models.CharField(max_length=13, choices=Status.choices)
    to = models.CharField(max_length=254, blank=True)
    payee_name = models.CharField(
        max_length=200,
        blank=True,
        help_text="A named payee who is not a participant (a beneficiary, an alternate payee): who it went to",
    )
    address = models.TextField(
        blank=True, help_text="Paper to a named payee: the address lines printed on the address page"
    )
    subject = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    link = models.CharField(max_length=500, blank=True)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    print_document = models.ForeignKey(
        Document,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="What the print queue prints: the document, else a letter of the notice",
    )
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    queued_on = models.DateField(null=True, blank=True, help_text="The print queue day (paper)")
    printed_at = models.DateTimeField(null=True, blank=True)
    printed_by = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    actor = models.CharField(max_length=200)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["person", "created_at"]),
            models.Index(fields=["channel", "queued_on"]),
            models.Index(fields=["object_type", "object_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} to {self.to or self.payee_name or self.person_id} ({self.status})"
