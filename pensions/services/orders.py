"""BRP 6.7: Domestic Relations Orders against a Supplemental Benefit, before or after it begins.

The Committee records the order; the alternate payee's share is accounted for separately and paid out of the
benefit's own Payment Dates (the payments app splits each payment), or, when the order and the Committee so
provide, as the Actuarial Equivalent lump sum of the share on the first Payment Date after the order.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import transaction

from core import hooks
from core.audit import Actor, actor_label, audit_record
from core.errors import ApplicationError
from core.money import money
from participants.models import Participation
from pensions.models import BenefitOrder
from plans import actuarial
from plans.models import Plan


class BenefitOrderError(ApplicationError):
    """BRP 6.7: an order the plan cannot apply (the message names the section)."""


@transaction.atomic
def benefit_order_record(
    *,
    participation: Participation,
    alternate_payee: str,
    received_on: dt.date,
    actor: Actor,
    now: dt.datetime,
    percent: Decimal | None = None,
    amount: Decimal | None = None,
    lump_sum: bool = False,
) -> BenefitOrder:
    """Record an order the Committee has determined to be a Domestic Relations Order (6.7) and let the payments
    follow; payments already released are never changed."""
    version = participation.plan.version_on(received_on)
    cite = version.cite("db_domestic_relations_order") if version.has("db_domestic_relations_order") else ""
    if participation.plan.kind != Plan.Kind.DEFINED_BENEFIT or not cite:
        raise BenefitOrderError(f"{participation.plan.code} has no defined benefit an order can divide.")
    if not alternate_payee.strip():
        raise BenefitOrderError(f"The order must name the Alternate Payee ({cite}).")
    if (percent is None) == (amount is None):
        raise BenefitOrderError(f"Give either a percentage of each payment or an amount ({cite}).")
    if percent is not None and not (0 < Decimal(percent) <= 100):
        raise BenefitOrderError(
            f"The percentage must be more than 0 and at most 100, not {percent} ({cite})."
        )
    if amount is not None and Decimal(amount) <= 0:
        raise BenefitOrderError(f"The amount must be positive ({cite}).")
    if lump_sum and not version.provision("db_domestic_relations_order").get("lump_sum", False):
        raise BenefitOrderError(f"This plan pays an order only out of the benefit's payments ({cite}).")
    taken = sum(
        (
            o.percent
            for o in BenefitOrder.objects.filter(participation=participation, percent__isnull=False)
            if o.percent is not None
        ),
        Decimal(0),
    )
    if percent is not None and taken + Decimal(percent) > 100:
        raise BenefitOrderError(
            f"Orders on file already take {taken.normalize():f}% of each payment: no more than 100% ({cite})."
        )
    order = BenefitOrder.objects.create(
        participation=participation,
        alternate_payee=alternate_payee.strip()[:200],
        received_on=received_on,
        percent=Decimal(percent) if percent is not None else None,
        amount=money(Decimal(amount)) if amount is not None else None,
        lump_sum=lump_sum,
        cite=cite[:60],
        recorded_by=actor_label(actor)[:200],
        recorded_at=now,
    )
    audit_record(
        action="benefit_order.record",
        actor=actor,
        at=now,
        obj=order,
        data={"alternate_payee": order.alternate_payee, "share": order.share_label},
    )
    hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=now)
    return order


def order_share(*, order: BenefitOrder, payment: Decimal) -> Decimal:
    """The alternate payee's part of one payment: the percentage of it, or the amount (never more than the payment)."""
    if order.percent is not None:
        return money(payment * order.percent / 100)
    assert (
        order.amount is not None
    )  # an order is a percentage or an amount (benefit_order_record refuses neither)
    return min(order.amount, payment)


def share_lump_sum(
    *, participation: Participation, monthly_share: Decimal, on: dt.date, certain_left: int = 0
) -> Decimal:
    """6.7(c): the Actuarial Equivalent, on `on`, of the share of each monthly payment still to come for the
    participant's life (or the rest of a period certain and then life), on the plan's basis (4.2(c), 5.3)."""
    version = participation.plan.version_on(on)
    rule = version.provision("actuarial_basis")
    table, _ = actuarial.mortality_table(on.year)
    basis, _ = actuarial.segment_rates_for(
        on,
        rule.get("lookback_months", 1),
        rule.get("segment_boundaries_years", actuarial.DEFAULT_SEGMENT_BOUNDARIES),
    )
    life = actuarial.Life.on(participation.person.birth_date, on)
    factor = (
        actuarial.annuity_certain_and_life(table, life, basis, certain_left)
        if certain_left
        else actuarial.annuity_life(table, life, basis)
    )
    return money(monthly_share * 12 * Decimal(str(factor)))
