"""Tables of the defined benefit plan. The Pension Plan figures (books.DefinedBenefitRecord) and the benefit in pay
(payments.Annuity) keep their tables where they were first made; what is new to the BRP lives here."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords


class BenefitOrder(models.Model):
    """BRP 6.7: a Domestic Relations Order against a Supplemental Benefit. The alternate payee's share (a percentage
    of each payment, or an amount from each) is accounted for separately and paid on the benefit's own Payment
    Dates, or, when the order and the Committee so provide, as its Actuarially Equivalent lump sum."""

    participation = models.ForeignKey(
        "participants.Participation", on_delete=models.PROTECT, related_name="benefit_orders"
    )
    alternate_payee = models.CharField(max_length=200)
    received_on = models.DateField(
        help_text="The day the Committee received the order (its share starts then)"
    )
    percent = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    lump_sum = models.BooleanField(
        default=False,
        help_text="The Committee pays the Actuarial Equivalent of the share in one sum (6.7(c))",
    )
    cite = models.CharField(max_length=60)
    recorded_by = models.CharField(max_length=200)
    recorded_at = models.DateTimeField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["received_on", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(percent__isnull=False) & Q(amount__isnull=True))
                | (Q(percent__isnull=True) & Q(amount__isnull=False)),
                name="benefit_order_percent_or_amount",
            ),
            models.CheckConstraint(
                condition=Q(percent__isnull=True) | (Q(percent__gt=0) & Q(percent__lte=100)),
                name="benefit_order_percent_range",
            ),
            models.CheckConstraint(
                condition=Q(amount__isnull=True) | Q(amount__gt=0), name="benefit_order_amount"
            ),
        ]

    def __str__(self) -> str:
        share = f"{self.percent}%" if self.percent is not None else f"{self.amount}"
        return f"6.7 order of {self.received_on} to {self.alternate_payee}: {share}"

    @property
    def share_label(self) -> str:
        share = (
            f"{self.percent.normalize():f}% of each payment"
            if self.percent is not None
            else (f"{self.amount:,.2f} of each payment")
        )
        return share + (", paid as its Actuarially Equivalent lump sum" if self.lump_sum else "")
