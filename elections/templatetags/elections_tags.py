"""Template helpers for election pages."""

from __future__ import annotations

from django import template

from elections import selectors as S
from elections import validators as V
from elections.pdf import when

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
