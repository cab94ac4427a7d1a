from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from core.encrypted import EncryptedTextField
from plans.models import Plan


class Person(models.Model):
    """An employee or former employee. No Social Security number is kept."""

    class MaritalStatus(models.TextChoices):
        SINGLE = "single", "Single"
        MARRIED = "married", "Married"
        DIVORCED = "divorced", "Divorced"
        WIDOWED = "widowed", "Widowed"

    employee_number = models.CharField(max_length=20, unique=True)
    first_name = models.CharField(max_length=100)
    last_name = models.CharField(max_length=100)
    birth_date = models.DateField()
    hire_date = models.DateField()
    marital_status = models.CharField(
        max_length=10, choices=MaritalStatus.choices, default=MaritalStatus.SINGLE
    )
    email = models.EmailField(blank=True)
    address_line1 = models.CharField(max_length=200, blank=True)
    address_line2 = models.CharField(max_length=200, blank=True)
    city = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=2, blank=True)
    postal_code = models.CharField(max_length=10, blank=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="person"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["last_name", "first_name", "employee_number"]
        # The staff list's order, read a page at a time (issue 15); its prefix searches: migration 0006.
        indexes = [
            models.Index(fields=["last_name", "first_name", "employee_number"], name="person_name_order")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(hire_date__gt=models.F("birth_date")), name="hired_after_birth"
            )
        ]

    def __str__(self) -> str:
        return f"{self.full_name} ({self.employee_number})"

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"

    @property
    def has_address(self) -> bool:
        return bool(self.address_line1 and self.city and self.state and self.postal_code)

    @property
    def address_lines(self) -> list[str]:
        lines = [
            self.address_line1,
            self.address_line2,
            f"{self.city}, {self.state} {self.postal_code}".strip(", "),
        ]
        return [line for line in lines if line and line.strip()]

    def event_of(self, kind: str) -> EmploymentEvent | None:
        return self.employment_events.filter(kind=kind).order_by("effective_date").first()


class Participation(models.Model):
    """A person's participation in one plan."""

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="participations")
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="participations")
    eligible_on = models.DateField(
        null=True,
        blank=True,
        help_text="Date of the Committee's notice of initial eligibility (EDCP 3.2(a), RRP 2.03(c))",
    )
    entered_on = models.DateField(help_text="Date participation began")
    ended_on = models.DateField(null=True, blank=True, help_text="Date the last benefit was paid")
    eligible = models.BooleanField(
        default=True, help_text="Still an Eligible Employee (may defer for later plan years)"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["plan__code", "person__last_name"]
        constraints = [models.UniqueConstraint(fields=["person", "plan"], name="one_participation_per_plan")]

    def __str__(self) -> str:
        return f"{self.person} in {self.plan.code}"


class EmploymentEvent(models.Model):
    """Separation, death, disability, retirement: the events that trigger benefits."""

    class Kind(models.TextChoices):
        SEPARATION = "separation", "Separation from Service"
        DEATH = "death", "Death"
        DISABILITY = "disability", "Total and Permanent Disability"
        REHIRE = "rehire", "Rehire"

    class Reason(models.TextChoices):
        RESIGNATION = "resignation", "Resignation"
        RETIREMENT = "retirement", "Retirement"
        INVOLUNTARY = "involuntary", "Involuntary"
        DEATH = "death", "Death"
        NONE = "", "-"

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="employment_events")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    reason = models.CharField(max_length=12, choices=Reason.choices, blank=True)
    effective_date = models.DateField()
    recorded_at = models.DateTimeField()
    recorded_by = models.CharField(max_length=200)
    note = models.TextField(blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["effective_date", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["person"], condition=Q(kind="death"), name="one_death_per_person"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.person} {self.kind} {self.effective_date}"


class ChangeInControl(models.Model):
    """A Change in Control event of the sponsor (EDCP 1.4), company-wide."""

    effective_date = models.DateField(unique=True)
    description = models.CharField(max_length=300, blank=True)
    recorded_at = models.DateTimeField()
    recorded_by = models.CharField(max_length=200)
    history = HistoricalRecords()

    class Meta:
        ordering = ["effective_date"]

    def __str__(self) -> str:
        return f"Change in control {self.effective_date}"


class KeyEmployeeList(models.Model):
    """The Key Employees identified as of December 31 of `identification_year` (EDCP 1.20, RRP 1.14, BRP 1.3(i)).

    They are Key Employees for the twelve months starting the next April 1. A year with no list
    recorded is unknown, and separation payments that depend on it are held until staff record it.
    """

    identification_year = models.PositiveIntegerField(unique=True)
    members = models.ManyToManyField(Person, blank=True, related_name="key_employee_lists")
    recorded_at = models.DateTimeField()
    recorded_by = models.CharField(max_length=200)
    note = models.TextField(blank=True)
    history = HistoricalRecords(m2m_fields=[members])

    class Meta:
        ordering = ["-identification_year"]

    def __str__(self) -> str:
        return f"Key Employees identified {self.identification_year}-12-31"

    @staticmethod
    def identification_year_for(day: dt.date, effective_month: int = 4, effective_day: int = 1) -> int:
        """Which list governs `day`: the one identified the December 31 before the last April 1."""
        if (day.month, day.day) >= (effective_month, effective_day):
            return day.year - 1
        return day.year - 2


class VestingServiceCredit(models.Model):
    """Years of Vesting Service completed by the end of a calendar year (from the RSP records)."""

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="vesting_service")
    through_year = models.PositiveIntegerField()
    years = models.PositiveIntegerField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["person", "through_year"]
        constraints = [
            models.UniqueConstraint(fields=["person", "through_year"], name="one_service_figure_per_year")
        ]


