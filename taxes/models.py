"""FICA special timing and year-end tax figures (RULES.md "FICA special timing and year-end tax reporting").

FicaWage rows are what payroll adds to Social Security and Medicare wages (26 CFR 31.3121(v)(2)-1). They are
derived from the books by one idempotent job (taxes.services.fica.fica_wages_record), not written by the
crediting, vesting and commencement services: the books already hold every fact (credits with their
effective dates, vesting events, values, the annuity's commencement), so one place applies the rule and a
rerun changes nothing. A figure that changes later (a reversal in the books) gets a new correcting row; a row
is never updated or deleted, so a feed already taken stays what it was.
"""

from __future__ import annotations

from django.db import models

from participants.models import Participation, Person


class FicaWage(models.Model):
    class Kind(models.TextChoices):
        DEFERRAL = "deferral", "Deferral (vested when deferred)"
        CREDIT = "credit", "Credit to a vested account"
        VESTING = "vesting", "Vesting of company credits, with their income"
        RESOLUTION = "resolution", "Defined benefit resolved at its Benefit Commencement Date"

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="fica_wages")
    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="fica_wages")
    date = models.DateField(help_text="The day the amount is taken into account as FICA wages")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    source = models.CharField(max_length=200, help_text="What in the books it comes from, in words")
    prior_years_amount = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        default=0,
        help_text="The part that vested for services of earlier years (Form W-2 box 11 without distributions)",
    )
    feed_date = models.DateField(
        null=True,
        blank=True,
        help_text="The pay date whose FICA feed carries it (the first on or after `date`)",
    )
    key = models.CharField(max_length=200)
    cite = models.CharField(max_length=80)
    recorded_at = models.DateTimeField()

    class Meta:
        ordering = ["date", "person", "id"]
        indexes = [models.Index(fields=["feed_date"]), models.Index(fields=["person", "date"])]
        constraints = [models.UniqueConstraint(fields=["key"], name="one_fica_wage_per_key")]

    def __str__(self) -> str:
        return f"{self.person.employee_number} {self.date} {self.kind} {self.amount}"


class FeedTake(models.Model):
    """A FICA feed file taken by staff: which rows it held, so the page can say what changed since."""

    feed_date = models.DateField()
    taken_at = models.DateTimeField()
    taken_by = models.CharField(max_length=200)
    rows = models.PositiveIntegerField()
    total = models.DecimalField(max_digits=16, decimal_places=2)
    row_ids = models.JSONField(default=list)
    sha256 = models.CharField(max_length=64)
    via = models.CharField(max_length=10, help_text="csv or api")

    class Meta:
        ordering = ["-taken_at", "-id"]
        indexes = [models.Index(fields=["feed_date", "taken_at"])]

    def __str__(self) -> str:
        return f"FICA feed {self.feed_date} taken {self.taken_at:%Y-%m-%d %H:%M} by {self.taken_by}"


class YearEndTake(models.Model):
    """A year-end file taken by staff (it carries beneficiaries' taxpayer numbers: every take is recorded)."""

    year = models.PositiveIntegerField()
    file = models.CharField(max_length=20, help_text="w2, 1099 or reconciliation")
    taken_at = models.DateTimeField()
    taken_by = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["-taken_at", "-id"]

    def __str__(self) -> str:
        return f"{self.year} {self.file} taken {self.taken_at:%Y-%m-%d %H:%M} by {self.taken_by}"
