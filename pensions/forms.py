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
            "pre_2005_annual_benefit",
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
            "pre_2005_annual_benefit": "Pre-2005 Supplemental Benefit (annual at Normal Retirement, Appendix A)",
        }
        widgets = {
            name: forms.DateInput(attrs={"type": "date"})
            for name in ("as_of", "early_retirement_date", "normal_retirement_date", "spouse_birth_date")
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["imputed_annual_benefit"].initial = Decimal("0.00")
        self.fields["early_adjustment_factor"].initial = Decimal("1")
        self.fields["pre_2005_annual_benefit"].initial = Decimal("0.00")
        self.fields["pre_2005_annual_benefit"].required = False  # most participants have none (BRP App. A)

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


class BenefitOrderForm(forms.Form):
    """BRP 6.7: an order the Committee has determined to be a Domestic Relations Order."""

    alternate_payee = forms.CharField(max_length=200, label="Alternate Payee")
    received_on = forms.DateField(label="Received on", widget=forms.DateInput(attrs={"type": "date"}))
    percent = forms.DecimalField(
        required=False,
        max_digits=5,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal("100"),
        label="Percentage of each payment",
    )
    amount = forms.DecimalField(
        required=False,
        max_digits=14,
        decimal_places=2,
        min_value=Decimal("0.01"),
        label="or an amount of each payment",
    )
    lump_sum = forms.BooleanField(
        required=False,
        label="The order and the Committee provide for the Actuarial Equivalent lump sum (6.7(c))",
    )

    def clean(self):
        data = super().clean()
        if (data.get("percent") is None) == (data.get("amount") is None):
            raise forms.ValidationError("Give either a percentage of each payment or an amount (BRP 6.7).")
        return data


class SurvivorDeathForm(forms.Form):
    died_on = DateField(label="The survivor died on", widget=forms.DateInput(attrs={"type": "date"}))
