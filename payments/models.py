"""Payment schedules, the payments they plan, payment runs (maker-checker) and withholding tables.

A PaymentSchedule is the plan's answer for one account at one moment: which benefit pays it, on
which Payment Dates, valued as of which dates, under which sections. It is recomputed whenever an
event or a schedule change arrives; each recomputation bumps `revision`, keeps the payments already
released or paid, cancels the unpaid ones that no longer belong and adds the new ones. History of
every row comes from django-simple-history.

A death benefit is paid to the Beneficiaries (EDCP 5.4, RRP 4.01(a)): one ScheduledPayment per payee,
each a `part` of the whole value by its percentage (the last takes what rounding leaves). Money
credited to an account after its benefit was paid in full is paid by a `residual` schedule
(payments.services.residuals).

A ScheduledPayment moves: scheduled -> valued (gross amount fixed as of its valuation date) ->
in_run (a staff member prepared a run) -> released (a second staff member approved the run: the
distribution is queued in the books for its release date) -> paid (the crediting of that Valuation
Date sold the units). `held` parks a payment on the staff work queue with a reason until resolved.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords


class PaymentSchedule(models.Model):
    class Kind(models.TextChoices):
        BENEFIT = "benefit", "Benefit schedule of the account"
        EMERGENCY = "emergency", "Unforeseeable emergency withdrawal"
        DRO = "domestic_relations_order", "Domestic relations order"
        RESIDUAL = "residual", "Money credited after the benefit was paid in full"

    participation = models.ForeignKey(
        "participants.Participation", on_delete=models.PROTECT, related_name="payment_schedules"
    )
    account = models.ForeignKey("books.Account", on_delete=models.PROTECT, related_name="payment_schedules")
    kind = models.CharField(max_length=30, choices=Kind.choices, default=Kind.BENEFIT)
    trigger = models.CharField(
        max_length=30, blank=True, help_text="What makes the account payable (empty: nothing yet)"
    )
    trigger_date = models.DateField(null=True, blank=True)
    benefit = models.CharField(max_length=120, blank=True)
    form = models.CharField(max_length=30, blank=True)
    installments = models.PositiveSmallIntegerField(null=True, blank=True)
    cite = models.CharField(max_length=60, blank=True)
    summary = models.TextField(blank=True, help_text="Why these dates, in words, with the sections")
    hold_reason = models.TextField(blank=True)
    provisional_until = models.DateField(
        null=True,
        blank=True,
        help_text="Recompute once this Valuation Date is credited (a test on the value at the event)",
    )
    revision = models.PositiveIntegerField(default=0)
    settled_on = models.DateField(
        null=True,
        blank=True,
        help_text="Benefit paid in full and the account empty through this credited Valuation Date; "
        "money credited later is paid as a residual",
    )
    computed_at = models.DateTimeField()
    computed_because = models.CharField(max_length=200, blank=True)
    emergency = models.ForeignKey(
        "payments.EmergencyWithdrawal",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="schedules",
    )
    dro = models.ForeignKey(
        "payments.DomesticRelationsOrder",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="schedules",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["participation", "account"]
        constraints = [
            models.UniqueConstraint(
                fields=["account"], condition=Q(kind="benefit"), name="one_benefit_schedule_per_account"
            )
        ]
        indexes = [models.Index(fields=["provisional_until"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of account {self.account_id} (rev. {self.revision})"


class ScheduledPayment(models.Model):
    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        HELD = "held", "Held"
        VALUED = "valued", "Valued"
        IN_RUN = "in_run", "In a payment run"
        APPROVED = "approved", "Approved"
        RELEASED = "released", "Released to the books"
        PAID = "paid", "Paid"
        CANCELLED = "cancelled", "Cancelled"

    class Kind(models.TextChoices):
        LUMP_SUM = "lump_sum", "Lump sum"
        INSTALLMENT = "installment", "Installment"
        ANNUITY = "annuity", "Monthly annuity payment"

    class Share(models.TextChoices):
        ALL = "all", "The whole (vested) value"
        PERCENT = "percent", "A percentage of the value"
        INSTALLMENT = "installment", "Value divided by the installments left"
        FIXED = "fixed", "A fixed amount"
        LIQUIDATE = "liquidate", "Everything, valued on the release date"
        DEFINED = "defined", "A defined benefit amount (moves no notional units)"
        PART = "part", "A payee's percentage of the whole value"
        LIQUIDATE_PART = "liquidate_part", "A payee's percentage of everything, valued on the release date"

    MUTABLE = (Status.SCHEDULED, Status.HELD, Status.VALUED, Status.IN_RUN)
    OUTSTANDING = (Status.VALUED, Status.IN_RUN, Status.APPROVED)
    PARTS = (Share.PART, Share.LIQUIDATE_PART)
    LIQUIDATING = (Share.LIQUIDATE, Share.LIQUIDATE_PART)

    schedule = models.ForeignKey(PaymentSchedule, on_delete=models.PROTECT, related_name="payments")
    # No index of their own: the indexes (account, status) and (participation, payment_date) below begin with them
    # and serve every lookup by either (and the foreign keys' checks); a second index on each cost every insert.
    account = models.ForeignKey(
        "books.Account", on_delete=models.PROTECT, related_name="scheduled_payments", db_index=False
    )
    participation = models.ForeignKey(
        "participants.Participation",
        on_delete=models.PROTECT,
        related_name="scheduled_payments",
        db_index=False,
    )
    revision = models.PositiveIntegerField(default=0, help_text="The schedule revision that planned it")
    trigger = models.CharField(max_length=30)
    benefit = models.CharField(max_length=120, blank=True)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    number = models.PositiveSmallIntegerField(default=1)
    of = models.PositiveSmallIntegerField(default=1)
    share = models.CharField(max_length=16, choices=Share.choices)
    percent = models.DecimalField(max_digits=7, decimal_places=4, null=True, blank=True)
    payment_date = models.DateField()
    valuation_rule = models.CharField(max_length=40)
    valued_as_of = models.DateField(null=True, blank=True)
    valuable_on = models.DateField(help_text="The Valuation Date whose crediting the valuation needs")
    release_date = models.DateField(help_text="The first Valuation Date on or after the Payment Date")
    cite = models.CharField(max_length=60, help_text="The section behind the Payment Date")
    reason = models.CharField(max_length=300, help_text="Why this date, in words")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SCHEDULED)
    hold_code = models.CharField(max_length=30, blank=True)
    hold_reason = models.TextField(blank=True)
    amount = models.DecimalField(
        max_digits=14, decimal_places=2, null=True, blank=True, help_text="Gross amount"
    )
    amount_is_estimate = models.BooleanField(default=False)
    federal_withholding = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    state_withholding = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    state = models.CharField(max_length=2, blank=True)
    net_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    withholding_basis = models.CharField(max_length=300, blank=True)
    run = models.ForeignKey(
        "payments.PaymentRun", null=True, blank=True, on_delete=models.PROTECT, related_name="payments"
    )
    # One distribution per payment; the payees of one liquidating death benefit share theirs.
    pending = models.ForeignKey(
        "books.PendingTransaction",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="scheduled_payments",
    )
    paid_on = models.DateField(null=True, blank=True)
    payee_name = models.CharField(
        max_length=200, blank=True, help_text="Empty: the participant (or the estate)"
    )
    cancelled_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()
    # The history is read by payment (its `id`) and by date, never by schedule, account, participation, run or
    # distribution: those indexes, which simple-history copies from the model, only cost each history row's insert
    # (two rows for most payments; some 1.4 million of each at a conversion of 100,000 participants).
    history = HistoricalRecords(no_db_index=["schedule", "account", "participation", "run", "pending"])

    class Meta:
        ordering = ["payment_date", "account", "number"]
        indexes = [
            models.Index(fields=["status", "valuable_on"]),
            models.Index(fields=["status", "release_date"]),
            models.Index(fields=["account", "status"]),
            models.Index(fields=["participation", "payment_date"]),
            # the staff's upcoming payments (every status but cancelled, by release date): a range, not a scan
            models.Index(fields=["release_date"], name="payment_release_date"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(amount__isnull=True) | Q(amount__gte=0), name="payment_amount_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.number}/{self.of} {self.payment_date} account {self.account_id} ({self.status})"

    @property
    def label(self) -> str:
        if self.kind == self.Kind.INSTALLMENT:
            return f"Installment {self.number} of {self.of}"
        if self.kind == self.Kind.ANNUITY:
            return f"Monthly payment {self.number}" + (f" of {self.of} guaranteed" if self.of > 1 else "")
        return "Lump sum"

    @property
    def moves_units(self) -> bool:
        """A defined benefit (BRP) payment is a fixed amount: it sells no notional units when released."""
        return self.share != self.Share.DEFINED

    def payee_label(self) -> str:
        """Who is paid: the named payee (with its percentage of a shared benefit), else the participant."""
        if not self.payee_name:
            return self.participation.person.full_name
        if self.share in self.PARTS and self.percent is not None:
            return f"{self.payee_name} ({self.percent.normalize():f}%)"
        return self.payee_name


class PaymentRun(models.Model):
    """Payments due in a period, prepared by one staff member and approved (released) by another."""

    class Status(models.TextChoices):
        PREPARED = "prepared", "Prepared"
        RELEASED = "released", "Approved and released"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PREPARED)
    period_start = models.DateField(null=True, blank=True)
    period_end = models.DateField()
    prepared_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    prepared_at = models.DateTimeField()
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    payments_count = models.PositiveIntegerField(default=0)
    gross_total = models.DecimalField(max_digits=16, decimal_places=2, default=0)
    federal_total = models.DecimalField(max_digits=16, decimal_places=2, default=0)
    state_total = models.DecimalField(max_digits=16, decimal_places=2, default=0)
    net_total = models.DecimalField(max_digits=16, decimal_places=2, default=0)
    register = models.ForeignKey(
        "core.Document", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["-prepared_at", "-id"]
        indexes = [models.Index(fields=["status", "prepared_at"], name="payment_run_status")]  # list filter
        constraints = [
            models.CheckConstraint(
                condition=Q(approved_by__isnull=True) | ~Q(approved_by=models.F("prepared_by")),
                name="run_not_approved_by_its_preparer",
            )
        ]

    def __str__(self) -> str:
        return f"Payment run {self.pk} through {self.period_end} ({self.status})"


class WithholdingRate(models.Model):
    """A dated withholding rate the Committee maintains (EDCP 8.3, RRP 4.03, BRP 10.1).

    federal_supplemental: the flat rate on supplemental wages up to `threshold` in the calendar year;
    federal_mandatory: the rate on supplemental wages above `threshold`; state: per state code
    (jurisdiction "*" is the default for a state without its own row).
    """

    class Kind(models.TextChoices):
        FEDERAL_SUPPLEMENTAL = "federal_supplemental", "Federal supplemental rate"
        FEDERAL_MANDATORY = "federal_mandatory", "Federal rate above the threshold"
        STATE = "state", "State rate"

    kind = models.CharField(max_length=30, choices=Kind.choices)
    jurisdiction = models.CharField(
        max_length=2, blank=True, help_text="State code; '*' any other state; blank for federal"
    )
    rate = models.DecimalField(max_digits=7, decimal_places=4, help_text="Percent")
    threshold = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    effective_date = models.DateField()
    source = models.CharField(max_length=300, blank=True)
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["kind", "jurisdiction", "-effective_date"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "jurisdiction", "effective_date"], name="one_rate_per_kind_place_date"
            ),
            models.CheckConstraint(condition=Q(rate__gte=0, rate__lte=100), name="withholding_rate_0_100"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.get_kind_display()} {self.jurisdiction or 'US'} {self.rate}% from {self.effective_date}"
        )


class EmergencyWithdrawal(models.Model):
    """An unforeseeable emergency request and the Committee's decision (EDCP 5.5)."""

    class Status(models.TextChoices):
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"

    participation = models.ForeignKey(
        "participants.Participation", on_delete=models.PROTECT, related_name="emergency_withdrawals"
    )
    requested_amount = models.DecimalField(max_digits=14, decimal_places=2)
    requested_on = models.DateField()
    need = models.TextField(
        blank=True, help_text="The emergency and the need, as the participant describes it"
    )
    documents = models.TextField(
        blank=True, help_text="The documents supplied (bills, notices, insurance statements)"
    )
    channel = models.CharField(max_length=10, default="staff", help_text="staff, portal, api or simulator")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.REQUESTED)
    approved_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    decided_on = models.DateField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    cite = models.CharField(max_length=60, blank=True)
    deferrals_cancelled = models.BooleanField(default=False)
    cancellation = models.ForeignKey(
        "elections.DeferralCancellation",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The Committee's cancellation of deferrals (EDCP 3.7)",
    )
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["-requested_on", "-id"]
        indexes = [models.Index(fields=["status", "requested_on"], name="emergency_status")]  # list filter

    def __str__(self) -> str:
        return f"Emergency request {self.requested_amount} on {self.requested_on} ({self.status})"


