"""Submitting elections: every submission is validated by elections.validators and stored, accepted
or rejected with the rule it breaks (the audit trail keeps refusals too)."""
from __future__ import annotations

import datetime as dt
import zoneinfo
from decimal import Decimal

from django.db import transaction

from core import hooks
from core import valuation_calendar as cal
from core.audit import audit_record
from core.dates import parse_month
from elections import validators as V
from elections.models import (
    DeferralAllocation,
    DeferralElection,
    DeferralElectionLine,
    DistributionElection,
    InvestmentElection,
    InvestmentElectionLine,
    ScheduleChange,
    Status,
)
from participants.models import Participation

EASTERN = zoneinfo.ZoneInfo("America/New_York")


def _local_date(moment: dt.datetime) -> dt.date:
    return moment.astimezone(EASTERN).date()


def _split_account(name: str) -> tuple[str, dt.date | None]:
    if ":" in name:
        kind, month = name.split(":", 1)
        return kind, parse_month(month)
    return name, None


@transaction.atomic
def deferral_election_submit(*, participation: Participation, plan_year: int, percentages: dict[str, object],
                             accounts: dict[str, object] | None, submitted_at: dt.datetime, channel: str, actor,
                             performance_period: tuple[dt.date, dt.date] | None = None) -> DeferralElection:
    req = V.DeferralRequest(participation=participation, plan_year=plan_year, percentages=dict(percentages),
                            accounts=dict(accounts) if accounts else None, performance_period=performance_period,
                            submitted_at=submitted_at)
    violation = V.check_deferral(req)
    kind = V.election_kind(req)
    election = DeferralElection(
        participation=participation, plan_year=plan_year, submitted_at=submitted_at, channel=channel,
        actor=str(actor), kind={"annual": DeferralElection.Kind.ANNUAL, "first_year": DeferralElection.Kind.FIRST_YEAR,
                                "performance": DeferralElection.Kind.PERFORMANCE}[kind],
        performance_period_start=performance_period[0] if performance_period else None,
        performance_period_end=performance_period[1] if performance_period else None,
    )
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
        election.save()
    else:
        election.status = Status.ACCEPTED
        if kind == "first_year":
            election.irrevocable_at = V.first_year_window_end(req.version, participation.eligible_on)
            election.covers_pay_from = _local_date(election.irrevocable_at) + dt.timedelta(days=1)
        elif kind == "performance":
            election.irrevocable_at = V.performance_deadline(req.version, performance_period[1])
        else:
            election.irrevocable_at = V.annual_deadline(req.version, plan_year)
        # Changeable until the deadline: an earlier election of the same plan year and kind is replaced.
        (DeferralElection.objects.filter(participation=participation, plan_year=plan_year, kind=election.kind,
                                         status=Status.ACCEPTED, performance_period_end=election.performance_period_end)
         .update(status=Status.SUPERSEDED))
        election.save()
    for comp, pct in percentages.items():
        try:
            value = Decimal(str(pct))
        except Exception:
            value = Decimal(0)
        DeferralElectionLine.objects.create(election=election, component=comp, percent=value)
    for name, pct in (accounts or {}).items():
        kind_name, month = _split_account(name)
        DeferralAllocation.objects.create(election=election, account_kind=kind_name, specified_month=month,
                                          percent=int(Decimal(str(pct))) if V._is_whole(pct) else 0)
    audit_record(action=f"deferral_election.{election.status}", actor=actor, at=submitted_at, obj=election,
                 reason=election.message, data={"plan_year": plan_year, "percentages": {k: str(v) for k, v in percentages.items()},
                                                "rule": election.rule})
    return election


def account_first_payment(*, participation: Participation, account_kind: str, specified_month: dt.date | None) -> dt.date | None:
    """The first Payment Date under the current schedule of a Specified Date Account (EDCP 5.2(b))."""
    if account_kind != "specified_date" or specified_month is None:
        return None
    last_change = (ScheduleChange.objects.filter(participation=participation, account_kind=account_kind,
                                                 specified_month=specified_month, status=Status.ACCEPTED)
                   .order_by("-submitted_at", "-id").first())
    if last_change and last_change.new_first_payment:
        return last_change.new_first_payment
    v = participation.plan.version_on(specified_month)
    rule = V.distribution_rule_for(v, "specified_date")
    day = rule["payment_date"].get("day", 15) if rule else 15
    return specified_month.replace(day=day)


