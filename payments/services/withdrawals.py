"""One-off payments outside the benefit schedules: unforeseeable emergencies (EDCP 5.5) and domestic
relations orders (EDCP 5.9, RRP 2017 4.01(c)). Both are fixed amounts valued on their date and
released on the first Valuation Date on or after it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from books.models import Account
from books.services.accounts import parse_account_name
from core import valuation_calendar as cal
from core.audit import actor_label, audit_record
from core.errors import ApplicationError
from core.money import ZERO, money, percent_of
from core.notices import NoticeKind, notice_send
from core.roles import Cap, has_cap
from elections.services import ElectionError, deferral_cancel
from participants.models import Participation
from participants.selectors import death_of
from payments.models import DomesticRelationsOrder, EmergencyWithdrawal, PaymentSchedule, ScheduledPayment
from payments.services.values import available_values, credited_through

if TYPE_CHECKING:
    from core.audit import Actor

S = ScheduledPayment.Status


class WithdrawalError(ApplicationError):
    """A refused emergency or order; the message cites the plan section."""


def _check_dates(participation: Participation, day: dt.date, what: str) -> None:
    person = participation.person
    if day < person.hire_date:
        raise WithdrawalError(f"{person} was hired {person.hire_date}: {what} dated {day} is before that.")
    death = death_of(person=person)
    if death is not None and day > death.effective_date:
        raise WithdrawalError(f"{person} died {death.effective_date}: {what} dated {day} is after that.")


def _fixed_payment(
    *,
    participation: Participation,
    account: Account,
    amount: Decimal,
    day: dt.date,
    trigger: str,
    benefit: str,
    cite: str,
    reason: str,
    now: dt.datetime,
    because: str,
    payee: str = "",
    emergency: EmergencyWithdrawal | None = None,
    dro: DomesticRelationsOrder | None = None,
) -> tuple[PaymentSchedule, ScheduledPayment]:
    kind = PaymentSchedule.Kind.EMERGENCY if emergency else PaymentSchedule.Kind.DRO
    schedule = PaymentSchedule.objects.create(
        participation=participation,
        account=account,
        kind=kind,
        trigger=trigger,
        trigger_date=day,
        benefit=benefit,
        form="lump_sum",
        cite=cite,
        summary=f"{benefit} ({cite}): {reason}.",
        revision=1,
        computed_at=now,
        computed_because=because[:200],
        emergency=emergency,
        dro=dro,
    )
    status, hold_code, hold_reason = S.VALUED, "", ""
    if not participation.person.has_address and not payee:
        status, hold_code = S.HELD, "no_address"
        hold_reason = "The payee's mailing address is unknown: record it before the payment can be made."
    payment = ScheduledPayment(
        schedule=schedule,
        account=account,
        participation=participation,
        revision=1,
        trigger=trigger,
        benefit=benefit,
        kind=ScheduledPayment.Kind.LUMP_SUM,
        share=ScheduledPayment.Share.FIXED,
        payment_date=day,
        valuation_rule="event_date",
        valued_as_of=day,
        valuable_on=cal.last_valuation_date(day),
        release_date=cal.next_valuation_date(day),
        cite=cite,
        reason=reason[:300],
        status=status,
        hold_code=hold_code,
        hold_reason=hold_reason,
        amount=amount,
        payee_name=payee,
        created_at=now,
    )
    bulk_create_with_history([payment], ScheduledPayment)
    return schedule, payment


# --- unforeseeable emergency (EDCP 5.5) --------------------------------------------------------------


def _emergency_spec(participation: Participation, day: dt.date) -> tuple[dict, str]:
    version = participation.plan.version_on(day)
    spec = version.provision("emergency", None)
    if not spec:
        raise WithdrawalError(
            f"{participation.plan.code} has no unforeseeable emergency withdrawal ({version.cite('emergency')})."
        )
    return spec, version.cite("emergency")


def emergency_sources(
    *, participation: Participation, on: dt.date, credited: dt.date | None = None
) -> list[tuple[Account, Decimal]]:
    """The accounts an emergency payment draws on, in the plan's order, with what each holds on `on`.

    EDCP 5.5: Retirement/Termination until exhausted, then the Specified Date Accounts, the one with
    the latest scheduled payment first.
    """
    spec, _ = _emergency_spec(participation, on)
    credited = credited if credited is not None else credited_through()
    accounts = list(Account.objects.filter(participation=participation, kind__in=spec["order"]))
    values = available_values(account_ids=[a.id for a in accounts], on=on, credited=credited)
    firsts = _first_dates(accounts)

    def order(a: Account) -> tuple[int, int, int]:
        rank = spec["order"].index(a.kind)
        first = firsts.get(a.id) or (a.specified_month or dt.date.max)
        latest_first = (
            -first.toordinal()
            if spec.get("specified_date_order") == "latest_payment_first"
            else first.toordinal()
        )
        return (rank, latest_first, a.id)

    return [(a, values[a.id]) for a in sorted(accounts, key=order)]


def _first_dates(accounts: list[Account]) -> dict[int, dt.date]:
    out: dict[int, dt.date] = {}
    for account_id, day in (
        ScheduledPayment.objects.filter(account__in=accounts, schedule__kind=PaymentSchedule.Kind.BENEFIT)
        .exclude(status=S.CANCELLED)
        .order_by("payment_date")
        .values_list("account_id", "payment_date")
    ):
        out.setdefault(account_id, day)
    return out


def emergency_available(*, participation: Participation, on: dt.date) -> tuple[Decimal, str]:
    """What the accounts an emergency payment may draw on hold on `on`, and which they are (EDCP 5.5)."""
    sources = emergency_sources(participation=participation, on=on)
    names = ", ".join(dict.fromkeys(_account_label(a) for a, _ in sources)) or "none"
    return sum((v for _, v in sources), ZERO), names


def _account_label(account: Account) -> str:
    spec = account.participation.plan.version_on(account.opened_on).account_spec(account.kind) or {}
    label = spec.get("label", account.kind.replace("_", " ").title())
    return f"{label} ({account.specified_month:%B %Y})" if account.specified_month else label


@transaction.atomic
def emergency_request_record(
    *,
    participation: Participation,
    amount: Decimal,
    requested_on: dt.date,
    actor: Actor,
    now: dt.datetime | None = None,
    need: str = "",
    documents: str = "",
    channel: str = "simulator",
) -> EmergencyWithdrawal:
    """A participant's written request for an unforeseeable emergency payment (EDCP 5.5), for the Committee to decide."""
    _, cite = _emergency_spec(participation, requested_on)
    if money(amount) <= 0:
        raise WithdrawalError(f"An emergency request needs a positive amount ({cite}).")
    _check_dates(participation, requested_on, "an emergency request")
    now = now or timezone.now()
    request = EmergencyWithdrawal.objects.create(
        participation=participation,
        requested_amount=money(amount),
        requested_on=requested_on,
        need=need.strip(),
        documents=documents.strip(),
        channel=channel,
        cite=cite,
        recorded_by=actor_label(actor),
        recorded_at=now,
    )
    audit_record(
        action="emergency.request",
        actor=actor,
        at=now,
        obj=request,
        data={"amount": str(money(amount)), "channel": channel},
    )
    return request