class DomesticRelationsOrder(models.Model):
    """A domestic relations order paying an alternate payee a lump sum (EDCP 5.9, RRP 2017 4.01(c))."""

    participation = models.ForeignKey(
        "participants.Participation", on_delete=models.PROTECT, related_name="domestic_relations_orders"
    )
    alternate_payee = models.CharField(max_length=200)
    alternate_payee_email = models.EmailField(
        blank=True, help_text="The payment advice goes by email when given, else on paper"
    )
    alternate_payee_address = models.TextField(
        blank=True, help_text="The alternate payee's mailing address, one line per line"
    )
    order_date = models.DateField()
    percent = models.PositiveSmallIntegerField(null=True, blank=True)
    amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    account_name = models.CharField(max_length=40, blank=True)
    total = models.DecimalField(max_digits=14, decimal_places=2)
    cite = models.CharField(max_length=60)
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["-order_date", "-id"]

    def __str__(self) -> str:
        return f"DRO {self.order_date} to {self.alternate_payee}: {self.total}"


class Annuity(models.Model):
    """A defined benefit paid monthly (BRP 4.2): the figures it was fixed on and how far its payments are planned.

    One per benefit schedule of a defined benefit plan's account. The figures are recomputed from the
    Pension Plan figures, the form in force and the events until a payment of the schedule is released;
    from then on they are fixed (BRP 3.4(c)) and only deaths change what is paid. Monthly payments are
    planned a rolling twelve months ahead; the daily payment job extends them.
    """

    class Status(models.TextChoices):
        NOT_PAYABLE = "not_payable", "No benefit is payable"
        HELD = "held", "Held: an input is missing"
        IN_PAY = "in_pay", "In pay"
        COMPLETE = "complete", "Every payment is planned"

    schedule = models.OneToOneField(PaymentSchedule, on_delete=models.PROTECT, related_name="annuity")
    participation = models.ForeignKey(
        "participants.Participation", on_delete=models.PROTECT, related_name="annuities"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.HELD)
    benefit = models.CharField(max_length=120, blank=True)
    trigger = models.CharField(max_length=30, blank=True)
    event_date = models.DateField(null=True, blank=True)
    commencement_date = models.DateField(null=True, blank=True)
    first_payment_date = models.DateField(null=True, blank=True)
    form = models.CharField(max_length=30, blank=True)
    form_label = models.CharField(max_length=120, blank=True)
    single_life_annual = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    maximum_benefit = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    annual = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    monthly = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Each monthly payment (the lump sum for the lump sum form)",
    )
    lump_sum_value = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    survivor_percent = models.PositiveSmallIntegerField(default=0)
    survivor_monthly = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    certain_months = models.PositiveSmallIntegerField(default=0)
    payee_name = models.CharField(max_length=200, blank=True, help_text="Empty: the participant")
    survivor_name = models.CharField(max_length=200, blank=True)
    survivor_died_on = models.DateField(null=True, blank=True)
    record = models.ForeignKey(
        "books.DefinedBenefitRecord",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="annuities",
    )
    basis = models.CharField(max_length=300, blank=True)
    steps = models.JSONField(default=list, blank=True)
    notes = models.JSONField(default=list, blank=True)
    pre_2005 = models.JSONField(
        default=dict,
        blank=True,
        help_text="BRP Appendix A: the Pre-2005 Supplemental Benefit paid apart, in the Pension Plan's form "
        "(form, form_label, start, monthly, survivor_percent, survivor_monthly); empty without one",
    )
    fixed_on = models.DateField(
        null=True, blank=True, help_text="The Payment Date of the first payment released"
    )
    scheduled_through = models.DateField(
        null=True, blank=True, help_text="Payments are planned up to this date"
    )
    computed_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["participation", "id"]
        indexes = [models.Index(fields=["status", "scheduled_through"])]

    def __str__(self) -> str:
        return f"{self.benefit or 'Annuity'} of {self.participation} ({self.status})"


class TakenOverOverride(models.Model):
    """An override of an account's election that a prior administrator determined before a conversion (EDCP 5.6
    change in control, 5.7 small balance; FORMAT.md `payment_schedules.csv` `override`).

    The schedule engine cannot make that test itself on books that begin on the conversion date (the value at
    separation, or the change in control, is not in them), so it honors the prior determination: the plan's lump
    sum of that override, on the plan's Payment Date for it (payments.services.engine)."""

    class Kind(models.TextChoices):
        SMALL_BALANCE = "small_balance", "Small balance (EDCP 5.7)"
        CHANGE_IN_CONTROL = "change_in_control", "Change in control (EDCP 5.6)"

    account = models.OneToOneField(
        "books.Account", on_delete=models.PROTECT, related_name="taken_over_override"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source = models.CharField(
        max_length=300, help_text="Where the determination comes from (package, file, line)"
    )
    recorded_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.get_kind_display()} taken over for account {self.account_id}"
