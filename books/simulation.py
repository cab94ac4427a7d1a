"""Simulator: pay, company contributions, declared contributions, and the forfeitures report."""

from __future__ import annotations

from decimal import Decimal

from books.models import Forfeiture
from books.services.accounts import BooksError
from books.services.contributions import company_contribution_credit, restoration_declare
from books.services.payroll import PayrollError, pay_record
from core.dates import parse_date
from core.simulation.registry import REPORTERS, Rejected, handles


@handles("pay")
def pay(ctx, event) -> dict:
    d = event.data
    try:
        pay_record(
            person=ctx.people[event.participant],
            pay_date=event.on,
            component=d["component"],
            gross=Decimal(d["gross"]),
            actor=ctx.actor,
            performance_period_end=parse_date(d["performance_period_end"])
            if d.get("performance_period_end")
            else None,
            net_available=Decimal(d["net_available"]) if d.get("net_available") else None,
            sequence=1
            + sum(
                1
                for e in ctx.scenario.events
                if e.index < event.index
                and e.type == "pay"
                and e.participant == event.participant
                and e.on == event.on
                and e.data["component"] == d["component"]
            ),
        )
    except (PayrollError, BooksError) as exc:
        raise Rejected("payroll", str(exc))
    return {}


@handles("company_contribution")
def company_contribution(ctx, event) -> dict:
    d = event.data
    try:
        company_contribution_credit(
            participation=ctx.participations[event.participant],
            kind=d["kind"],
            amount=Decimal(d["amount"]),
            plan_year=d["plan_year"],
            on=event.on,
            actor=ctx.actor,
            key=f"company:{ctx.participations[event.participant].pk}:{d['plan_year']}:{d['kind']}:{event.index}",
        )
    except BooksError as exc:
        raise Rejected(ctx.plan.version_on(event.on).cite("company_contributions"), str(exc))
    return {}


@handles("retirement_contribution_declared")
def retirement_contribution_declared(ctx, event) -> dict:
    d = event.data
    try:
        decl = restoration_declare(
            plan=ctx.plan,
            plan_year=d["plan_year"],
            percent=Decimal(d["percent"]),
            declared_on=event.on,
            actor=ctx.actor,
        )
    except BooksError as exc:
        raise Rejected(ctx.plan.version_on(event.on).cite("retirement_restoration"), str(exc))
    return {"credited": decl.participants_credited, "total": str(decl.total_credited)}


def forfeitures_report(ctx) -> dict:
    rows = (
        Forfeiture.objects.filter(account__participation__in=ctx.participations.values())
        .select_related("account__participation__person")
        .order_by("on", "id")
    )
    return {
        "forfeitures": [
            {
                "participant": ctx.participant_id(f.account.participation.person),
                "account": f.account.name,
                "on": f.on.isoformat(),
                "amount": str(f.amount),
            }
            for f in rows
        ]
    }


REPORTERS.append(forfeitures_report)