def _decision_checks(emergency: EmergencyWithdrawal, *, on: dt.date, actor: Actor, cite: str) -> None:
    if not has_cap(actor, Cap.APPROVE_EMERGENCY):
        raise WithdrawalError(
            f"Deciding an emergency request needs the approve-emergency capability "
            f"(committee members, {cite})."
        )
    if emergency.status != EmergencyWithdrawal.Status.REQUESTED:
        raise WithdrawalError(f"This request was already {emergency.get_status_display().lower()}.")
    if on < emergency.requested_on:
        raise WithdrawalError(
            f"The decision ({on}) cannot come before the request ({emergency.requested_on})."
        )


def _cancel_deferrals(
    emergency: EmergencyWithdrawal, *, on: dt.date, reason: str, actor: Actor, now: dt.datetime
) -> None:
    """EDCP 3.7: the Committee cancels the participant's deferrals for the rest of the plan year of the emergency."""
    try:
        cancellation = deferral_cancel(
            participation=emergency.participation,
            ground="emergency",
            event_on=on,
            reason=reason or f"unforeseeable emergency request of {emergency.requested_on}",
            actor=actor,
            now=now,
        )
    except ElectionError as exc:
        raise WithdrawalError(str(exc))
    emergency.deferrals_cancelled, emergency.cancellation = True, cancellation


