"""Staff forms of the plan catalog: they check the shape of the input; the rules are in plans.services."""

from __future__ import annotations

from typing import cast

from django import forms

from core.fields import DateField
from plans.models import DatedFigure


class DateInput(forms.DateInput):
    input_type = "date"


class VersionOnForm(forms.Form):
    on = DateField(label="Version in force on", widget=DateInput, required=False)


class FigureForm(forms.Form):
    code = forms.ChoiceField(label="Figure")
    year = forms.IntegerField(min_value=1990, max_value=2100)
    amount = forms.DecimalField(max_digits=14, decimal_places=2, min_value=0)
    source = forms.CharField(max_length=300, help_text="Where the figure comes from (an IRS notice)")
    reason = forms.CharField(
        max_length=300, required=False, help_text="Why it changes (kept in the audit log)"
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        codes = DatedFigure.objects.values_list("code", flat=True).distinct().order_by("code")
        cast(forms.ChoiceField, self.fields["code"]).choices = [(c, c) for c in codes]


class TableForm(forms.Form):
    effective_date = DateField(widget=DateInput, help_text="A new date records a new version of the table")
    rows = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="One row a line: key, value (years of service or plan year, then percent)",
    )
    citation = forms.CharField(max_length=80)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    reason = forms.CharField(
        max_length=300, required=False, help_text="Why it changes (kept in the audit log)"
    )

    @staticmethod
    def rows_text(rows: list) -> str:
        return "\n".join(f"{k}, {v}" for k, v in rows)


class ContactForm(forms.Form):
    """The committee contact as a dated setting (manage_plans): where claims, appeals and paper forms go."""

    effective_date = DateField(widget=DateInput, help_text="Documents issued from this date use this contact")
    name = forms.CharField(max_length=200, initial="Administrative Committee")
    address = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), help_text="The postal address, one line a line (at most 6)"
    )
    email = forms.EmailField(max_length=200)
    reason = forms.CharField(
        max_length=300, required=False, help_text="Why it changes (kept in the audit log)"
    )


class ClosureForm(forms.Form):
    date = DateField(widget=DateInput)
    reason = forms.CharField(max_length=200, help_text="For example: National day of mourning")


class ClosureRemoveForm(forms.Form):
    reason = forms.CharField(max_length=300, required=False)
