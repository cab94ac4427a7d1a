"""Reads for the BRP pages: who is in a defined benefit plan, and everything one participant's page shows."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from django.db.models import Max, Q

from core import hooks, memo
from elections.selectors import annuity_in_force
from participants.models import EmploymentEvent, Participation
from pensions.services.benefit import (
    BenefitError,
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
    for word in query.split():
        qs = qs.filter(
            Q(person__employee_number__icontains=word)
            | Q(person__last_name__icontains=word)
            | Q(person__first_name__icontains=word)
        )
    return qs


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
