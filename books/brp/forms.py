"""Forms of the BRP pages: recording Pension Plan figures, asking for a quote, recording a survivor's death."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from books.models import DefinedBenefitRecord
from core.fields import DateField


class PensionFiguresForm(forms.ModelForm):
    class Meta:
        model = DefinedBenefitRecord
        fields = [
            "as_of",
            "unlimited_annual_benefit",
            "imputed_annual_benefit",
            "payable_annual_benefit",
            "benefit_service_years",
            "early_retirement_date",
            "normal_retirement_date",
            "early_adjustment_factor",
            "spouse_name",
            "spouse_birth_date",
        ]
        labels = {
            "as_of": "Figures as of",
            "unlimited_annual_benefit": "Pension Plan benefit without the Tax Limits (annual, BRP 3.2(a))",
            "imputed_annual_benefit": "Imputed Benefit Service benefit (annual, 3.5)",
            "payable_annual_benefit": "Pension Plan benefit payable (annual, 3.2(b))",
            "benefit_service_years": "Years of Benefit Service",
            "early_adjustment_factor": "Early/late commencement factor (3.3)",
        }
        widgets = {
            name: forms.DateInput(attrs={"type": "date"})
            for name in ("as_of", "early_retirement_date", "normal_retirement_date", "spouse_birth_date")
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["imputed_annual_benefit"].initial = Decimal("0.00")
        self.fields["early_adjustment_factor"].initial = Decimal("1")

    def validate_unique(self):
        """A second set of figures for the same date is a correction (the service replaces it, history keeps both)."""


class QuoteForm(forms.Form):
    separation = DateField(
        required=False, label="Separation from service on", widget=forms.DateInput(attrs={"type": "date"})
    )
    spouse_birth_date = DateField(
        required=False,
        label="Spouse's (or survivor's) date of birth",
        widget=forms.DateInput(attrs={"type": "date"}),
    )


class SurvivorDeathForm(forms.Form):
    died_on = DateField(label="The survivor died on", widget=forms.DateInput(attrs={"type": "date"}))
