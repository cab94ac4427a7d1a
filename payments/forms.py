"""Forms of the payments pages: emergency requests and decisions (EDCP 5.5), domestic relations orders (5.9).

They check the shape of what was typed (a date not in the future, a decision with what it needs);
the plan's rules are the services' business.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, cast

from django import forms
from django.utils import timezone

from core.fields import DateField
from participants.models import Participation, Person

MONEY: dict[str, Any] = {"max_digits": 14, "decimal_places": 2, "min_value": Decimal("0.01")}


def _not_future(day: dt.date) -> dt.date:
    if day > timezone.localdate():
        raise forms.ValidationError("A date in the future cannot be recorded.")
    return day


class _Participant(forms.Form):
    """Staff name the participant by employee number and the plan."""

    employee_number = forms.CharField(max_length=20)
    plan = forms.CharField(max_length=10, help_text="The plan's code, as in the plan catalog")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        person = Person.objects.filter(employee_number__iexact=data["employee_number"].strip()).first()
        if person is None:
            raise forms.ValidationError(f"No participant with employee number {data['employee_number']}.")
        participation = (
            Participation.objects.select_related("plan", "person")
            .filter(person=person, plan__code__iexact=data["plan"].strip())
            .first()
        )
        if participation is None:
            raise forms.ValidationError(f"{person} takes no part in {data['plan']}.")
        data["participation"] = participation
        return data


class EmergencyRequestFields(forms.Form):
    amount = forms.DecimalField(label="Amount requested", **MONEY)
    need = forms.CharField(
        label="The emergency and the need", widget=forms.Textarea(attrs={"rows": 4}), max_length=4000
    )
    documents = forms.CharField(
        label="Documents supplied",
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=2000,
        required=False,
        help_text="Bills, notices, insurance statements (as listed on the request)",
    )


class StaffEmergencyRequestForm(_Participant, EmergencyRequestFields):
    requested_on = DateField(label="Request received on")

    def clean_requested_on(self):
        return _not_future(self.cleaned_data["requested_on"])


class PortalEmergencyRequestForm(EmergencyRequestFields):
    plan = forms.ChoiceField(label="Plan")

    def __init__(self, *args, participations: list[Participation], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["plan"]).choices = [
            (p.plan.code, p.plan.name) for p in participations
        ]
        self.participations = {p.plan.code: p for p in participations}
        self.order_fields(["plan", "amount", "need", "documents"])

    def clean(self):
        data = super().clean()
        if "plan" in data:
            data["participation"] = self.participations[data["plan"]]
        return data


class EmergencyDecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", "Approve an amount"), ("deny", "Deny")], widget=forms.RadioSelect
    )
    amount = forms.DecimalField(label="Amount approved", required=False, **MONEY)
    decided_on = DateField(label="Date of the Committee's determination")
    reason = forms.CharField(
        label="Reasons", widget=forms.Textarea(attrs={"rows": 3}), max_length=4000, required=False
    )
    cancel_deferrals = forms.BooleanField(
        label="Also cancel deferrals for the rest of the plan year", required=False
    )

    def clean_decided_on(self):
        return _not_future(self.cleaned_data["decided_on"])

    def clean(self):
        data = super().clean()
        if data.get("decision") == "approve" and not data.get("amount"):
            self.add_error("amount", "Give the amount the Committee approves.")
        if data.get("decision") == "deny" and not (data.get("reason") or "").strip():
            self.add_error("reason", "A denial states its reasons.")
        return data


class OrderForm(_Participant):
    alternate_payee = forms.CharField(max_length=200)
    alternate_payee_email = forms.EmailField(
        required=False, help_text="The payment advice goes by email when given, else on paper"
    )
    alternate_payee_address = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Mailing address, one line per line (for the payment advice on paper)",
    )
    order_date = DateField(label="Valid order received on")
    percent = forms.IntegerField(
        min_value=1, max_value=100, required=False, help_text="Whole percent of the account(s)"
    )
    amount = forms.DecimalField(required=False, **MONEY)
    account = forms.CharField(
        max_length=40,
        required=False,
        help_text="One account (e.g. retirement_termination, specified_date:2030-06); empty: all "
        "the accounts an order can reach, in the plan's order",
    )

    def clean_order_date(self):
        return _not_future(self.cleaned_data["order_date"])

    def clean(self):
        data = super().clean()
        if (data.get("percent") is None) == (data.get("amount") is None):
            raise forms.ValidationError("Give either a percent or an amount.")
        return data


class WhatIfForm(forms.Form):
    """The what-if of the account plans (issue 11): a separation date, an annual return, a deferral percentage."""

    separation = forms.DateField(
        label="If I separated from service on", widget=forms.DateInput(attrs={"type": "date"})
    )
    annual_return = forms.DecimalField(
        label="Annual return to assume (%)",
        initial=0,
        max_digits=5,
        decimal_places=2,
        min_value=-50,
        max_value=50,
    )
    deferral_percent = forms.DecimalField(
        label="Defer this % of my pay until then (leave blank: no new deferrals)",
        required=False,
        max_digits=5,
        decimal_places=2,
        min_value=0,
        max_value=100,
    )
