"""Elections as data: what payroll and crediting need, and the status each election ended in.

A refused election is kept, with the rule it breaks, for the audit trail (it is never in force).
"""

from __future__ import annotations

import datetime

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from participants.models import Participation
from plans.models import Fund


class Status(models.TextChoices):
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    SUPERSEDED = "superseded", "Replaced before the deadline"
    REVOKED = "revoked", "Revoked"


class Channel(models.TextChoices):
    PORTAL = "portal", "Participant portal"
    STAFF = "staff", "Staff (paper form)"
    API = "api", "API"
    SIMULATOR = "simulator", "Simulator"
    IMPORT = "import", "Import"


class ElectionBase(models.Model):
    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="+")
    submitted_at = models.DateTimeField()
    status = models.CharField(max_length=12, choices=Status.choices)
    rule = models.CharField(max_length=60, blank=True, help_text="The plan section a refusal rests on")
    message = models.TextField(blank=True)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    actor = models.CharField(max_length=200)
    irrevocable_at = models.DateTimeField(
        null=True, blank=True, help_text="When the election can no longer be changed (accepted elections)"
    )
    request_data = models.JSONField(
        default=dict, blank=True, help_text="What was submitted, as submitted (audit trail)"
    )

    class Meta:
        abstract = True

    @property
    def accepted(self) -> bool:
        return self.status == Status.ACCEPTED


class DeferralElection(ElectionBase):
    """A Compensation Deferral Agreement for a plan year (EDCP 1.12, 3.2; RRP 2.03)."""

    class Kind(models.TextChoices):
        ANNUAL = "annual", "Annual election"
        FIRST_YEAR = "first_year", "First year of eligibility"
        PERFORMANCE = "performance", "Performance-Based Compensation"

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="deferral_elections"
    )
    plan_year = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.ANNUAL)
    performance_period_start = models.DateField(null=True, blank=True)
    performance_period_end = models.DateField(null=True, blank=True)
    covers_pay_from = models.DateField(
        null=True, blank=True, help_text="First-year elections: pay for services after this date"
    )
    window = models.ForeignKey(
        "EnrollmentWindow",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="elections",
        help_text="The enrollment window it was made in (none when the Committee opened none)",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["-plan_year", "-submitted_at", "-id"]
        indexes = [models.Index(fields=["participation", "status", "plan_year"])]

    def __str__(self) -> str:
        return f"{self.participation} deferral election {self.plan_year} ({self.status})"


class DeferralElectionLine(models.Model):
    election = models.ForeignKey(DeferralElection, on_delete=models.CASCADE, related_name="lines")
    component = models.CharField(max_length=30)
    percent = models.DecimalField(max_digits=7, decimal_places=4)

    history = HistoricalRecords()  # issue 12: an admin edit of a line (18% -> 50%) keeps its history

    class Meta:
        ordering = ["election", "component"]
        constraints = [
            models.UniqueConstraint(fields=["election", "component"], name="one_line_per_component")
        ]


class DeferralAllocation(models.Model):
    """Where an election's deferrals go (EDCP 3.3): Retirement/Termination or a Specified Date Account."""

    election = models.ForeignKey(DeferralElection, on_delete=models.CASCADE, related_name="allocations")
    account_kind = models.CharField(max_length=30)
    specified_month = models.DateField(null=True, blank=True)
    percent = models.PositiveSmallIntegerField()

    history = HistoricalRecords()  # issue 12: an admin edit of a line (18% -> 50%) keeps its history

    class Meta:
        ordering = ["election", "account_kind", "specified_month"]


class DeferralCancellation(models.Model):
    """The Committee cancels deferrals (EDCP 3.7) after an unforeseeable emergency or a 401(k) hardship."""

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="deferral_cancellations"
    )
    starts_on = models.DateField()
    ends_on = models.DateField()
    reason = models.CharField(max_length=300)
    cite = models.CharField(max_length=60)
    decided_by = models.CharField(max_length=200)
    decided_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["-starts_on"]


