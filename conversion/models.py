"""Runs of the conversion command and the exceptions they found (FORMAT.md sections 4-5).

A run keeps every exception in its own table so that a package with a hundred thousand bad rows can
be shown page by page. An applied run is how a rerun of the same package is recognised
(`already_applied`, FORMAT.md 5): by `package_id` and the SHA-256 of each file.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class ConversionRun(models.Model):
    class Status(models.TextChoices):
        VALIDATED = "validated", "Validated (dry run, no exception)"
        APPLIED = "applied", "Applied"
        ALREADY_APPLIED = "already_applied", "Already applied"
        REFUSED = "refused", "Refused"

    package_id = models.CharField(max_length=200, blank=True, db_index=True)
    folder = models.CharField(max_length=500)
    dry_run = models.BooleanField()
    status = models.CharField(max_length=20, choices=Status.choices)
    conversion_date = models.DateField(null=True, blank=True)
    participants = models.PositiveIntegerField(default=0)
    positions = models.PositiveIntegerField(default=0)
    control_matched = models.BooleanField(default=False)
    differences = models.JSONField(default=list)
    file_hashes = models.JSONField(default=dict, help_text="SHA-256 of each file of the package")
    exception_count = models.PositiveIntegerField(default=0)
    actor = models.CharField(max_length=200)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    # The staff pages (maker-checker, as payment runs): who uploaded the package, who approved its apply.
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    applied_run = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approved_dry_run",
        help_text="the run that applied this dry run's package",
    )
    # This system's figures of the control file's balance groups on the conversion date, read from the books
    # once the package is applied (conversion.selectors.books_totals, kept as [key..., figure] lists): the
    # reconciliation pages and PDF show them without reading the books again (at 100,000 participants the
    # liability report alone takes some 12 s). None until an apply's figures are read.
    books_figures = models.JSONField(null=True, blank=True, editable=False)
    # The payments of the converted plans due on or before the conversion date and not made by the prior
    # recordkeeper, as the apply left them (conversion.selectors.payments_due_at_conversion): the first payment run
    # pays them. None until read.
    due_at_conversion = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["package_id", "status"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(applied_by__isnull=True) | ~Q(applied_by=F("uploaded_by")),
                name="conversion_not_applied_by_its_uploader",
            )
        ]

    def __str__(self) -> str:
        return f"conversion {self.package_id} {self.status} ({self.started_at:%Y-%m-%d %H:%M})"


class ConversionException(models.Model):
    run = models.ForeignKey(ConversionRun, on_delete=models.CASCADE, related_name="exceptions")
    file = models.CharField(max_length=60)
    line = models.PositiveIntegerField()
    code = models.CharField(max_length=40)
    message = models.TextField()

    class Meta:
        ordering = ["run", "file", "line", "code", "id"]
        indexes = [models.Index(fields=["run", "code"])]

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.code}"
