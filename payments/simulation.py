"""Simulator: emergency and domestic relations order events, the daily payment job, and the `payments` report.

Every payment goes through the real maker-checker path: "sim-preparer" (an administrator) prepares
the run and "sim-approver" (a committee member) approves it, which releases it to the books before
the crediting of its release date. Separation, death, disability and changes in control reach the
schedules through core.hooks (payments.apps), not through handlers here.
"""

from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from core import valuation_calendar as cal
from core.dates import parse_date
from core.money import ZERO
from core.simulation.registry import REPORTERS, SETUP_HOOKS, Rejected, daily, handles
from payments.models import Annuity, EmergencyWithdrawal, ScheduledPayment
from payments.services.annuities import AnnuityError, annuity_survivor_death_record
from payments.services.day import RunStaff, production_day_run
from payments.services.processing import payment_next_work_day, payments_close_paid
from payments.services.runs import PaymentRunError
from payments.services.withdrawals import (
    WithdrawalError,
    dro_record,
    emergency_approve,
    emergency_deny,
    emergency_request_record,
    emergency_sources,
)
from pensions.selectors import benefit_payment_account
from pensions.services.benefit import spouse_death_before_commencement_record
from pensions.services.orders import BenefitOrderError, benefit_order_record

PREPARER, APPROVER = "sim-preparer", "sim-approver"


def setup(ctx) -> None:
    User = get_user_model()
    users = {}
    for name, role in ((PREPARER, "administrator"), (APPROVER, "committee")):
        user, _ = User.objects.get_or_create(username=name, defaults={"is_active": True})
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        users[name] = user
    ctx.state["payments_users"] = users
    ctx.state["emergency_approvals"] = {}
    ctx.state["late_outcomes"] = {}
    # The days the payment job must look whatever the database says: every event day, and every day an
    # event brings work to without an event of its own (an emergency approved later: EDCP 5.5).
    ctx.state["due_days"] = {e.on for e in ctx.scenario.events}
    ctx.state["payments_next_day"] = None


SETUP_HOOKS.append(setup)


def _cite(ctx, day: dt.date, key: str) -> str:
    return ctx.plan.version_on(day).cite(key)


@handles("emergency_request")
def emergency_request(ctx, event) -> dict:
    d = event.data
    participation = ctx.participations[event.participant]
    cite = _cite(ctx, event.on, "emergency")
    if not d.get("approved_on"):
        raise Rejected(cite, "The Committee did not approve the request (no approval date): no payment.")
    approved_on = parse_date(d["approved_on"], field="approved_on")
    if approved_on < event.on:
        raise Rejected(cite, f"The approval ({approved_on}) cannot come before the request ({event.on}).")
    try:
        request = emergency_request_record(
            participation=participation,
            amount=Decimal(d["amount"]),
            requested_on=event.on,
            actor=ctx.actor,
            now=ctx.moment(event.on),
        )
    except WithdrawalError as exc:
        raise Rejected(cite, str(exc))
    ctx.state["emergency_approvals"].setdefault(approved_on, []).append((event.index, request.pk))
    ctx.state["due_days"].add(approved_on)
    if approved_on == event.on:
        _approve_due(ctx, event.on)
        outcome = ctx.state["late_outcomes"].pop(event.index, None)
        if outcome:
            raise Rejected(outcome["rule"], outcome["message"])
    return {}


@daily("day", 40)
def _approve_due(ctx, day: dt.date) -> None:
    """On the approval date the Committee approves what the need allows and the accounts hold (EDCP 5.5)."""
    due = ctx.state.get("emergency_approvals", {}).pop(day, [])
    approver = ctx.state.get("payments_users", {}).get(APPROVER)
    for index, pk in due:
        request = EmergencyWithdrawal.objects.get(pk=pk)
        available = sum((v for _, v in emergency_sources(participation=request.participation, on=day)), ZERO)
        amount = min(request.requested_amount, available)
        cite = request.cite
        if amount <= 0:
            emergency_deny(
                emergency=request,
                decided_on=day,
                actor=approver,
                now=ctx.moment(day, 9),
                reason="Nothing is available in the accounts an emergency payment may draw on.",
            )
            ctx.state["late_outcomes"][index] = {
                "status": "rejected",
                "rule": cite,
                "message": f"Nothing is available on {day} in the accounts an emergency payment may draw on: no payment.",
            }
            continue
        try:
            emergency_approve(
                emergency=request, amount=amount, approved_on=day, actor=approver, now=ctx.moment(day, 9)
            )
        except WithdrawalError as exc:
            ctx.state["late_outcomes"][index] = {"status": "rejected", "rule": cite, "message": str(exc)}


@handles("domestic_relations_order")
def domestic_relations_order(ctx, event) -> dict:
    d = event.data
    participation = ctx.participations[event.participant]
    if participation.plan.kind == participation.plan.Kind.DEFINED_BENEFIT:
        return _benefit_order(ctx, event, participation)
    try:
        order = dro_record(
            participation=participation,
            alternate_payee=d["alternate_payee"],
            order_date=event.on,
            percent=d.get("percent"),
            amount=Decimal(d["amount"]) if d.get("amount") else None,
            account_name=d.get("account", ""),
            actor=ctx.actor,
            now=ctx.moment(event.on),
        )
    except WithdrawalError as exc:
        raise Rejected(_cite(ctx, event.on, "domestic_relations_order"), str(exc))
    return {"amount": str(order.total)}


