"""The plan's books: notional accounts, positions in notional funds, and an append-only ledger.

Money moves in two steps. A credit or debit is first a PendingTransaction (the pay date or payment
date is its effective date); the crediting job of the next Valuation Date turns it into
LedgerEntry rows at that day's prices (EDCP 7.1, RRP 3.03/3.05). Every Valuation Date the job also
writes one DailyValuation row per position: units, price, value and the earnings credited that day.
LedgerEntry and DailyValuation rows are never updated or deleted (database triggers refuse it);
a correction is a reversing entry.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from participants.models import Participation, Person
from plans.models import Fund


class Account(models.Model):
    """A (sub-)account of a participation: Retirement/Termination, a Specified Date Account, Matching..."""

    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="accounts")
    kind = models.CharField(max_length=30)
    specified_month = models.DateField(
        null=True,
        blank=True,
        help_text="Specified Date Accounts: the month first chosen (first day of month)",
    )
    opened_on = models.DateField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["participation", "kind", "specified_month"]
        constraints = [
            models.UniqueConstraint(
                fields=["participation", "kind"],
                condition=Q(specified_month__isnull=True),
                name="one_account_per_kind",
            ),
            models.UniqueConstraint(
                fields=["participation", "kind", "specified_month"],
                condition=Q(specified_month__isnull=False),
                name="one_specified_date_account_per_month",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.participation.person.employee_number} {self.participation.plan.code} {self.name}"

    @property
    def name(self) -> str:
        if self.specified_month:
            return f"{self.kind}:{self.specified_month:%Y-%m}"
        return self.kind

    @property
    def label(self) -> str:
        spec = self.participation.plan.version_on(self.opened_on).account_spec(self.kind)
        base = spec["label"] if spec else self.kind.replace("_", " ").title()
        if self.specified_month:
            return f"{base} ({self.specified_month:%B %Y})"
        return base


class Position(models.Model):
    """Units of one notional fund held by one account. Balances live in the ledger, not here."""

    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="positions")
    fund = models.ForeignKey(Fund, on_delete=models.PROTECT, related_name="positions")

    class Meta:
        ordering = ["account", "fund"]
        constraints = [
            models.UniqueConstraint(fields=["account", "fund"], name="one_position_per_fund"),
            # what a ledger entry's (position, account) pair references (books/migrations/0007)
            models.UniqueConstraint(fields=["id", "account"], name="position_with_its_account"),
        ]

    def __str__(self) -> str:
        return f"{self.account} {self.fund.code}"


class Source(models.TextChoices):
    DEFERRAL = "deferral", "Deferral"
    MATCHING = "matching", "Matching contribution"
    RESTORATION = "restoration", "Retirement restoration contribution"
    COMPANY_MATCHING = "company_matching", "Company contribution (matching)"
    COMPANY_RETIREMENT = "company_retirement", "Company contribution (retirement)"
    DISTRIBUTION = "distribution", "Distribution"
    FORFEITURE = "forfeiture", "Forfeiture"
    EXCHANGE = "exchange", "Exchange"
    ADJUSTMENT = "adjustment", "Adjustment"


# The idempotency key of the opening entry of an account taken over in a conversion (conversion.apply): its books
# here begin on the conversion date, so a value from before that date is not in them (payments' small-balance test).
TAKEN_OVER_KEY_PREFIX = "conversion:"


class EntryKind(models.TextChoices):
    CREDIT = "credit", "Credit"
    FORFEITURE = "forfeiture", "Forfeiture"
    DISTRIBUTION = "distribution", "Distribution"
    EXCHANGE = "exchange", "Exchange"
    ADJUSTMENT = "adjustment", "Adjustment"
    REVERSAL = "reversal", "Reversal"


class PendingTransaction(models.Model):
    """Money waiting for its Valuation Date. Positive amounts go into the account, negative come out.

    `liquidate_all` sells every unit of the account (a final payment or a forfeiture of all); then
    the amount posted is whatever the units are worth that day.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPLIED = "applied", "Applied"
        CANCELLED = "cancelled", "Cancelled"

    # Indexed by (account, status) below; no index of its own (the crediting job updates every row it applies).
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="pending", db_index=False)
    kind = models.CharField(max_length=12, choices=EntryKind.choices)
    source = models.CharField(max_length=20, choices=Source.choices)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    liquidate_all = models.BooleanField(default=False)
    effective_date = models.DateField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    applied_on = models.DateField(null=True, blank=True, help_text="The Valuation Date it was applied")
    applied_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    idempotency_key = models.CharField(max_length=200)  # unique: see Meta (no LIKE index beside it)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    memo = models.CharField(max_length=300, blank=True)
    cite = models.CharField(max_length=60, blank=True)

    class Meta:
        ordering = ["effective_date", "id"]
        indexes = [
            # Only pending rows are looked up by date (the crediting job, its checks, the staff pages: every
            # query with a status asks for 'pending'), so applied rows leave this index: the crediting job's
            # pending -> applied UPDATE then writes one index entry fewer per row (books/migrations/0010).
            models.Index(
                fields=["effective_date"], condition=Q(status="pending"), name="pending_due_by_date"
            ),
            models.Index(fields=["account", "status"]),
        ]
        constraints = [models.UniqueConstraint(fields=["idempotency_key"], name="one_pending_per_key")]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.account} {self.effective_date} ({self.status})"