@transaction.atomic
def emergency_approve(
    *,
    emergency: EmergencyWithdrawal,
    amount: Decimal,
    approved_on: dt.date,
    actor: Actor,
    now: dt.datetime | None = None,
    reason: str = "",
    cancel_deferrals: bool = False,
) -> list[ScheduledPayment]:
    """The Committee approves an amount (no more than the need, EDCP 5.5); it is paid from the accounts in order.

    cancel_deferrals: the Committee also cancels deferrals for the rest of the plan year (EDCP 3.7).
    """
    emergency = EmergencyWithdrawal.objects.select_for_update().get(pk=emergency.pk)
    participation = emergency.participation
    spec, cite = _emergency_spec(participation, approved_on)
    _decision_checks(emergency, on=approved_on, actor=actor, cite=cite)
    amount = money(amount)
    if amount <= 0:
        raise WithdrawalError(f"The approved amount must be positive ({cite}).")
    _check_dates(participation, approved_on, "an emergency approval")
    sources = emergency_sources(participation=participation, on=approved_on)
    available = sum((v for _, v in sources), ZERO)
    if amount > available:
        names = ", ".join(dict.fromkeys(_account_label(a) for a, _ in sources)) or "none"
        raise WithdrawalError(
            f"The approved amount {amount:,.2f} is more than the {available:,.2f} available on "
            f"{approved_on:%B %d, %Y} in the accounts an emergency payment may draw on ({names}): "
            f"an emergency payment comes only from those accounts ({cite})."
        )
    now = now or timezone.now()
    emergency.status, emergency.approved_amount, emergency.decided_on = (
        EmergencyWithdrawal.Status.APPROVED,
        amount,
        approved_on,
    )
    emergency.decided_by, emergency.reason = actor_label(actor), reason
    if cancel_deferrals:
        _cancel_deferrals(emergency, on=approved_on, reason=reason, actor=actor, now=now)
    emergency.save()
    left, out = amount, []
    for account, value in sources:
        take = min(left, value)
        if take <= 0:
            continue
        _, payment = _fixed_payment(
            participation=participation,
            account=account,
            amount=take,
            day=approved_on,
            trigger="emergency",
            benefit="Unforeseeable emergency",
            cite=cite,
            now=now,
            emergency=emergency,
            reason=f"the date the Committee approved the withdrawal (paid within {spec.get('payment_within_days', 90)} days)",
            because=f"emergency approved by {actor_label(actor)}",
        )
        out.append(payment)
        left -= take
    audit_record(
        action="emergency.approve",
        actor=actor,
        at=now,
        obj=emergency,
        data={
            "amount": str(amount),
            "accounts": [p.account_id for p in out],
            "deferrals_cancelled": emergency.deferrals_cancelled,
        },
    )
    _notify_decision(emergency, cite=cite, actor=actor, now=now)
    return out


@transaction.atomic
def emergency_deny(
    *,
    emergency: EmergencyWithdrawal,
    decided_on: dt.date,
    reason: str,
    actor: Actor,
    now: dt.datetime | None = None,
    cancel_deferrals: bool = False,
) -> EmergencyWithdrawal:
    """The Committee denies the request with its reasons (e.g. the need is met by stopping deferrals, EDCP 5.5(iii),
    which cancel_deferrals then does under EDCP 3.7)."""
    emergency = EmergencyWithdrawal.objects.select_for_update().get(pk=emergency.pk)
    _, cite = _emergency_spec(emergency.participation, decided_on)
    _decision_checks(emergency, on=decided_on, actor=actor, cite=cite)
    if not reason.strip():
        raise WithdrawalError(f"A denial states its reasons ({cite}).")
    now = now or timezone.now()
    emergency.status, emergency.decided_on, emergency.decided_by, emergency.reason = (
        EmergencyWithdrawal.Status.DENIED,
        decided_on,
        actor_label(actor),
        reason.strip(),
    )
    if cancel_deferrals:
        _cancel_deferrals(emergency, on=decided_on, reason=reason.strip(), actor=actor, now=now)
    emergency.save()
    audit_record(
        action="emergency.deny",
        actor=actor,
        at=now,
        obj=emergency,
        reason=reason,
        data={"deferrals_cancelled": emergency.deferrals_cancelled},
    )
    _notify_decision(emergency, cite=cite, actor=actor, now=now)
    return emergency


def _notify_decision(emergency: EmergencyWithdrawal, *, cite: str, actor: Actor, now: dt.datetime) -> None:
    """Once the decision commits, tell the participant (core.notices: email or paper; once per request)."""
    approved = emergency.status == EmergencyWithdrawal.Status.APPROVED
    participation = emergency.participation

    def send() -> None:
        notice_send(
            kind=NoticeKind.EMERGENCY_DECISION,
            subject=f"{participation.plan.name}: your emergency withdrawal request is "
            f"{'approved' if approved else 'denied'}",
            template="email/emergency_decision.txt",
            context={
                "plan": participation.plan,
                "emergency": emergency,
                "approved": approved,
                "amount": f"{emergency.approved_amount or ZERO:,.2f}",
                "cite": cite,
            },
            link=reverse("payments_portal:emergency", kwargs={"pk": emergency.pk}),
            as_of=now,
            actor=actor,
            person=participation.person,
            obj=emergency,
        )

    transaction.on_commit(send)