@transaction.atomic
def distribution_election_submit(*, participation: Participation, account: str, form: str, installments: int | None,
                                 lump_sum_percent: int | None, submitted_at: dt.datetime, channel: str, actor,
                                 delay_months: int = 0) -> DistributionElection:
    kind, month = _split_account(account)
    violation = V.check_distribution(participation=participation, account_kind=kind, specified_month=month, form=form,
                                     installments=installments, lump_sum_percent=lump_sum_percent,
                                     delay_months=delay_months, submitted_on=_local_date(submitted_at))
    election = DistributionElection(participation=participation, account_kind=kind, specified_month=month, form=form,
                                    installments=installments, lump_sum_percent=lump_sum_percent,
                                    delay_months=delay_months, submitted_at=submitted_at, channel=channel, actor=str(actor))
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
    else:
        election.status = Status.ACCEPTED
        (DistributionElection.objects.filter(participation=participation, account_kind=kind, specified_month=month,
                                             status=Status.ACCEPTED).update(status=Status.SUPERSEDED))
    election.save()
    if election.status == Status.ACCEPTED:
        hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=submitted_at)
    audit_record(action=f"distribution_election.{election.status}", actor=actor, at=submitted_at, obj=election,
                 reason=election.message, data={"account": account, "form": form, "rule": election.rule})
    return election


@transaction.atomic
def schedule_change_submit(*, participation: Participation, account: str, submitted_at: dt.datetime, channel: str,
                           actor, new_month: dt.date | None = None, delay_years: int | None = None,
                           form: str | None = None, installments: int | None = None,
                           lump_sum_percent: int | None = None) -> ScheduleChange:
    """EDCP Article VI: irrevocable on receipt (6.4); one account at a time (6.5)."""
    kind, month = _split_account(account)
    current = account_first_payment(participation=participation, account_kind=kind, specified_month=month)
    from payments.selectors import account_payments_started

    check = V.check_schedule_change(
        participation=participation, account_kind=kind, specified_month=month, current_first_payment=current,
        new_month=new_month, delay_years=delay_years, form=form, installments=installments,
        submitted_on=_local_date(submitted_at),
        already_paying=account_payments_started(participation=participation, account_kind=kind, specified_month=month))
    change = ScheduleChange(participation=participation, account_kind=kind, specified_month=month, new_month=new_month,
                            delay_years=delay_years, form=form or "", installments=installments,
                            previous_first_payment=current, new_first_payment=check.new_first_payment,
                            submitted_at=submitted_at, channel=channel, actor=str(actor))
    if check.violation:
        change.status, change.rule, change.message = Status.REJECTED, check.violation.rule, check.violation.text
    else:
        change.status = Status.ACCEPTED
    change.save()
    if change.status == Status.ACCEPTED:
        hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=submitted_at)
    audit_record(action=f"schedule_change.{change.status}", actor=actor, at=submitted_at, obj=change,
                 reason=change.message, data={"account": account, "rule": change.rule})
    return change


@transaction.atomic
def investment_election_submit(*, participation: Participation, allocation: dict[int, object], applies_to: str,
                               submitted_at: dt.datetime, channel: str, actor) -> InvestmentElection:
    """EDCP 7.4, RRP 3.05: effective on the next Valuation Date after it is received."""
    submitted_on = _local_date(submitted_at)
    violation = V.check_investment(participation=participation, allocation=allocation, submitted_on=submitted_on)
    election = InvestmentElection(participation=participation, applies_to=applies_to, submitted_at=submitted_at,
                                  channel=channel, actor=str(actor))
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
        election.save()
    else:
        election.status = Status.ACCEPTED
        election.effective_on = cal.next_valuation_date_after(submitted_on)
        election.save()
        for fund_id, pct in sorted(allocation.items()):
            InvestmentElectionLine.objects.create(election=election, fund_id=fund_id, percent=int(Decimal(str(pct))))
    audit_record(action=f"investment_election.{election.status}", actor=actor, at=submitted_at, obj=election,
                 reason=election.message, data={"allocation": {str(k): str(v) for k, v in allocation.items()},
                                                "applies_to": applies_to})
    return election
