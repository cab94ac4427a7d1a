"""One-off payments outside the benefit schedules: unforeseeable emergencies (EDCP 5.5) and domestic
relations orders (EDCP 5.9, RRP 2017 4.01(c)). Both are fixed amounts valued on their date and
released on the first Valuation Date on or after it."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from books.models import Account
from core import valuation_calendar as cal
from core.audit import actor_label, audit_record
from core.money import ZERO, money, percent_of
from core.roles import Cap, has_cap
from participants.models import Participation
from participants.selectors import death_of
from payments.models import DomesticRelationsOrder, EmergencyWithdrawal, PaymentSchedule, ScheduledPayment
from payments.services.values import available_values, credited_through

S = ScheduledPayment.Status


class WithdrawalError(ValueError):
    """A refused emergency or order; the message cites the plan section."""


def _check_dates(participation: Participation, day: dt.date, what: str) -> None:
    person = participation.person
    if day < person.hire_date:
        raise WithdrawalError(f"{person} was hired {person.hire_date}: {what} dated {day} is before that.")
    death = death_of(person)
    if death is not None and day > death.effective_date:
        raise WithdrawalError(f"{person} died {death.effective_date}: {what} dated {day} is after that.")


def _fixed_payment(*, participation: Participation, account: Account, amount: Decimal, day: dt.date, trigger: str,
                   benefit: str, cite: str, reason: str, now: dt.datetime, because: str, payee: str = "",
                   emergency=None, dro=None) -> tuple[PaymentSchedule, ScheduledPayment]:
    kind = PaymentSchedule.Kind.EMERGENCY if emergency else PaymentSchedule.Kind.DRO
    schedule = PaymentSchedule.objects.create(
        participation=participation, account=account, kind=kind, trigger=trigger, trigger_date=day, benefit=benefit,
        form="lump_sum", cite=cite, summary=f"{benefit} ({cite}): {reason}.", revision=1, computed_at=now,
        computed_because=because[:200], emergency=emergency, dro=dro)
    status, hold_code, hold_reason = S.VALUED, "", ""
    if not participation.person.has_address and not payee:
        status, hold_code = S.HELD, "no_address"
        hold_reason = "The payee's mailing address is unknown: record it before the payment can be made."
    payment = ScheduledPayment(
        schedule=schedule, account=account, participation=participation, revision=1, trigger=trigger, benefit=benefit,
        kind=ScheduledPayment.Kind.LUMP_SUM, share=ScheduledPayment.Share.FIXED, payment_date=day,
        valuation_rule="event_date", valued_as_of=day, valuable_on=cal.last_valuation_date(day),
        release_date=cal.next_valuation_date(day), cite=cite, reason=reason[:300], status=status, hold_code=hold_code,
        hold_reason=hold_reason, amount=amount, payee_name=payee, created_at=now)
    bulk_create_with_history([payment], ScheduledPayment)
    return schedule, payment


# --- unforeseeable emergency (EDCP 5.5) --------------------------------------------------------------

def _emergency_spec(participation: Participation, day: dt.date) -> tuple[dict, str]:
    version = participation.plan.version_on(day)
    spec = version.provision("emergency", None)
    if not spec:
        raise WithdrawalError(f"{participation.plan.code} has no unforeseeable emergency withdrawal ({version.cite('emergency')}).")
    return spec, version.cite("emergency")


def emergency_sources(*, participation: Participation, on: dt.date, credited: dt.date | None = None
                      ) -> list[tuple[Account, Decimal]]:
    """The accounts an emergency payment draws on, in the plan's order, with what each holds on `on`.

    EDCP 5.5: Retirement/Termination until exhausted, then the Specified Date Accounts, the one with
    the latest scheduled payment first.
    """
    spec, _ = _emergency_spec(participation, on)
    credited = credited if credited is not None else credited_through()
    accounts = list(Account.objects.filter(participation=participation, kind__in=spec["order"]))
    values = available_values([a.id for a in accounts], on=on, credited=credited)
    firsts = _first_dates(accounts)

    def order(a: Account):
        rank = spec["order"].index(a.kind)
        first = firsts.get(a.id) or (a.specified_month or dt.date.max)
        latest_first = -first.toordinal() if spec.get("specified_date_order") == "latest_payment_first" else first.toordinal()
        return (rank, latest_first, a.id)

    return [(a, values[a.id]) for a in sorted(accounts, key=order)]


def _first_dates(accounts: list[Account]) -> dict[int, dt.date]:
    out: dict[int, dt.date] = {}
    for account_id, day in (ScheduledPayment.objects.filter(account__in=accounts, schedule__kind=PaymentSchedule.Kind.BENEFIT)
                            .exclude(status=S.CANCELLED).order_by("payment_date").values_list("account_id", "payment_date")):
        out.setdefault(account_id, day)
    return out


@transaction.atomic
def emergency_request_record(*, participation: Participation, amount: Decimal, requested_on: dt.date, actor,
                             now: dt.datetime | None = None) -> EmergencyWithdrawal:
    _, cite = _emergency_spec(participation, requested_on)
    if money(amount) <= 0:
        raise WithdrawalError(f"An emergency request needs a positive amount ({cite}).")
    _check_dates(participation, requested_on, "an emergency request")
    now = now or timezone.now()
    request = EmergencyWithdrawal.objects.create(participation=participation, requested_amount=money(amount),
                                                 requested_on=requested_on, cite=cite, recorded_by=actor_label(actor),
                                                 recorded_at=now)
    audit_record(action="emergency.request", actor=actor, at=now, obj=request, data={"amount": str(money(amount))})
    return request


@transaction.atomic
def emergency_approve(*, emergency: EmergencyWithdrawal, amount: Decimal, approved_on: dt.date, actor,
                      now: dt.datetime | None = None, reason: str = "") -> list[ScheduledPayment]:
    """The Committee approves an amount (no more than the need, EDCP 5.5); it is paid from the accounts in order."""
    emergency = EmergencyWithdrawal.objects.select_for_update().get(pk=emergency.pk)
    participation = emergency.participation
    spec, cite = _emergency_spec(participation, approved_on)
    if not has_cap(actor, Cap.APPROVE_EMERGENCY):
        raise WithdrawalError("Approving an emergency withdrawal needs the approve-emergency capability (committee members).")
    if emergency.status != EmergencyWithdrawal.Status.REQUESTED:
        raise WithdrawalError(f"This request was already {emergency.get_status_display().lower()}.")
    amount = money(amount)
    if amount <= 0:
        raise WithdrawalError(f"The approved amount must be positive ({cite}).")
    if approved_on < emergency.requested_on:
        raise WithdrawalError(f"The approval ({approved_on}) cannot come before the request ({emergency.requested_on}).")
    _check_dates(participation, approved_on, "an emergency approval")
    sources = emergency_sources(participation=participation, on=approved_on)
    available = sum((v for _, v in sources), ZERO)
    if amount > available:
        raise WithdrawalError(f"The approved amount {amount:,.2f} is more than the {available:,.2f} the accounts an "
                              f"emergency payment may draw on hold on {approved_on:%B %d, %Y} ({cite}).")
    now = now or timezone.now()
    emergency.status, emergency.approved_amount, emergency.decided_on = EmergencyWithdrawal.Status.APPROVED, amount, approved_on
    emergency.decided_by, emergency.reason = actor_label(actor), reason
    emergency.save()
    left, out = amount, []
    for account, value in sources:
        take = min(left, value)
        if take <= 0:
            continue
        _, payment = _fixed_payment(
            participation=participation, account=account, amount=take, day=approved_on, trigger="emergency",
            benefit="Unforeseeable emergency", cite=cite, now=now, emergency=emergency,
            reason=f"the date the Committee approved the withdrawal (paid within {spec.get('payment_within_days', 90)} days)",
            because=f"emergency approved by {actor_label(actor)}")
        out.append(payment)
        left -= take
    audit_record(action="emergency.approve", actor=actor, at=now, obj=emergency,
                 data={"amount": str(amount), "accounts": [p.account_id for p in out]})
    return out


@transaction.atomic
def emergency_deny(*, emergency: EmergencyWithdrawal, decided_on: dt.date, reason: str, actor,
                   now: dt.datetime | None = None) -> EmergencyWithdrawal:
    if emergency.status != EmergencyWithdrawal.Status.REQUESTED:
        raise WithdrawalError(f"This request was already {emergency.get_status_display().lower()}.")
    now = now or timezone.now()
    emergency.status, emergency.decided_on, emergency.decided_by, emergency.reason = (
        EmergencyWithdrawal.Status.DENIED, decided_on, actor_label(actor), reason)
    emergency.save()
    audit_record(action="emergency.deny", actor=actor, at=now, obj=emergency, reason=reason)
    return emergency


# --- domestic relations orders (EDCP 5.9, RRP 2017 4.01(c)) --------------------------------------------

@transaction.atomic
def dro_record(*, participation: Participation, alternate_payee: str, order_date: dt.date, actor,
               percent: int | None = None, amount: Decimal | None = None, account_name: str = "",
               now: dt.datetime | None = None) -> DomesticRelationsOrder:
    """A valid order: a lump sum to the alternate payee as soon as practicable (Payment Date = the order's date)."""
    from books.services.accounts import parse_account_name

    version = participation.plan.version_on(order_date)
    if not version.provision("domestic_relations_order", None):
        raise WithdrawalError(f"{version.label} makes no payment under a domestic relations order "
                              f"({version.cite('domestic_relations_order')}).")
    rule = next((r for r in version.provision("distribution", []) or [] if r["trigger"] == "domestic_relations_order"), None)
    cite = rule["cite"] if rule else version.cite("domestic_relations_order")
    if not alternate_payee.strip():
        raise WithdrawalError(f"The order must name the alternate payee ({cite}).")
    if (percent is None) == (amount is None):
        raise WithdrawalError("Give either a percent or an amount.")
    if percent is not None and not 1 <= percent <= 100:
        raise WithdrawalError(f"The percent must be a whole number from 1 to 100, not {percent}.")
    _check_dates(participation, order_date, "a domestic relations order")
    kinds = rule["accounts"] if rule else []
    accounts = list(Account.objects.filter(participation=participation, kind__in=kinds))
    if account_name:
        kind, month = parse_account_name(account_name)
        accounts = [a for a in accounts if a.kind == kind and a.specified_month == month]
        if not accounts:
            raise WithdrawalError(f"{participation.person} has no {account_name} account an order can reach ({cite}).")
    accounts.sort(key=lambda a: (kinds.index(a.kind), a.specified_month or dt.date.min, a.id))
    values = available_values([a.id for a in accounts], on=order_date, credited=credited_through())
    total_available = sum((values[a.id] for a in accounts), ZERO)
    parts: list[tuple[Account, Decimal]] = []
    if percent is not None:
        parts = [(a, percent_of(values[a.id], percent)) for a in accounts]
    else:
        amount = money(amount)
        if amount <= 0:
            raise WithdrawalError("The amount must be positive.")
        if amount > total_available:
            where = account_name or "the accounts"
            raise WithdrawalError(f"The order assigns {amount:,.2f}, more than the {total_available:,.2f} {where} hold on "
                                  f"{order_date:%B %d, %Y} ({cite}).")
        left = amount
        for a in accounts:
            take = min(left, values[a.id])
            if take > 0:
                parts.append((a, take))
                left -= take
    parts = [(a, v) for a, v in parts if v > 0]
    total = sum((v for _, v in parts), ZERO)
    if total <= 0:
        raise WithdrawalError(f"The accounts hold nothing on {order_date:%B %d, %Y}: nothing to assign ({cite}).")
    now = now or timezone.now()
    order = DomesticRelationsOrder.objects.create(
        participation=participation, alternate_payee=alternate_payee.strip(), order_date=order_date, percent=percent,
        amount=money(amount) if amount is not None else None, account_name=account_name, total=total, cite=cite,
        recorded_by=actor_label(actor), recorded_at=now)
    for account, value in parts:
        _fixed_payment(participation=participation, account=account, amount=value, day=order_date,
                       trigger="domestic_relations_order", benefit="Domestic relations order", cite=cite, now=now,
                       payee=alternate_payee.strip(), dro=order,
                       reason="as soon as practicable after the order: the first Valuation Date on or after its date",
                       because=f"order recorded by {actor_label(actor)}")
    audit_record(action="dro.record", actor=actor, at=now, obj=order,
                 data={"alternate_payee": alternate_payee, "total": str(total)})
    return order
