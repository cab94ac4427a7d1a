"""A what-if for the account plans (issue 11), like the BRP quote: for a separation date the participant picks,
the payments each account would make under the elections in force, from the same schedule engine as the
payment job (EDCP 5.1-5.3, 5.7; RRP 4.01), on stated assumptions. It reads the books and writes nothing."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from books.models import Account
from core import hooks
from core.dates import add_months
from core.errors import ApplicationError
from core.money import HUNDRED, ZERO, installment, money, percent_of
from participants.models import Person
from participants.selectors import key_employee_status
from payments.services.engine import KeyStatus, compute_schedule
from payments.services.facts import load_facts
from payments.services.values import available_values, credited_through
from plans.models import Plan

MAX_YEARS = 40


class WhatIfRefused(ApplicationError):
    pass


@dataclass(frozen=True)
class WhatIfPayment:
    payment_date: dt.date
    what: str
    gross: Decimal
    reason: str
    cite: str


@dataclass
class WhatIfAccount:
    plan_name: str
    label: str
    balance_today: Decimal
    summary: str
    payments: list[WhatIfPayment] = field(default_factory=list)
    why_none: str = ""


@dataclass
class WhatIf:
    separation: dt.date
    annual_return: Decimal
    deferral_percent: Decimal | None
    assumptions: list[str]
    accounts: list[WhatIfAccount]


def _grown(value: Decimal, *, rate: Decimal, start: dt.date, end: dt.date) -> Decimal:
    """`value` compounded at `rate` % a year from `start` to `end` (a whole-day fraction of a year)."""
    if end <= start or rate == 0:
        return value
    years = Decimal((end - start).days) / Decimal("365")
    return money(value * (1 + rate / HUNDRED) ** years)


def _monthly_deferral(person: Person, percent: Decimal, components: set[str]) -> Decimal:
    """The deferral of one month's pay at `percent`, from the last pay lines (issue 11: the last pay line)."""
    lines = hooks.ask("last_pay_lines", person=person)
    return money(sum((percent_of(gross, percent) for _d, c, gross in lines if c in components), ZERO))


def account_whatif(  # noqa: C901 - one pass: facts, then each account's planned payments and their amounts
    *,
    person: Person,
    separation: dt.date,
    as_of: dt.date,
    annual_return: Decimal = ZERO,
    deferral_percent: Decimal | None = None,
) -> WhatIf:
    """What each of the person's account-plan accounts would pay after a separation on `separation`: the
    schedule engine's dates under the elections in force, the amounts from today's balance grown at
    `annual_return` % a year (and, with `deferral_percent`, monthly deferrals of that share of the last pay until
    the separation). Nothing is stored."""
    if separation < as_of:
        raise WhatIfRefused("Choose a separation date from today on.")
    if separation > add_months(as_of, 12 * MAX_YEARS):
        raise WhatIfRefused(f"Choose a separation date within {MAX_YEARS} years.")
    if not Decimal("-50") <= annual_return <= Decimal("50"):
        raise WhatIfRefused("Choose an annual return from -50% to 50%.")
    if deferral_percent is not None and not ZERO <= deferral_percent <= HUNDRED:
        raise WhatIfRefused("Choose a deferral percentage from 0 to 100.")
    accounts = list(
        Account.objects.filter(
            participation__person=person, participation__plan__kind=Plan.Kind.ACCOUNT_BALANCE
        )
        .select_related("participation__plan", "participation__person")
        .order_by("participation__plan__code", "kind", "specified_month")
    )
    credited = credited_through()
    facts = load_facts(accounts=accounts, as_of=as_of, credited=credited)
    balances = available_values(account_ids=[a.id for a in accounts], on=as_of, credited=credited)
    months = 0
    d = as_of
    while add_months(d, 1) <= separation:
        d, months = add_months(d, 1), months + 1
    assumptions = [
        f"Today's balances (valued through {credited:%B %-d, %Y})" if credited else "Today's balances",
        f"growing {annual_return.normalize():f}% a year until each payment is valued",
        "the elections in force today, and no other change of schedule",
    ]
    if deferral_percent is not None:
        assumptions.append(
            f"a deferral of {deferral_percent.normalize():f}% of your last pay each month for {months} month(s) "
            f"until the separation, into the account your elections send deferrals to"
        )
    out = []
    for a in accounts:
        f = facts[a.id]
        version = a.participation.plan.version_on(separation)
        balance = balances.get(a.id, ZERO)
        value_at_sep = _grown(balance, rate=annual_return, start=as_of, end=separation)
        default_account = version.provision("default_deferral_account", None)
        if deferral_percent is not None and a.kind == default_account and months:
            components = {c["code"] for c in version.provision("deferral_components", []) or []}
            value_at_sep += _monthly_deferral(person, deferral_percent, components) * months
        if f.separation is None and f.death is None:
            # The what-if: this separation, and the Key Employee list in force on its date (EDCP 1.20, 5.1(b)).
            f.separation = separation
            spec = f.version.provision("key_employee", None) or {}
            status = key_employee_status(
                person=person,
                on=separation,
                effective_month=spec.get("effective_month", 4),
                effective_day=spec.get("effective_day", 1),
            )
            f.key_status = KeyStatus(
                known=status.known, key=status.key, identification_year=status.identification_year
            )
            f.value_at_separation = value_at_sep
            f.value_known_through = f.separation_valuation_date = None
        result = compute_schedule(f=f)
        row = WhatIfAccount(a.participation.plan.name, f.label, balance, result.summary)
        left = value_at_sep
        at = separation
        for p in sorted(result.payments, key=lambda x: (x.payment_date, x.number)):
            if p.payment_date < as_of:
                continue
            valued = p.valued_as_of or p.payment_date
            left = _grown(left, rate=annual_return, start=at, end=max(valued, at))
            at = max(valued, at)
            if p.share == "percent":
                gross = money(percent_of(left, p.percent or 0))
            elif p.share == "installment":
                gross = installment(left, p.of - p.number + 1)
            else:
                gross = left
            gross = min(gross, left)
            left -= gross
            what = "Lump sum" if p.kind == "lump_sum" else f"Installment {p.number} of {p.of}"
            row.payments.append(WhatIfPayment(p.payment_date, what, gross, p.reason, p.cite))
        if not row.payments:
            row.why_none = (
                result.hold_reason
                or "No payment falls due after this separation under the plan's rules for this account."
            )
        out.append(row)
    return WhatIf(separation, annual_return, deferral_percent, assumptions, out)