def _benefit_order(ctx, event, participation) -> dict:
    """BRP 6.7: the order divides each payment of the benefit (or is paid as its Actuarial Equivalent lump sum)."""

    d = event.data
    try:
        benefit_order_record(
            participation=participation,
            alternate_payee=d["alternate_payee"],
            received_on=event.on,
            percent=Decimal(str(d["percent"])) if d.get("percent") is not None else None,
            amount=Decimal(d["amount"]) if d.get("amount") else None,
            lump_sum=bool(d.get("lump_sum", False)),
            actor=ctx.actor,
            now=ctx.moment(event.on),
        )
    except BenefitOrderError as exc:
        raise Rejected(participation.plan.version_on(event.on).cite("db_domestic_relations_order"), str(exc))
    return {}


@handles("survivor_death")
def survivor_death(ctx, event) -> dict:
    """The Spouse (or joint annuitant) dies: a survivor annuity stops after the month of death, like the staff action;
    before the benefit begins, the Spouse's benefits fall away (the participant is no longer married)."""

    participation = ctx.participations[event.participant]
    version = participation.plan.version_on(event.on)
    annuity = Annuity.objects.filter(participation=participation).first()
    if annuity is not None and (annuity.survivor_percent or annuity.form == "prsb"):
        try:
            annuity_survivor_death_record(
                annuity=annuity, died_on=event.on, actor=ctx.actor, now=ctx.moment(event.on)
            )
        except AnnuityError as exc:
            raise Rejected(version.cite("db_survivor"), str(exc))
        return {}
    person = participation.person
    if person.marital_status != person.MaritalStatus.MARRIED:
        raise Rejected(version.cite("db_forms"), f"{person} has no Spouse or survivor on record.")
    if annuity is not None and annuity.status in (Annuity.Status.IN_PAY, Annuity.Status.COMPLETE):
        raise Rejected(version.cite("db_forms"), f"The {annuity.form_label} in pay pays no survivor benefit.")
    spouse_death_before_commencement_record(
        participation=participation, died_on=event.on, actor=ctx.actor, now=ctx.moment(event.on)
    )
    return {}


@daily("day", 60)
def production_day(ctx, day: dt.date) -> None:
    """The production day (payments.services.day): the payment job, the two-person run, the crediting.

    Between events the simulator asks the database only on the days work can fall due (the next
    valuation, release or close, and the due days of setup), so a quiet day costs nothing but its
    crediting; `ctx.shortcut = False` looks every day (the tests compare both).
    """
    next_day = ctx.state.get("payments_next_day")
    looks = not ctx.shortcut or day in ctx.state["due_days"] or (next_day is not None and day >= next_day)
    users = ctx.state["payments_users"]
    try:
        result = production_day_run(
            as_of=day,
            at=functools.partial(ctx.moment, day),
            staff=RunStaff(preparer=users[PREPARER], approver=users[APPROVER]),
            payments=looks,
            credit=cal.is_valuation_date(day),
            crediting_actor="crediting job (simulator)",
            crediting_since=ctx.scenario.start,
        )
    except PaymentRunError as exc:
        raise RuntimeError(f"payment run on {day} failed: {exc}")
    refused = result.crediting_refused
    if refused is not None:
        raise RuntimeError(f"crediting {refused.key} did not finish: {refused.message}")
    if looks:
        ctx.state["payments_next_day"] = payment_next_work_day(day=day)


def payments_report(ctx) -> dict:
    payments_close_paid()
    for entry in ctx.events:
        outcome = ctx.state.get("late_outcomes", {}).get(entry["index"])
        if outcome:
            entry.update(outcome)
    rows = (
        ScheduledPayment.objects.filter(
            participation__in=ctx.participations.values(), status=ScheduledPayment.Status.PAID
        )
        .select_related("account", "participation__person")
        .order_by("payment_date", "participation_id", "account_id", "number", "paid_on", "id")
    )
    return {
        "payments": [
            {
                "participant": ctx.participant_id(p.participation.person),
                "account": benefit_payment_account(benefit=p.benefit)
                if p.share == ScheduledPayment.Share.DEFINED
                else p.account.name,
                "kind": p.kind,
                "number": p.number,
                "of": p.of,
                "payment_date": p.payment_date.isoformat(),
                "paid_on": p.paid_on.isoformat() if p.paid_on else None,
                "valued_as_of": valued.isoformat() if (valued := p.valued_as_of or p.paid_on) else None,
                "amount": f"{p.amount:.2f}",
                "trigger": p.trigger,
                "cite": p.cite,
                **({"payee": p.payee_name} if p.payee_name else {}),
            }
            for p in rows
        ]
    }


REPORTERS.append(payments_report)