class LedgerEntry(models.Model):
    """A posted movement of units and money in one position. Append-only."""

    # One foreign key in the database for the pair: (position_id, account_id) references books_position
    # (id, account_id), so the entry's position exists and belongs to the entry's account (and that
    # account exists: the position references it). Created by books/migrations/0007 (SQLite: triggers);
    # on PostgreSQL since 0010 one statement-level check per INSERT over all the rows it inserted, with
    # the referenced side guarded by triggers on books_position (see that migration).
    position = models.ForeignKey(
        Position, on_delete=models.PROTECT, related_name="entries", db_constraint=False
    )
    # Indexed by (account, valuation_date) below; no index of its own (every entry posted pays for each index).
    account = models.ForeignKey(
        Account, on_delete=models.PROTECT, related_name="entries", db_index=False, db_constraint=False
    )
    kind = models.CharField(max_length=12, choices=EntryKind.choices)
    source = models.CharField(max_length=20, choices=Source.choices)
    effective_date = models.DateField()
    valuation_date = models.DateField()
    units = models.DecimalField(max_digits=20, decimal_places=6)
    price = models.DecimalField(max_digits=18, decimal_places=6)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    # PostgreSQL checks this reference once per INSERT statement, not once per row (books/migrations/0010:
    # a statement-level trigger over the inserted rows); SQLite keeps its foreign key.
    pending = models.ForeignKey(
        PendingTransaction,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="entries",
        db_constraint=False,
    )
    # Checked by the same statement-level trigger on PostgreSQL (books/migrations/0011: a foreign key fired one
    # event per inserted row at commit, NULL or not); SQLite keeps its foreign key.
    reverses = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="reversed_by",
        db_constraint=False,
    )
    idempotency_key = models.CharField(max_length=220)  # unique: see Meta (no LIKE index beside it)
    actor = models.CharField(max_length=200)
    posted_at = models.DateTimeField()
    memo = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["valuation_date", "id"]
        indexes = [
            models.Index(fields=["valuation_date"]),
            models.Index(fields=["account", "valuation_date"]),
        ]
        # A UniqueConstraint rather than unique=True: on PostgreSQL the field option adds a second,
        # varchar_pattern_ops index for LIKE 'prefix%' that nothing uses and every insert maintains.
        constraints = [models.UniqueConstraint(fields=["idempotency_key"], name="one_ledger_entry_per_key")]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"{self.valuation_date} {self.kind} {self.amount} ({self.units} units) {self.position}"


