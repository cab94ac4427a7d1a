from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

_pinned_version_date: contextvars.ContextVar[dt.date | None] = contextvars.ContextVar(
    "pinned_version_date", default=None
)


@contextlib.contextmanager
def pinned_version_date(day: dt.date | None):
    """Make every Plan.version_on() answer the version in force on `day` (the simulator's plan_version)."""
    token = _pinned_version_date.set(day)
    try:
        yield
    finally:
        _pinned_version_date.reset(token)


# Plan id -> its versions (each keeping its provisions once read), shared by every Plan instance while
# `versions_shared()` is open: a page that reaches one plan through many rows (a payment's account's
# participation's plan, per payment) reads the plan's versions and provisions once, not once per row.
_shared_versions: contextvars.ContextVar[dict[int, list[PlanVersion]] | None] = contextvars.ContextVar(
    "shared_versions", default=None
)


@contextlib.contextmanager
def versions_shared():
    """Within the block, Plan.version_on() reads each plan's versions (and their provisions) once for all
    instances of that plan. Opened for each read-only request (plans.middleware); a block that changes a plan's
    versions or provisions must not be inside one."""
    token = _shared_versions.set({})
    try:
        yield
    finally:
        _shared_versions.reset(token)


class Plan(models.Model):
    """A plan of the catalog. Everything that differs between plans is in its versions' provisions."""

    class Kind(models.TextChoices):
        ACCOUNT_BALANCE = "account_balance", "Account balance (notional accounts)"
        DEFINED_BENEFIT = "defined_benefit", "Defined benefit (frozen supplemental pension)"

    code = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=200)
    sponsor = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    description = models.TextField(blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code}: {self.name}"

    def version_on(self, day: dt.date) -> PlanVersion:
        """The version in force on `day` (the latest effective on or before it; else the first)."""
        day = _pinned_version_date.get() or day
        versions = getattr(self, "_versions_cache", None)
        if versions is None:
            shared = _shared_versions.get()
            if shared is not None and self.pk in shared:
                versions = shared[self.pk]
            else:
                versions = list(self.versions.order_by("effective_date"))
                if shared is not None:
                    shared[self.pk] = versions
            self._versions_cache = versions
        if not versions:
            raise PlanVersion.DoesNotExist(f"{self.code} has no versions")
        chosen = versions[0]
        for v in versions:
            if v.effective_date <= day:
                chosen = v
        return chosen


class PlanVersion(models.Model):
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="versions")
    effective_date = models.DateField()
    title = models.CharField(max_length=300)
    source_document = models.CharField(max_length=300, blank=True)
    notes = models.TextField(blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["plan__code", "effective_date"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "effective_date"], name="one_version_per_date")
        ]

    def __str__(self) -> str:
        return f"{self.plan.code} effective {self.effective_date}"

    @property
    def label(self) -> str:
        return f"{self.plan.code} ({self.effective_date:%Y})"

    def _provisions(self) -> dict[str, Provision]:
        cache = getattr(self, "_provision_cache", None)
        if cache is None:
            cache = {p.key: p for p in self.provisions.all()}
            self._provision_cache = cache
        return cache

    def has(self, key: str) -> bool:
        p = self._provisions().get(key)
        return p is not None and p.value is not None

    def provision(self, key: str, default: Any = ...) -> Any:
        """The value of a provision; KeyError naming the plan and key when absent and no default."""
        p = self._provisions().get(key)
        if p is None or p.value is None:
            if default is ...:
                raise KeyError(f"{self} has no provision {key!r}")
            return default
        return p.value

    def cite(self, key: str) -> str:
        """The plan section a provision comes from, e.g. 'EDCP 3.2(b)'."""
        p = self._provisions().get(key)
        if p is None:
            return self.plan.code
        return p.citation

    def account_kinds(self) -> list[dict]:
        return self.provision("accounts")

    def account_spec(self, kind: str) -> dict | None:
        for a in self.account_kinds():
            if a["kind"] == kind:
                return a
        return None

    def component(self, code: str) -> dict | None:
        for c in self.provision("deferral_components", []) or []:
            if c["code"] == code:
                return c
        return None