class DistributionElection(ElectionBase):
    """The payment schedule of an account (EDCP 5.1(c), 5.2(c)), filed with the first deferral into it."""

    class Form(models.TextChoices):
        LUMP_SUM = "lump_sum", "Lump sum"
        INSTALLMENTS = "installments", "Annual installments"
        LUMP_SUM_AND_INSTALLMENTS = "lump_sum_and_installments", "Percentage lump sum, then installments"

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="distribution_elections"
    )
    account_kind = models.CharField(max_length=30)
    specified_month = models.DateField(null=True, blank=True)
    form = models.CharField(max_length=30, choices=Form.choices)
    installments = models.PositiveSmallIntegerField(null=True, blank=True)
    lump_sum_percent = models.PositiveSmallIntegerField(null=True, blank=True)
    delay_months = models.PositiveSmallIntegerField(
        default=0, help_text="EDCP 5.1(b): a later first payment, in months after the standard date"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["-submitted_at", "-id"]

    def __str__(self) -> str:
        return f"{self.participation} {self.account_kind} {self.form} ({self.status})"


class ScheduleChange(ElectionBase):
    """A change of an account's payment schedule under EDCP Article VI."""

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="schedule_changes"
    )
    account_kind = models.CharField(max_length=30)
    specified_month = models.DateField(null=True, blank=True, help_text="The account (its original month)")
    new_month = models.DateField(null=True, blank=True, help_text="Specified Date Accounts: the new month")
    delay_years = models.PositiveSmallIntegerField(null=True, blank=True)
    form = models.CharField(max_length=30, blank=True)
    installments = models.PositiveSmallIntegerField(null=True, blank=True)
    previous_first_payment = models.DateField(null=True, blank=True)
    new_first_payment = models.DateField(null=True, blank=True)
    takes_effect_on = models.DateField(
        null=True,
        blank=True,
        help_text="EDCP 6.2: a change takes effect no sooner than 12 months after it is made",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["-submitted_at", "-id"]


class InvestmentElection(ElectionBase):
    """An allocation among the plan's notional funds (EDCP 7.4, RRP 3.05), effective the next Valuation Date."""

    class AppliesTo(models.TextChoices):
        FUTURE = "future", "Future credits"
        EXISTING = "existing", "Existing balances"
        BOTH = "both", "Future credits and existing balances"

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="investment_elections"
    )
    applies_to = models.CharField(max_length=10, choices=AppliesTo.choices, default=AppliesTo.BOTH)
    effective_on = models.DateField(null=True, blank=True)
    rebalanced_on = models.DateField(null=True, blank=True, help_text="When existing balances were exchanged")
    history = HistoricalRecords()

    class Meta:
        ordering = ["-effective_on", "-submitted_at", "-id"]
        indexes = [models.Index(fields=["participation", "status", "effective_on"])]


class InvestmentElectionLine(models.Model):
    election = models.ForeignKey(InvestmentElection, on_delete=models.CASCADE, related_name="lines")
    fund = models.ForeignKey(Fund, on_delete=models.PROTECT, related_name="+")
    percent = models.PositiveSmallIntegerField()

    history = HistoricalRecords()  # issue 12: an admin edit of a line (18% -> 50%) keeps its history

    class Meta:
        ordering = ["election", "fund"]
        constraints = [
            models.UniqueConstraint(fields=["election", "fund"], name="one_line_per_fund"),
            models.CheckConstraint(
                condition=Q(percent__gte=1, percent__lte=100), name="investment_percent_1_100"
            ),
        ]