class BeneficiaryDesignation(models.Model):
    """A designation of beneficiaries for one plan; the newest received is in force."""

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="beneficiary_designations")
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="+")
    received_at = models.DateTimeField()
    recorded_by = models.CharField(max_length=200)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"Beneficiaries of {self.person} in {self.plan.code} ({self.received_at:%Y-%m-%d})"


class Beneficiary(models.Model):
    class Tier(models.TextChoices):
        PRIMARY = "primary", "Primary"
        CONTINGENT = "contingent", "Contingent"

    designation = models.ForeignKey(
        BeneficiaryDesignation, on_delete=models.CASCADE, related_name="beneficiaries"
    )
    tier = models.CharField(max_length=10, choices=Tier.choices)
    name = models.CharField(max_length=200)
    relationship = models.CharField(max_length=60, blank=True)
    percent = models.PositiveSmallIntegerField()
    birth_date = models.DateField(null=True, blank=True, help_text="As the designation gives it (optional)")
    deceased_on = models.DateField(null=True, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-tier", "-percent", "name"]  # primary before contingent
        constraints = [
            models.CheckConstraint(
                condition=Q(percent__gte=1, percent__lte=100), name="beneficiary_percent_1_100"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.tier} {self.percent}%)"


class BeneficiaryTaxInfo(models.Model):
    """A beneficiary's taxpayer identification number and mailing address, for Form 1099-MISC after a death.

    Kept apart from Beneficiary (whose history table copies every field) and without a history of its own: it
    is read only by the year-end 1099 file (taxes app), by staff holding the view_tax_ids capability, and
    shown masked everywhere else (RULES.md "FICA special timing and year-end tax reporting").
    """

    beneficiary = models.OneToOneField(Beneficiary, on_delete=models.CASCADE, related_name="tax_info")
    # Encrypted at rest (core/crypto.py); in clear only in the 1099-MISC file (view_tax_ids), masked everywhere else.
    taxpayer_number = EncryptedTextField(help_text="SSN or ITIN, 9 digits; stored encrypted")
    address_line1 = models.CharField(max_length=200)
    address_line2 = models.CharField(max_length=200, blank=True)
    city = models.CharField(max_length=100)
    state = models.CharField(max_length=2)
    postal_code = models.CharField(max_length=10)
    email = models.EmailField(
        blank=True, help_text="The payment advice goes by email when given, else on paper to the address"
    )
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"Tax information of {self.beneficiary.name} ({self.masked_number})"

    @property
    def masked_number(self) -> str:
        return f"***-**-{self.taxpayer_number[-4:]}"

    @property
    def address_lines(self) -> list[str]:
        lines = [
            self.address_line1,
            self.address_line2,
            f"{self.city}, {self.state} {self.postal_code}".strip(", "),
        ]
        return [line for line in lines if line and line.strip()]
