"""Template helpers for election pages."""

from __future__ import annotations

from django import template

from elections import selectors as S
from elections import validators as V
from elections.pdf import when
from plans.models import Fund

register = template.Library()

TITLES = {
    "deferral": "Deferral election",
    "distribution": "Payment election",
    "schedule_change": "Change of payment schedule",
    "investment": "Investment election",
    "annuity": "Form of benefit",
}


@register.filter
def election_kind(election) -> str:
    return S.kind_of(election=election)


@register.filter
def election_title(election) -> str:
    kind = S.kind_of(election=election)
    title = TITLES[kind]
    if kind == "deferral":
        extra = f" for {election.plan_year}"
        if election.kind != "annual":
            extra += f" ({election.get_kind_display().lower()})"
        return title + extra
    if kind in ("distribution", "schedule_change"):
        label = election.account_kind.replace("_", " ")
        if election.specified_month:
            label += f" {election.specified_month:%B %Y}"
        return f"{title}: {label}"
    if kind == "annuity":
        return f"{title}: {V.FORM_LABELS.get(election.form, election.form)}"
    return title


@register.filter
def form_label(code: str) -> str:
    return V.FORM_LABELS.get(code, str(code).replace("_", " "))


@register.filter
def eastern(moment) -> str:
    return when(moment)


_SUBMITTED_LABELS = {
    "plan_year": "Plan year",
    "percentages": "Percentages",
    "accounts": "Account shares",
    "schedules": "Payment schedules",
    "performance_period": "Performance period",
    "account": "Account",
    "form": "Form of payment",
    "installments": "Installments",
    "lump_sum_percent": "Lump sum",
    "delay_months": "Later start (months)",
    "delay_years": "Delay (years)",
    "new_month": "New first payment month",
    "allocation": "Fund mix",
    "applies_to": "Applies to",
    "defer_years": "Deferred (years)",
}


def _words(value: object) -> str:
    if value is None or value == "":
        return "none"
    if isinstance(value, dict):
        return "; ".join(f"{_account_words(k)}: {_words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return " to ".join(_words(v) for v in value)
    return V.FORM_LABELS.get(str(value), str(value).replace("_", " "))


def _fund_words(allocation: dict) -> list[tuple[str, object]]:
    """An investment allocation as stored (fund id -> share as typed) with each fund's code and name."""
    ids = [int(k) for k in allocation if str(k).isascii() and str(k).isdigit() and len(str(k)) < 10]
    names = {str(f.pk): f"{f.code} {f.name}" for f in Fund.objects.filter(pk__in=ids)}
    return [(names.get(str(k), f"fund {k}"), v) for k, v in allocation.items()]


def _account_words(key: object) -> str:
    text = str(key)
    if text.startswith("specified_date:"):
        return f"Specified Date Account {text.split(':', 1)[1]}"
    return V.FORM_LABELS.get(text, text.replace("_", " ").capitalize())


@register.filter
def submitted_lines(data) -> list[tuple[str, str]]:
    """What a participant submitted, in words (issue 11: never a Python dict on a page)."""
    if not isinstance(data, dict):
        return []
    out = []
    for key, value in data.items():
        if value in (None, "", {}, []):
            continue
        if key == "allocation" and isinstance(value, dict):
            words = "; ".join(f"{name}: {v}%" for name, v in _fund_words(value))
        elif key in ("percentages", "accounts") and isinstance(value, dict):
            words = "; ".join(f"{_account_words(k)}: {v}%" for k, v in value.items())
        else:
            words = _words(value)
        out.append((_SUBMITTED_LABELS.get(key, key.replace("_", " ").capitalize()), words))
    return out
