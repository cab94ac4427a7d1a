"""Simulator: a BRP participant's Pension Plan figures and form of benefit (scenario events `pension_figures`,
`annuity_election`). The separation reaches the annuity schedule through core.hooks like any other event;
its monthly payments go through the same daily job and two-person runs, and appear in the `payments` report."""

from __future__ import annotations

from decimal import Decimal

from books.services.accounts import BooksError
from core.dates import parse_date
from core.simulation.registry import Rejected, handles
from elections.services import annuity_election_submit
from pensions.services.benefit import pension_figures_record


@handles("pension_figures")
def pension_figures(ctx, event) -> dict:
    d = event.data
    participation = ctx.participations[event.participant]
    version = participation.plan.version_on(event.on)
    if not version.has("db_benefit"):
        raise Rejected(
            version.cite("accounts"),
            f"{participation.plan.code} is not a defined benefit plan: no Pension Plan figures.",
        )
    dates = {
        k: parse_date(d[k], field=k)
        for k in ("normal_retirement_date", "early_retirement_date", "spouse_birth_date")
        if d.get(k)
    }
    amounts = {
        k: Decimal(d[k])
        for k in (
            "unlimited_annual_benefit",
            "payable_annual_benefit",
            "imputed_annual_benefit",
            "benefit_service_years",
            "early_adjustment_factor",
            "pre_2005_annual_benefit",
        )
        if d.get(k)
    }
    try:
        pension_figures_record(
            participation=participation,
            as_of=event.on,
            actor=ctx.actor,
            now=ctx.moment(event.on),
            source="scenario",
            spouse_name=d.get("spouse_name", ""),
            **dates,
            **amounts,
        )
    except BooksError as exc:
        raise Rejected(version.cite("db_benefit"), str(exc))
    return {}


@handles("annuity_election")
def annuity_election(ctx, event) -> dict:

    election = annuity_election_submit(
        participation=ctx.participations[event.participant],
        form=event.data["form"],
        defer_years=event.data.get("defer_years", 0),
        submitted_at=ctx.moment(event.on),
        channel="staff",
        actor=ctx.actor,
    )
    if election.status == "rejected":
        raise Rejected(election.rule, election.message)
    return {}