class Provision(models.Model):
    """One typed, validated provision of a plan version, with its citation."""

    version = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="provisions")
    key = models.CharField(max_length=80)
    label = models.CharField(max_length=200)
    value = models.JSONField(null=True)
    citation = models.CharField(max_length=80)
    reading = models.TextField(
        blank=True, help_text="Where the document is silent or garbled: the reading adopted"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["version", "key"]
        constraints = [models.UniqueConstraint(fields=["version", "key"], name="one_value_per_provision")]

    def __str__(self) -> str:
        return f"{self.version} {self.key} ({self.citation})"


class PlanSection(models.Model):
    """The text of one section of a plan document, for quoting in notices and forms."""

    version = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="sections")
    section = models.CharField(max_length=20)
    title = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    original_text = models.TextField(
        blank=True, help_text="Text in the language of the source, when translated"
    )
    note = models.TextField(blank=True)
    sort_key = models.CharField(max_length=60, default="")

    history = HistoricalRecords()

    class Meta:
        ordering = ["version", "sort_key"]
        constraints = [models.UniqueConstraint(fields=["version", "section"], name="one_text_per_section")]

    def __str__(self) -> str:
        return f"{self.version.plan.code} {self.section} {self.title}"

    @property
    def citation(self) -> str:
        return f"{self.version.plan.code} {self.section}"


class DatedFigure(models.Model):
    """A figure the IRS sets for a year (401(a)(17), 415(b)(1)(A), 402(g)(1), ...), committee-maintained."""

    code = models.CharField(max_length=30)
    year = models.PositiveIntegerField()
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    source = models.CharField(max_length=300, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["code", "year"]
        constraints = [
            models.UniqueConstraint(fields=["code", "year"], name="one_figure_per_year"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="figure_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.year}: {self.amount}"


class PlanTable(models.Model):
    """A dated, committee-maintained table of a plan (vesting schedule, announced percentages).

    rows: [[key, value], ...] with decimal strings; for a vesting schedule key = years of service
    and value = percent vested; for a per-year announcement key = plan year.
    """

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="tables")
    code = models.CharField(max_length=60)
    effective_date = models.DateField()
    rows = models.JSONField()
    citation = models.CharField(max_length=80)
    description = models.TextField(blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["plan", "code", "effective_date"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "code", "effective_date"], name="one_table_per_date")
        ]

    def __str__(self) -> str:
        return f"{self.plan.code} {self.code} from {self.effective_date}"

    def step_value(self, key: Decimal) -> Decimal:
        """Value of the last row whose key is <= `key` (a step table); 0 below the first row."""
        value = Decimal(0)
        for k, v in sorted(((Decimal(str(k)), Decimal(str(v))) for k, v in self.rows)):
            if k <= key:
                value = v
        return value

    def exact_value(self, key: object) -> Decimal | None:
        for k, v in self.rows:
            if str(k) == str(key):
                return Decimal(str(v))
        return None


class Fund(models.Model):
    """A notional investment fund of a plan's menu (EDCP 7.3, RRP 3.05)."""

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="funds")
    code = models.CharField(max_length=20)
    name = models.CharField(max_length=200)
    is_default = models.BooleanField(
        default=False, help_text="The capital-preservation default (EDCP 7.5, RRP 3.05(b))"
    )
    active = models.BooleanField(default=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["plan", "code"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "code"], name="fund_code_unique_in_plan"),
            models.UniqueConstraint(
                fields=["plan"], condition=Q(is_default=True), name="one_default_fund_per_plan"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class FundPrice(models.Model):
    """The price (net asset value per unit) of a fund on a Valuation Date. Never edited once loaded."""

    fund = models.ForeignKey(Fund, on_delete=models.PROTECT, related_name="prices")
    date = models.DateField()
    price = models.DecimalField(max_digits=18, decimal_places=6)
    loaded_at = models.DateTimeField()
    source = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["fund", "date"]
        constraints = [
            models.UniqueConstraint(fields=["fund", "date"], name="one_price_per_fund_and_date"),
            models.CheckConstraint(condition=Q(price__gt=0), name="price_positive"),
        ]
        indexes = [models.Index(fields=["date"])]

    def __str__(self) -> str:
        return f"{self.fund.code} {self.date} {self.price}"


class PlanSetting(models.Model):
    """An administrative setting of a plan the Committee keeps up to date (the committee contact: where claims,
    appeals and paper forms are sent), dated: the newest on or before a day is in force then, and before the
    first one the catalog's provision of the same key applies. Corrections keep their history."""

    KEYS = ("committee_contact",)

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="settings")
    key = models.CharField(max_length=60)
    effective_date = models.DateField()
    value = models.JSONField()
    reason = models.CharField(max_length=300, blank=True)
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["plan", "key", "-effective_date"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "key", "effective_date"], name="one_setting_per_date")
        ]

    def __str__(self) -> str:
        return f"{self.plan.code} {self.key} from {self.effective_date}"
