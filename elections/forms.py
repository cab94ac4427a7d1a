"""Reading what a participant (or staff, from a paper form) typed into the arguments of the services.

Percentages are taken as typed: the validators, not the form, decide whether "10.5" or "-3" is
allowed, so a refusal always carries its plan section and is stored for the audit trail.
"""

from __future__ import annotations

import datetime as dt

from django import forms

from core.dates import EASTERN, parse_month
from core.fields import DateField
from core.inputs import parse_int
from elections.models import EnrollmentWindow, InvestmentElection
from plans.models import Plan

MAX_SPECIFIED_ROWS = 5


def _raw(data, name: str) -> str:
    return (data.get(name) or "").strip()


def _int_or_raw(text: str):
    """A whole number when the text is one, else the text itself (the validator refuses it with its section)."""
    try:
        return int(text)
    except ValueError:
        return text


def deferral_arguments(
    data, *, components: list[str], default_account: str | None, specified_rows: int, with_schedules: set[str]
) -> dict:
    """percentages, accounts and payment schedules from a submitted enrolment form."""
    percentages = {code: _raw(data, f"pct_{code}") for code in components if _raw(data, f"pct_{code}") != ""}
    accounts: dict[str, str] = {}
    schedules: dict[str, dict] = {}
    if default_account and _raw(data, "alloc_default") != "":
        accounts[default_account] = _raw(data, "alloc_default")
    for i in range(1, specified_rows + 1):
        month, share = _raw(data, f"sd_month_{i}"), _raw(data, f"sd_percent_{i}")
        if month == "" and share == "":
            continue
        name = f"specified_date:{month}"
        accounts[name] = share or "0"
        if _raw(data, f"sd_{i}_form"):
            schedules[name] = _schedule(data, f"sd_{i}")
    if default_account and default_account in with_schedules and _raw(data, "default_form"):
        schedules[default_account] = _schedule(data, "default")
    if accounts and default_account and default_account not in accounts:
        accounts[default_account] = "0"
    return {"percentages": percentages, "accounts": accounts or None, "schedules": schedules}


def _schedule(data, prefix: str) -> dict:
    out: dict = {"form": _raw(data, f"{prefix}_form")}
    if _raw(data, f"{prefix}_installments"):
        out["installments"] = _int_or_raw(_raw(data, f"{prefix}_installments"))
    if _raw(data, f"{prefix}_lump_sum_percent"):
        out["lump_sum_percent"] = _int_or_raw(_raw(data, f"{prefix}_lump_sum_percent"))
    years = _raw(data, f"{prefix}_delay_years")
    if years:
        value = _int_or_raw(years)
        out["delay_months"] = value * 12 if isinstance(value, int) else value
    return out


def distribution_arguments(data) -> dict:
    sched = _schedule(data, "dist")
    return {
        "account": _raw(data, "account"),
        "form": sched["form"],
        "installments": sched.get("installments"),
        "lump_sum_percent": sched.get("lump_sum_percent"),
        "delay_months": sched.get("delay_months", 0),
    }


def schedule_change_arguments(data) -> dict:
    out: dict = {"account": _raw(data, "account")}
    month = _raw(data, "new_month")
    if month:
        out["new_month"] = parse_month(month)
    years = _raw(data, "delay_years")
    if years:
        out["delay_years"] = parse_int(years, field="delay years")
    if _raw(data, "form"):
        out["form"] = _raw(data, "form")
        if _raw(data, "installments"):
            out["installments"] = parse_int(_raw(data, "installments"), field="installments")
    return out


def investment_arguments(data, funds, *, include_unknown: bool = False) -> dict:
    """allocation {fund id: share as typed} and applies_to. `include_unknown`: a share typed for a fund id that is
    not on the menu given (a fund withdrawn since the form was shown) is kept, for the validator to name."""
    allocation: dict[int, object] = {
        f.pk: _raw(data, f"fund_{f.pk}") for f in funds if _raw(data, f"fund_{f.pk}") not in ("", "0")
    }
    if include_unknown:
        for name in sorted(data.keys()):
            digits = name.removeprefix("fund_")
            if (
                name.startswith("fund_")
                and digits.isascii()
                and digits.isdigit()
                and len(digits) < 10
                and _raw(data, name) not in ("", "0")
            ):
                allocation.setdefault(int(digits), _raw(data, name))
    return {
        "allocation": allocation,
        "applies_to": _raw(data, "applies_to") or InvestmentElection.AppliesTo.BOTH,
    }


class WindowForm(forms.Form):
    plan = forms.ModelChoiceField(queryset=Plan.objects.filter(kind=Plan.Kind.ACCOUNT_BALANCE))
    plan_year = forms.IntegerField(min_value=2000, max_value=2100)
    kind = forms.ChoiceField(
        choices=[
            (EnrollmentWindow.Kind.ANNUAL, "Annual enrollment"),
            (EnrollmentWindow.Kind.PERFORMANCE, "Performance-Based Compensation"),
        ]
    )
    opens = forms.DateTimeField(
        help_text="Eastern time", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    closes = forms.DateTimeField(
        help_text="Eastern time", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    performance_period_start = DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    performance_period_end = DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    reminder_days = forms.CharField(required=False, initial="14, 7, 1", help_text="Days before the close")
    note = forms.CharField(required=False, max_length=300)

    def clean(self):
        data = super().clean()
        for name in ("opens", "closes"):
            if data.get(name):
                data[name] = data[name].replace(tzinfo=None).replace(tzinfo=EASTERN)
        if data.get("kind") == EnrollmentWindow.Kind.PERFORMANCE and not (
            data.get("performance_period_start") and data.get("performance_period_end")
        ):
            raise forms.ValidationError(
                "A Performance-Based Compensation window needs its performance period."
            )
        try:
            data["reminder_days"] = [
                int(x) for x in (data.get("reminder_days") or "").replace(",", " ").split()
            ]
        except ValueError:
            raise forms.ValidationError("Reminder days are whole numbers separated by commas.")
        return data


class NoticeForm(forms.Form):
    notice_on = DateField(widget=forms.DateInput(attrs={"type": "date"}))


class CancellationForm(forms.Form):
    ground = forms.ChoiceField(
        choices=[
            ("emergency", "Unforeseeable emergency (rest of that plan year)"),
            ("hardship", "401(k) hardship distribution (through the plan year of its six-month anniversary)"),
        ]
    )
    event_on = DateField(
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Date of the emergency payment or of the hardship distribution",
    )
    reason = forms.CharField(max_length=250)


class ReceivedForm(forms.Form):
    """Paper forms: when the Committee received the form (it decides timeliness); never in the future."""

    received_at = forms.DateTimeField(
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}), help_text="Eastern time"
    )

    def received(self, now: dt.datetime) -> dt.datetime:
        moment = self.cleaned_data["received_at"].replace(tzinfo=None).replace(tzinfo=EASTERN)
        if moment > now:
            raise forms.ValidationError("A paper form cannot be received in the future.")
        return moment
