"""Simulator: elections go through the same services (and validators) as the portal and the API."""

from __future__ import annotations

from core.dates import parse_date, parse_month
from core.simulation.registry import Rejected, handles
from elections import services
from elections.models import Channel, Status


def _outcome(election) -> dict:
    if election.status == Status.REJECTED:
        raise Rejected(election.rule, election.message)
    return {"status": "accepted"}


@handles("deferral_election")
def deferral_election(ctx, event) -> dict:
    d = event.data
    pp = d.get("performance_period")
    election = services.deferral_election_submit(
        participation=ctx.participations[event.participant],
        plan_year=d["plan_year"],
        percentages=d["percentages"],
        accounts=d.get("accounts"),
        performance_period=(parse_date(pp["start"]), parse_date(pp["end"])) if pp else None,
        submitted_at=ctx.moment(event.on),
        channel=Channel.SIMULATOR,
        actor=ctx.actor,
    )
    return _outcome(election)


@handles("distribution_election")
def distribution_election(ctx, event) -> dict:
    d = event.data
    election = services.distribution_election_submit(
        participation=ctx.participations[event.participant],
        account=d["account"],
        form=d["form"],
        installments=d.get("installments"),
        lump_sum_percent=d.get("lump_sum_percent"),
        delay_months=d.get("delay_months", 0) + 12 * d.get("delay_years", 0),
        submitted_at=ctx.moment(event.on),
        channel=Channel.SIMULATOR,
        actor=ctx.actor,
    )
    return _outcome(election)


@handles("investment_election")
def investment_election(ctx, event) -> dict:
    d = event.data
    election = services.investment_election_submit(
        participation=ctx.participations[event.participant],
        allocation={ctx.funds[code].pk: pct for code, pct in d["allocation"].items()},
        applies_to=d.get("applies_to", "both"),
        submitted_at=ctx.moment(event.on),
        channel=Channel.SIMULATOR,
        actor=ctx.actor,
    )
    return _outcome(election)


@handles("schedule_change")
def schedule_change(ctx, event) -> dict:
    d = event.data
    change = services.schedule_change_submit(
        participation=ctx.participations[event.participant],
        account=d["account"],
        new_month=parse_month(d["new_month"]) if d.get("new_month") else None,
        delay_years=d.get("delay_years"),
        form=d.get("form"),
        installments=d.get("installments"),
        lump_sum_percent=d.get("lump_sum_percent"),
        submitted_at=ctx.moment(event.on),
        channel=Channel.SIMULATOR,
        actor=ctx.actor,
    )
    return _outcome(change)
