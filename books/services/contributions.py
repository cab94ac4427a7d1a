"""Company contributions: EDCP 4.1 (amounts the Committee credits) and RRP 3.02 (declared percentages)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Sum

from books.models import ContributionDeclaration, PayrollDeferral, Source
from books.services.accounts import BooksError, credit_create
from core.audit import actor_label
from core.dates import years_between
from core.money import ZERO, money, percent_of
from participants.models import EmploymentEvent, Participation
from participants.selectors import termination_event
from plans.models import Plan

if TYPE_CHECKING:
    from core.audit import Actor


def company_contribution_credit(
    *,
    participation: Participation,
    kind: str,
    amount: Decimal,
    plan_year: int,
    on: dt.date,
    actor: Actor,
    key: str | None = None,
) -> None:
    """EDCP 4.1: credit the matching or retirement contribution lost by deferring, to the Company Contribution Account."""
    version = participation.plan.version_on(on)
    rule = version.provision("company_contributions", None)
    if not rule:
        raise BooksError(
            f"{participation.plan.code} has no company contributions of this kind ({version.cite('company_contributions')})"
        )
    if kind not in rule["kinds"]:
        raise BooksError(
            f"{kind!r} is not a company contribution of {participation.plan.code} ({version.cite('company_contributions')})"
        )
    if money(amount) <= 0:
        raise BooksError("a company contribution must be a positive amount")
    source = Source.COMPANY_MATCHING if kind == "matching" else Source.COMPANY_RETIREMENT
    credit_create(
        participation=participation,
        account_name=rule["account"],
        source=source,
        amount=amount,
        effective_date=on,
        idempotency_key=key or f"company:{participation.pk}:{plan_year}:{kind}",
        actor=actor_label(actor),
        memo=f"Company {kind} contribution for {plan_year}",
        cite=version.cite("company_contributions"),
    )


def _restoration_eligible(
    participation: Participation, plan_year: int, rule: dict, retirement_age: int | None
) -> tuple[bool, str]:
    """RRP 3.02: employed on the last day of the year, unless they died or Retired during it."""
    year_end = dt.date(plan_year, 12, 31)
    ended = termination_event(person=participation.person, on_or_before=year_end)
    if ended is None or ended.effective_date.year > plan_year:
        return True, ""
    if not rule.get("employed_last_day", True):
        return True, ""
    exceptions = set(rule.get("exceptions", []))
    if ended.effective_date.year == plan_year:
        if ended.kind == EmploymentEvent.Kind.DEATH and "death" in exceptions:
            return True, "died during the year"
        if (
            "retirement" in exceptions
            and ended.kind == EmploymentEvent.Kind.SEPARATION
            and retirement_age
            and years_between(participation.person.birth_date, ended.effective_date) >= retirement_age
        ):
            # Hours of Service are not in the payroll feed: a Participant paid during the year is taken to have 1,000.
            return True, "Retired during the year"
    return False, f"not employed on {year_end}"


@transaction.atomic
def restoration_declare(
    *, plan: Plan, plan_year: int, percent: Decimal, declared_on: dt.date, actor: Actor
) -> ContributionDeclaration:
    """RRP 3.02: the declared percentage times each eligible Participant's Plan Compensation for the year."""
    version = plan.version_on(dt.date(plan_year, 12, 31))
    rule = version.provision("retirement_restoration", None)
    if not rule:
        raise BooksError(
            f"{plan.code} has no retirement restoration contribution ({version.cite('retirement_restoration')})"
        )
    if declared_on <= dt.date(plan_year, 12, 31):
        raise BooksError(
            f"a contribution for {plan_year} is declared after the year ends ({version.cite('retirement_restoration')})"
        )
    if ContributionDeclaration.objects.filter(
        plan=plan, plan_year=plan_year, kind="retirement_restoration"
    ).exists():
        raise BooksError(f"the {plan_year} retirement restoration contribution is already declared")
    declaration = ContributionDeclaration.objects.create(
        plan=plan,
        plan_year=plan_year,
        percent=percent,
        declared_on=declared_on,
        declared_by=actor_label(actor),
    )
    base_field = "plan_compensation" if rule["base"] == "plan_compensation" else "compensation"
    bases = dict(
        PayrollDeferral.objects.filter(participation__plan=plan, record__plan_year=plan_year)
        .values_list("participation_id")
        .annotate(t=Sum(base_field))
    )
    count, total = 0, ZERO
    retirement_age = version.provision("retirement_age", None)
    for participation in Participation.objects.filter(plan=plan, id__in=bases.keys()).select_related(
        "person"
    ):
        base = bases.get(participation.id) or ZERO
        if base <= 0:
            continue
        eligible, _ = _restoration_eligible(participation, plan_year, rule, retirement_age)
        if not eligible:
            continue
        amount = percent_of(base, percent)
        credit_create(
            participation=participation,
            account_name="retirement_restoration",
            source=Source.RESTORATION,
            amount=amount,
            effective_date=declared_on,
            idempotency_key=f"restoration:{participation.pk}:{plan_year}",
            actor=actor_label(actor),
            memo=f"{percent}% of {base} Plan Compensation for {plan_year}",
            cite=version.cite("retirement_restoration"),
        )
        count += 1
        total += amount
    declaration.participants_credited, declaration.total_credited = count, total
    declaration.save(update_fields=["participants_credited", "total_credited"])
    return declaration
