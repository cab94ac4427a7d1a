"""Participant statements: one row per participant, plan and period, pointing at its stored PDF.

A statement is made once per (participation, kind, period end): the unique row is the claim, so a
rerun of a period finds it and makes no second one. The PDF is a core Document (stored by its SHA-256);
the figures it shows are kept beside it, each already tied to the ledger when the statement was made.
"""

from __future__ import annotations

from django.db import models

from core.models import Document
from participants.models import Participation, Person


class Statement(models.Model):
    class Kind(models.TextChoices):
        QUARTERLY = "quarterly", "Quarterly account statement"
        ANNUAL_BENEFIT = "annual_benefit", "Annual benefit statement"

    person = models.ForeignKey(Person, on_delete=models.PROTECT, related_name="statements")
    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="statements")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    period_start = models.DateField()
    period_end = models.DateField()
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    sha256 = models.CharField(max_length=64)
    beginning_balance = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)
    ending_balance = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)
    figures = models.JSONField(default=dict, blank=True, help_text="The totals shown, as strings")
    issued_at = models.DateTimeField()
    issued_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["-period_end", "participation__plan__code", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["participation", "kind", "period_end"], name="one_statement_per_plan_and_period"
            )
        ]
        indexes = [models.Index(fields=["person", "period_end"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.participation} to {self.period_end}"