class DailyValuation(models.Model):
    """A position valued on a Valuation Date: the earnings credited that day and the running totals.

    value = round(units x price, 2); earnings = value - previous value - flow (the day's entries).
    Written set-based by the crediting job; append-only. FKs are not enforced by the database on
    this table so the daily insert stays fast; the rows are only ever written from existing positions.
    """

    position = models.ForeignKey(
        Position, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    account = models.ForeignKey(
        Account, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    fund = models.ForeignKey(
        Fund, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    valuation_date = models.DateField()
    units = models.DecimalField(max_digits=20, decimal_places=6)
    price = models.DecimalField(max_digits=18, decimal_places=6)
    value = models.DecimalField(max_digits=16, decimal_places=2)
    flow = models.DecimalField(max_digits=16, decimal_places=2)
    earnings = models.DecimalField(max_digits=16, decimal_places=2)

    class Meta:
        ordering = ["valuation_date", "position"]
        # Date first: each day's rows are appended at the end of the index, and the crediting job finds
        # the previous day's rows (books/services/crediting.py _VALUATION_SQL) through it.
        constraints = [
            models.UniqueConstraint(
                fields=["valuation_date", "position"], name="one_valuation_per_date_and_position"
            )
        ]

    def __str__(self) -> str:
        return f"{self.valuation_date} position {self.position_id}: {self.value}"


class PayrollRecord(models.Model):
    """One line of the payroll feed: a component of pay on a pay date (EDCP 7.1, RRP 3.03)."""

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="payroll_records")
    pay_date = models.DateField()
    component = models.CharField(max_length=30)
    gross = models.DecimalField(max_digits=14, decimal_places=2)
    plan_year = models.PositiveIntegerField(help_text="The plan year this pay belongs to (EDCP 3.2(b))")
    period_start = models.DateField(null=True, blank=True)
    performance_period_end = models.DateField(null=True, blank=True)
    net_available = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Cash pay left after required taxes and deductions (EDCP 1.14)",
    )
    sequence = models.PositiveIntegerField(default=1)
    batch = models.ForeignKey(
        "core.ImportBatch", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    line_number = models.PositiveIntegerField(null=True, blank=True)
    recorded_at = models.DateTimeField()
    actor = models.CharField(max_length=200)

    class Meta:
        ordering = ["pay_date", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["person", "pay_date", "component", "sequence"], name="one_pay_line"
            ),
            models.CheckConstraint(condition=Q(gross__gte=0), name="gross_not_negative"),
        ]
        indexes = [models.Index(fields=["person", "plan_year"])]

    def __str__(self) -> str:
        return f"{self.person.employee_number} {self.pay_date} {self.component} {self.gross}"


class PayrollDeferral(models.Model):
    """What one pay line meant for one plan: the election applied, the deferral, and any reduction."""

    record = models.ForeignKey(PayrollRecord, on_delete=models.PROTECT, related_name="deferrals")
    participation = models.ForeignKey(
        Participation, on_delete=models.PROTECT, related_name="payroll_deferrals"
    )
    election = models.ForeignKey(
        "elections.DeferralElection", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    compensation = models.DecimalField(max_digits=14, decimal_places=2)
    plan_compensation = models.DecimalField(max_digits=14, decimal_places=2)
    percent = models.DecimalField(max_digits=7, decimal_places=4)
    deferral = models.DecimalField(max_digits=14, decimal_places=2)
    matching = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    reduced_by = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["record", "participation"]
        constraints = [
            models.UniqueConstraint(fields=["record", "participation"], name="one_deferral_per_pay_and_plan")
        ]


class ContributionDeclaration(models.Model):
    """A contribution the Committee declares for a plan year (RRP 3.02 retirement restoration)."""

    plan = models.ForeignKey("plans.Plan", on_delete=models.PROTECT, related_name="declarations")
    plan_year = models.PositiveIntegerField()
    kind = models.CharField(max_length=30, default="retirement_restoration")
    percent = models.DecimalField(max_digits=7, decimal_places=4)
    declared_on = models.DateField()
    declared_by = models.CharField(max_length=200)
    participants_credited = models.PositiveIntegerField(default=0)
    total_credited = models.DecimalField(max_digits=16, decimal_places=2, default=0)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-plan_year"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "plan_year", "kind"], name="one_declaration_per_year")
        ]


class Forfeiture(models.Model):
    """An unvested amount forfeited at separation (EDCP 4.2, RRP 3.06)."""

    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="forfeitures")
    on = models.DateField()
    percent_vested = models.DecimalField(max_digits=7, decimal_places=4)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    pending = models.OneToOneField(PendingTransaction, on_delete=models.PROTECT, related_name="forfeiture")
    cite = models.CharField(max_length=60)

    class Meta:
        ordering = ["on", "id"]