class EnrollmentWindow(models.Model):
    """A period in which the Committee takes deferral elections (EDCP 3.2, RRP 2.03).

    A window never closes after the plan's own deadline (11:59 pm Eastern on December 31 before
    the plan year; six months before a performance period ends; 30 days after the notice of
    initial eligibility). When the Committee has opened windows of a kind for a plan year, an
    election of that kind outside every one of them is refused; with no window recorded, only the
    plan's deadlines apply (the simulator records none).
    """

    class Kind(models.TextChoices):
        ANNUAL = "annual", "Annual enrollment"
        FIRST_YEAR = "first_year", "First year of eligibility"
        PERFORMANCE = "performance", "Performance-Based Compensation"

    plan = models.ForeignKey("plans.Plan", on_delete=models.PROTECT, related_name="enrollment_windows")
    plan_year = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    participation = models.ForeignKey(
        Participation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="enrollment_windows",
        help_text="First-year windows: whose window",
    )
    performance_period_start = models.DateField(null=True, blank=True)
    performance_period_end = models.DateField(null=True, blank=True)
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    reminder_days = models.JSONField(
        default=list,
        blank=True,
        help_text="Days before the close on which those who have not elected are reminded",
    )
    note = models.CharField(max_length=300, blank=True)
    opened_by = models.CharField(max_length=200)
    opened_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["-plan_year", "plan", "kind", "opens_at"]
        indexes = [models.Index(fields=["plan", "plan_year", "kind"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(closes_at__gt=models.F("opens_at")), name="window_closes_after_it_opens"
            ),
            models.CheckConstraint(
                condition=~Q(kind="first_year") | Q(participation__isnull=False),
                name="first_year_window_names_its_participant",
            ),
            models.CheckConstraint(
                condition=~Q(kind="performance")
                | Q(performance_period_start__isnull=False, performance_period_end__isnull=False),
                name="performance_window_names_its_period",
            ),
            models.UniqueConstraint(
                fields=["participation"],
                condition=Q(kind="first_year"),
                name="one_first_year_window_per_participation",
            ),
        ]

    def __str__(self) -> str:
        who = f" {self.participation.person.employee_number}" if self.participation is not None else ""
        return f"{self.plan.code} {self.plan_year} {self.get_kind_display()}{who}"

    def is_open(self, moment) -> bool:
        return self.opens_at <= moment <= self.closes_at

    @property
    def performance_period(self) -> tuple[datetime.date, datetime.date] | None:
        """(start, end) of a performance-period window; None for the other kinds."""
        if self.performance_period_start is None or self.performance_period_end is None:
            return None
        return self.performance_period_start, self.performance_period_end


class ElectionNotice(models.Model):
    """An email sent about elections: the notice of initial eligibility, a window opening, a reminder, the
    window's closing (what will be in force)."""

    class Kind(models.TextChoices):
        ELIGIBILITY = "eligibility", "Notice of initial eligibility"
        OPENED = "opened", "Enrollment window open"
        REMINDER = "reminder", "Reminder to elect"
        CLOSING = "closing", "Enrollment window closing"

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="election_notices"
    )
    window = models.ForeignKey(
        EnrollmentWindow, null=True, blank=True, on_delete=models.PROTECT, related_name="notices"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    sent_on = models.DateField(help_text="The business day (Eastern) it was sent for")
    sent_at = models.DateTimeField()
    to = models.CharField(max_length=254, blank=True)
    subject = models.CharField(max_length=300)
    delivered = models.BooleanField(
        default=True, help_text="False when the person has no email address on file"
    )
    actor = models.CharField(max_length=200)

    class Meta:
        ordering = ["-sent_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["participation", "window", "kind", "sent_on"],
                name="one_notice_per_window_kind_and_day",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} to {self.participation} on {self.sent_on}"


class AnnuityElection(ElectionBase):
    """BRP 4.2(c) form of benefit and 4.2(d) changes: a change of time or form takes effect no sooner
    than 12 months after it is made and defers payment at least five years."""

    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="annuity_elections"
    )
    form = models.CharField(max_length=30)
    defer_years = models.PositiveSmallIntegerField(
        default=0, help_text="Years after the Benefit Commencement Date"
    )
    previous_form = models.CharField(max_length=30, blank=True)
    previous_defer_years = models.PositiveSmallIntegerField(default=0)
    is_change = models.BooleanField(
        default=False, help_text="A change of time or form for Section 409A (BRP 4.2(d))"
    )
    takes_effect_on = models.DateField(null=True, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-submitted_at", "-id"]

    def __str__(self) -> str:
        return f"{self.participation} annuity form {self.form} ({self.status})"
