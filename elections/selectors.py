"""Which election is in force: the reads payroll and crediting rely on."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from elections.models import DeferralCancellation, DeferralElection, DeferralElectionLine, Status
from participants.models import Participation


def deferral_line_in_force(*, participation: Participation, component: str, plan_year: int, pay_date: dt.date,
                           period_start: dt.date | None = None,
                           performance_period_end: dt.date | None = None) -> DeferralElectionLine | None:
    """The accepted election line governing this pay (evergreen when the plan says so, EDCP 3.2(d))."""
    version = participation.plan.version_on(pay_date)
    lines = (DeferralElectionLine.objects.select_related("election")
             .filter(election__participation=participation, election__status=Status.ACCEPTED, component=component,
                     election__plan_year__lte=plan_year)
             .order_by("-election__plan_year", "-election__submitted_at", "-election__id"))
    if not version.provision("evergreen", False):
        lines = lines.filter(election__plan_year=plan_year)
    earned_from = period_start or pay_date
    for line in lines:
        e = line.election
        if e.kind == DeferralElection.Kind.PERFORMANCE:
            if performance_period_end is None or e.performance_period_end != performance_period_end:
                continue
        elif performance_period_end is not None and any(
                x.election.kind == DeferralElection.Kind.PERFORMANCE
                and x.election.performance_period_end == performance_period_end for x in lines):
            continue
        if e.covers_pay_from and earned_from < e.covers_pay_from:
            continue  # EDCP 3.2(a): a first-year election covers only pay earned after it is irrevocable
        return line
    return None


def cancellation_on(*, participation: Participation, day: dt.date) -> DeferralCancellation | None:
    return DeferralCancellation.objects.filter(participation=participation, starts_on__lte=day, ends_on__gte=day).first()


def allocation_of(election: DeferralElection | None, default_kind: str) -> list[tuple[str, Decimal]]:
    """[(account name, percent)] of an election's deferrals; all to the default account without one."""
    if election is None or not election.allocations.exists():
        return [(default_kind, Decimal(100))]
    out = []
    for a in election.allocations.all():
        name = f"{a.account_kind}:{a.specified_month:%Y-%m}" if a.specified_month else a.account_kind
        out.append((name, Decimal(a.percent)))
    return out