# --- domestic relations orders (EDCP 5.9, RRP 2017 4.01(c)) --------------------------------------------


@transaction.atomic
def dro_record(
    *,
    participation: Participation,
    alternate_payee: str,
    order_date: dt.date,
    actor: Actor,
    percent: int | None = None,
    amount: Decimal | None = None,
    account_name: str = "",
    alternate_payee_email: str = "",
    alternate_payee_address: str = "",
    now: dt.datetime | None = None,
) -> DomesticRelationsOrder:
    """A valid order: a lump sum to the alternate payee as soon as practicable (Payment Date = the order's date)."""
    version = participation.plan.version_on(order_date)
    if not version.provision("domestic_relations_order", None):
        raise WithdrawalError(
            f"{version.label} makes no payment under a domestic relations order "
            f"({version.cite('domestic_relations_order')})."
        )
    rule = next(
        (
            r
            for r in version.provision("distribution", []) or []
            if r["trigger"] == "domestic_relations_order"
        ),
        None,
    )
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
        kind, month = parse_account_name(name=account_name)
        accounts = [a for a in accounts if a.kind == kind and a.specified_month == month]
        if not accounts:
            raise WithdrawalError(
                f"{participation.person} has no {account_name} account an order can reach ({cite})."
            )
    accounts.sort(key=lambda a: (kinds.index(a.kind), a.specified_month or dt.date.min, a.id))
    values = available_values(
        account_ids=[a.id for a in accounts], on=order_date, credited=credited_through()
    )
    total_available = sum((values[a.id] for a in accounts), ZERO)
    parts: list[tuple[Account, Decimal]] = []
    if percent is not None:
        parts = [(a, percent_of(values[a.id], percent)) for a in accounts]
    elif amount is not None:  # exactly one of the two, checked above
        amount = money(amount)
        if amount <= 0:
            raise WithdrawalError("The amount must be positive.")
        if amount > total_available:
            where = (
                f"the {_account_label(accounts[0])}"
                if account_name
                else "the accounts an order can reach ("
                + ", ".join(_account_label(a) for a in accounts)
                + ")"
                if accounts
                else "the accounts an order can reach"
            )
            raise WithdrawalError(
                f"The order assigns {amount:,.2f}, more than the {total_available:,.2f} {where} "
                f"{'holds' if account_name else 'hold'} on {order_date:%B %d, %Y}: an order can "
                f"assign only what the account holds ({cite})."
            )
        left = amount
        for a in accounts:
            take = min(left, values[a.id])
            if take > 0:
                parts.append((a, take))
                left -= take
    parts = [(a, v) for a, v in parts if v > 0]
    total = sum((v for _, v in parts), ZERO)
    if total <= 0:
        raise WithdrawalError(
            f"The accounts hold nothing on {order_date:%B %d, %Y}: nothing to assign ({cite})."
        )
    now = now or timezone.now()
    order = DomesticRelationsOrder.objects.create(
        participation=participation,
        alternate_payee=alternate_payee.strip(),
        alternate_payee_email=alternate_payee_email.strip(),
        alternate_payee_address="\n".join(
            line.strip() for line in alternate_payee_address.splitlines() if line.strip()
        ),
        order_date=order_date,
        percent=percent,
        amount=money(amount) if amount is not None else None,
        account_name=account_name,
        total=total,
        cite=cite,
        recorded_by=actor_label(actor),
        recorded_at=now,
    )
    for account, value in parts:
        _fixed_payment(
            participation=participation,
            account=account,
            amount=value,
            day=order_date,
            trigger="domestic_relations_order",
            benefit="Domestic relations order",
            cite=cite,
            now=now,
            payee=alternate_payee.strip(),
            dro=order,
            reason="as soon as practicable after the order: the first Valuation Date on or after its date",
            because=f"order recorded by {actor_label(actor)}",
        )
    audit_record(
        action="dro.record",
        actor=actor,
        at=now,
        obj=order,
        data={"alternate_payee": alternate_payee, "total": str(total)},
    )
    return order