class DefinedBenefitRecord(models.Model):
    """The Pension Plan figures a BRP benefit rests on (not modelled here: entered or imported per participant).

    Annual single-life amounts at Normal Retirement: the Pension Plan benefit without the Tax Limits
    (BRP 3.2(a)), any imputed service benefit (3.5), and the benefit the Pension Plan actually pays (3.2(b)).
    """

    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="db_records")
    as_of = models.DateField()
    unlimited_annual_benefit = models.DecimalField(max_digits=14, decimal_places=2)
    imputed_annual_benefit = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    payable_annual_benefit = models.DecimalField(max_digits=14, decimal_places=2)
    benefit_service_years = models.DecimalField(max_digits=6, decimal_places=2)
    early_retirement_date = models.DateField(null=True, blank=True)
    normal_retirement_date = models.DateField()
    early_adjustment_factor = models.DecimalField(
        max_digits=8,
        decimal_places=6,
        default=1,
        help_text="The Pension Plan's early-retirement reduction or late-retirement adjustment for the commencement date (BRP 3.3)",
    )
    pre_2005_annual_benefit = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        default=0,
        help_text="The Pre-2005 Supplemental Benefit (accrued and vested by December 31, 2004) as a single life "
        "annuity at Normal Retirement: outside 409A, paid at the time and in the form of the Pension Plan "
        "benefit (BRP Appendix A)",
    )
    spouse_name = models.CharField(
        max_length=200,
        blank=True,
        help_text="The Spouse (or survivor) of a joint and survivor form or of BRP 5.1",
    )
    spouse_birth_date = models.DateField(
        null=True, blank=True, help_text="Needed for the joint and survivor forms (BRP 4.2(c)) and 5.1"
    )
    source = models.CharField(max_length=200, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["participation", "-as_of"]
        constraints = [
            models.UniqueConstraint(fields=["participation", "as_of"], name="one_db_record_per_date"),
            models.CheckConstraint(
                condition=Q(unlimited_annual_benefit__gte=0)
                & Q(payable_annual_benefit__gte=0)
                & Q(pre_2005_annual_benefit__gte=0),
                name="db_benefits_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.participation} Pension Plan figures as of {self.as_of}"


# --- the parallel run after a conversion -------------------------------------------------------------------


class ParallelRunTolerance(models.Model):
    """The largest difference of value the Committee accepts between the prior recordkeeper's daily valuation and
    this system's during a parallel run (default one cent). The latest row is in force; each is kept."""

    amount = models.DecimalField(max_digits=12, decimal_places=2)
    set_by = models.CharField(max_length=200)
    set_at = models.DateTimeField()
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-set_at", "-id"]
        constraints = [models.CheckConstraint(condition=Q(amount__gte=0), name="tolerance_not_negative")]

    def __str__(self) -> str:
        return f"parallel-run tolerance {self.amount} set {self.set_at:%Y-%m-%d} by {self.set_by}"


class ParallelRun(models.Model):
    """One comparison of a prior recordkeeper's daily valuation file with this system's Valuation Date results
    (docs/parallel-run.md). Kept as it was made: the days and every difference above the tolerance."""

    file_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    rows = models.PositiveIntegerField()
    first_date = models.DateField()
    last_date = models.DateField()
    tolerance = models.DecimalField(max_digits=12, decimal_places=2)
    differences = models.PositiveIntegerField(default=0)
    run_by = models.CharField(max_length=200)
    run_at = models.DateTimeField()

    class Meta:
        ordering = ["-run_at", "-id"]

    def __str__(self) -> str:
        return f"parallel run {self.file_name} ({self.first_date} to {self.last_date})"


class ParallelRunDay(models.Model):
    """The totals of one Valuation Date of a parallel run."""

    run = models.ForeignKey(ParallelRun, on_delete=models.CASCADE, related_name="days")
    valuation_date = models.DateField()
    credited_here = models.BooleanField(
        help_text="this system has credited the date (else nothing is compared)"
    )
    prior_positions = models.PositiveIntegerField(default=0)
    our_positions = models.PositiveIntegerField(default=0)
    prior_value = models.DecimalField(max_digits=18, decimal_places=2, default=0)
    our_value = models.DecimalField(max_digits=18, decimal_places=2, default=0)
    differences = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run", "valuation_date"]
        constraints = [
            models.UniqueConstraint(fields=["run", "valuation_date"], name="one_total_per_run_day")
        ]

    @property
    def value_difference(self):
        return self.our_value - self.prior_value


class ParallelRunDifference(models.Model):
    """A position whose value differs by more than the tolerance, or whose units differ, or that one side lacks."""

    class Kind(models.TextChoices):
        DIFFERS = "differs", "Units or value differ"
        MISSING_HERE = "missing_here", "In the prior recordkeeper's file, not on this system"
        MISSING_THERE = "missing_there", "On this system, not in the prior recordkeeper's file"

    run = models.ForeignKey(ParallelRun, on_delete=models.CASCADE, related_name="difference_rows")
    valuation_date = models.DateField()
    line = models.PositiveIntegerField(
        null=True, blank=True, help_text="line of the file (none when missing there)"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    employee_number = models.CharField(max_length=40)
    plan_code = models.CharField(max_length=20)
    account = models.CharField(max_length=40)
    fund_code = models.CharField(max_length=20)
    prior_units = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    our_units = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    prior_value = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)
    our_value = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)

    class Meta:
        ordering = ["run", "valuation_date", "employee_number", "plan_code", "account", "fund_code"]
        indexes = [models.Index(fields=["run", "valuation_date"], name="parallel_diff_run_day")]

    @property
    def value_difference(self):
        return (self.our_value or 0) - (self.prior_value or 0)

    @property
    def units_difference(self):
        return (self.our_units or 0) - (self.prior_units or 0)
