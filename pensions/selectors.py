"""Reads for the BRP pages: who is in a defined benefit plan, and everything one participant's page shows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db.models import Max

from core import hooks, memo
from core.lists import people_filter
from elections.selectors import annuity_in_force
from participants.models import EmploymentEvent, Participation
from pensions.services.benefit import (
    BenefitError,
    BenefitQuote,
    benefit_commencement_date,
    brp_benefit_sheet,
    brp_survivor_quote,
)
from plans.models import Plan

if TYPE_CHECKING:
    from django.db.models import QuerySet


def brp_participations(*, query: str = "") -> QuerySet[Participation]:
    """Participants of the defined benefit plans, with the date of their latest Pension Plan figures."""
    qs = (
        Participation.objects.filter(plan__kind=Plan.Kind.DEFINED_BENEFIT)
        .select_related("person", "plan")
        .annotate(figures_as_of=Max("db_records__as_of"))
        .order_by("person__last_name", "person__first_name", "id")
    )
    # A prefix of the name or employee number, with an index behind it (issue 15, core.lists).
    return qs.filter(people_filter(query, path="person__")) if query else qs


def employment_event_dates(*, participation: Participation) -> dict[str, dt.date]:
    """kind -> the date of the participant's first employment event of that kind (rehires aside); a report over
    many participants reads them all at once for the run (employment_event_dates_seed)."""
    return memo.remember(
        ("employment_event_dates", participation.person_id),
        lambda: _event_dates(EmploymentEvent.objects.filter(person_id=participation.person_id)).get(
            participation.person_id, {}
        ),
    )


def employment_event_dates_seed(*, participations: list[Participation]) -> None:
    """Read the employment events of many participants at once, for the run (core.memo)."""
    people = {p.person_id for p in participations}
    dates = _event_dates(EmploymentEvent.objects.filter(person_id__in=people))
    for person_id in people:
        memo.seed(("employment_event_dates", person_id), dates.get(person_id, {}))


def _event_dates(events: QuerySet[EmploymentEvent]) -> dict[int, dict[str, dt.date]]:
    out: dict[int, dict[str, dt.date]] = {}
    for person_id, kind, day in (
        events.exclude(kind=EmploymentEvent.Kind.REHIRE)
        .order_by("person_id", "effective_date", "id")
        .values_list("person_id", "kind", "effective_date")
    ):
        out.setdefault(person_id, {}).setdefault(kind, day)
    return out


def brp_benefit_page(
    *,
    participation: Participation,
    today: dt.date,
    separation: dt.date | None = None,
    spouse_birth_date: dt.date | None = None,
) -> dict:
    """The quote (every form side by side, with its steps and sections), the figures on file and, once the
    benefit is payable, what is fixed and paid. `separation` asks "what if I separated on ...?" while employed."""

    events = employment_event_dates(participation=participation)
    actual = events.get(EmploymentEvent.Kind.SEPARATION)
    death = events.get(EmploymentEvent.Kind.DEATH)
    asked = actual or separation or today
    in_force = annuity_in_force(participation=participation, as_of=actual or today)
    commencement = benefit_commencement_date(separation_date=asked, defer_years=in_force.defer_years)
    quote, error, survivor, survivor_error = None, "", None, ""
    if death is None or (actual is not None and death >= commencement):
        try:
            quote = brp_benefit_sheet(
                participation=participation,
                separation_date=asked,
                as_of=max(today, commencement),
                form=in_force.form,
                spouse_birth_date=spouse_birth_date,
                defer_years=in_force.defer_years,
            )
        except BenefitError as exc:
            error = str(exc)
    else:
        try:
            survivor = brp_survivor_quote(
                participation=participation, death_date=death, as_of=max(today, death)
            )
        except BenefitError as exc:
            survivor_error = str(exc)
    # payments pays the benefit and answers what is in pay (payments imports pensions, never the reverse)
    in_pay_box: dict = {"annuity": None, "payments": []}
    hooks.emit("benefit_in_pay_read", participation=participation, out=in_pay_box)
    annuity, payments = in_pay_box["annuity"], in_pay_box["payments"]
    version = participation.plan.version_on(asked)
    # The form can no longer change once the benefit has begun (4.2(d)): the page then shows the benefit in pay.
    in_pay = bool(
        annuity is not None
        and annuity.status in IN_PAY_STATUSES
        and annuity.commencement_date is not None
        and annuity.commencement_date <= today
    )
    return {
        "in_pay": in_pay,
        "fixed_cite": version.cite("db_maximum_benefit") + "(c)" if version.has("db_maximum_benefit") else "",
        "orders": list(participation.benefit_orders.all()),
        "participation": participation,
        "person": participation.person,
        "plan": participation.plan,
        "figures": list(participation.db_records.order_by("-as_of", "-id")),
        "separation": actual,
        "death": death,
        "asked": asked,
        "what_if": actual is None,
        "quote": quote,
        "error": error,
        "survivor": survivor,
        "survivor_error": survivor_error,
        "in_force": in_force,
        "annuity": annuity,
        "payments": payments,
        "today": today,
        "version": version,
        "version_title": version.title,
    }


IN_PAY_STATUSES = ("in_pay", "complete")  # payments.Annuity.Status values of a benefit that has begun
PRE_2005_BENEFITS = ("Pre-2005 Supplemental Benefit", "Pre-2005 Post-Retirement Survivor Benefit")


def benefit_payment_account(*, benefit: str) -> str:
    """The name a defined benefit payment goes by in the simulator result (scenarios FORMAT.md): the Appendix A part
    is "pre_2005_benefit", every other payment of the benefit (survivors' included) "supplemental_benefit"."""
    return "pre_2005_benefit" if benefit in PRE_2005_BENEFITS else "supplemental_benefit"


@dataclass(frozen=True)
class FormQuote:
    """One form of benefit as the quote figures it (core.hooks "annuity_form_quote"): the monthly amount (the single
    payment of a lump sum), when it begins, and why not when it cannot be figured. `what_if`: the participant is still
    employed, so the figures are those of a separation on the day asked."""

    form: str
    form_label: str
    defer_years: int
    separation_date: dt.date
    commencement_date: dt.date
    first_payment_date: dt.date | None
    monthly: Decimal | None
    lump_sum: Decimal | None
    what_if: bool
    provisional: bool = False  # a figure is not recorded yet: the amount may change
    pre_2005_apart: bool = False  # a Pre-2005 Supplemental Benefit is paid apart, in the Pension Plan's form
    error: str = ""


def annuity_form_quote(
    *, participation: Participation, form: str, defer_years: int, as_of: dt.date
) -> FormQuote:
    """The benefit in `form`, put off `defer_years` years (4.2(c), 4.2(d)), figured by the same quote as the benefit
    page (brp_benefit_sheet): on the actual separation, or while employed on a separation on `as_of`."""
    actual = employment_event_dates(participation=participation).get(EmploymentEvent.Kind.SEPARATION)
    separation = actual or as_of
    commencement = benefit_commencement_date(separation_date=separation, defer_years=defer_years)
    base = FormQuote(
        form=form,
        form_label="",
        defer_years=defer_years,
        separation_date=separation,
        commencement_date=commencement,
        first_payment_date=None,
        monthly=None,
        lump_sum=None,
        what_if=actual is None,
    )
    try:
        quote = brp_benefit_sheet(
            participation=participation,
            separation_date=separation,
            as_of=max(as_of, commencement),
            form=form,
            defer_years=defer_years,
        )
    except BenefitError as exc:
        return replace(base, error=str(exc))
    lump = form == "lump_sum"
    return replace(
        base,
        form_label=quote.form_label,
        first_payment_date=quote.first_payment_date,
        monthly=None if lump else quote.monthly,
        lump_sum=quote.lump_sum_value if lump else None,
        provisional=bool(quote.provisional),
        pre_2005_apart=quote.pre_2005 is not None,
        error="" if lump or quote.monthly is not None else _unavailable(quote, form),
    )


def _unavailable(quote: BenefitQuote, form: str) -> str:
    option = next((o for o in quote.forms if o.form == form), None)
    return (option.unavailable if option else "") or "this form cannot be figured yet"
