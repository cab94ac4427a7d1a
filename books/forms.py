"""Forms of the books' staff pages."""

from __future__ import annotations

from decimal import Decimal

from django import forms

MAX_VALUATION_FILE = 200 * 1024 * 1024  # a daily valuation of 100,000 participants is about 60 MB


class ParallelRunForm(forms.Form):
    file = forms.FileField(
        label="Daily valuation file (CSV)",
        help_text="valuation_date,employee_number,plan,account,fund,units,value: see docs/parallel-run.md",
    )

    def clean_file(self):
        file = self.cleaned_data["file"]
        if file.size > MAX_VALUATION_FILE:
            raise forms.ValidationError("the file is larger than 200 MB: send one file per Valuation Date")
        return file


class ToleranceForm(forms.Form):
    amount = forms.DecimalField(
        label="Tolerance (dollars)",
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="a position is listed when its value differs by more than this",
    )
    note = forms.CharField(label="Note (Committee minute)", max_length=300, required=False)
