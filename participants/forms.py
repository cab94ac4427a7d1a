"""Staff forms about people: they check the shape of the input; the rules are in participants.services."""

from __future__ import annotations

from typing import cast

from django import forms

from participants.models import Person
from plans.models import Plan


class SearchForm(forms.Form):
    q = forms.CharField(
        label="Name or employee number",
        required=False,
        max_length=100,
        help_text="The beginning of a last name, first name, employee number or email",
    )
    plan = forms.ChoiceField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["plan"]).choices = [("", "All plans")] + [
            (p.code, p.code) for p in Plan.objects.all()
        ]


class KeyEmployeeListForm(forms.Form):
    identification_year = forms.IntegerField(
        min_value=1990, max_value=2100, help_text="Identified as of December 31 of this year"
    )
    employee_numbers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        help_text="One employee number a line (or separated by commas); empty = nobody",
    )
    note = forms.CharField(max_length=500, required=False)

    def clean_employee_numbers(self) -> list[Person]:
        raw = self.cleaned_data["employee_numbers"].replace(",", "\n").split()
        numbers = list(dict.fromkeys(n.strip() for n in raw if n.strip()))
        people = {p.employee_number: p for p in Person.objects.filter(employee_number__in=numbers)}
        unknown = [n for n in numbers if n not in people]
        if unknown:
            raise forms.ValidationError(f"unknown employee number(s): {', '.join(unknown)}")
        return [people[n] for n in numbers]


class DeliveryForm(forms.Form):
    """How notices reach the participant: electronic (with consent to the text shown) or paper."""

    delivery = forms.ChoiceField(
        choices=[
            ("electronic", "Electronic: by email, with the document attached"),
            ("paper", "Paper: by mail"),
        ],
        widget=forms.RadioSelect,
        label="How should we send you notices and documents?",
    )
    consent = forms.BooleanField(
        required=False, label="I have read the consent text above and agree to electronic delivery"
    )
    consent_version = forms.CharField(widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if data.get("delivery") == "electronic" and not data.get("consent"):
            self.add_error("consent", "Electronic delivery needs your consent (29 CFR 2520.104b-1(c)).")
        return data
