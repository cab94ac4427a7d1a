"""What the books hold after a conversion, in the groups of the prior recordkeeper's control file (FORMAT.md
sections 3 and 5): the reconciliation a Committee signs compares the control totals with these figures, read
from this system's records on the conversion date, not with totals recomputed from the package's files.

- `positions.csv units` by plan, account kind and fund: the units of the ledger (every entry valued on or
  before the conversion date);
- `positions.csv market_value` by plan, account kind and fund: the positions' valuation on the conversion date;
  by plan and for every plan together: the plan liability report on the conversion date (books.liability);
- `accounts.csv value` and `vested_value` by plan and account kind: the liability report's lines, vested by the
  plan's own vesting rule.

Contribution history (`contributions.csv`) and the monthly benefits in pay (`db_benefits.csv`) are not
balances of the books: their totals are compared with the package as written.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db.models import Sum

from books.liability import plan_liability
from books.models import DailyValuation, LedgerEntry
from core.money import ZERO, money
from payments.models import ScheduledPayment
from plans.models import Plan

Key = tuple[str, str, str, str, str, str, str]  # file, measure, plan, account, fund, plan_year, source
UNITS = Decimal("0.000001")


def books_totals(*, plan_codes: list[str], as_of: dt.date) -> dict[Key, Decimal]:
    """The books' figure of every balance group of the control file, for the plans named, at the end of
    `as_of` (the conversion date). A group the books hold nothing for is absent (a total of 0)."""
    plans = list(Plan.objects.filter(code__in=plan_codes).order_by("code"))
    codes = [p.code for p in plans]
    out: dict[Key, Decimal] = {}
    units = (
        LedgerEntry.objects.filter(account__participation__plan__code__in=codes, valuation_date__lte=as_of)
        .values_list("account__participation__plan__code", "account__kind", "position__fund__code")
        .annotate(total=Sum("units"))
        .order_by("account__participation__plan__code", "account__kind", "position__fund__code")
    )
    for plan, kind, fund, total in units:
        out[("positions.csv", "units", plan, kind, fund, "", "")] = total.quantize(UNITS)
    values = (
        DailyValuation.objects.filter(account__participation__plan__code__in=codes, valuation_date=as_of)
        .values_list("account__participation__plan__code", "account__kind", "fund__code")
        .annotate(total=Sum("value"))
        .order_by("account__participation__plan__code", "account__kind", "fund__code")
    )
    for plan, kind, fund, total in values:
        out[("positions.csv", "market_value", plan, kind, fund, "", "")] = money(total)
    everything = ZERO
    for plan in plans:
        if plan.kind == Plan.Kind.DEFINED_BENEFIT:
            continue  # no account: its benefits are not positions
        report = plan_liability(plan=plan, as_of=as_of)
        out[("positions.csv", "market_value", plan.code, "", "", "", "")] = report.total
        everything += report.total
        for line in report.accounts:
            if line.accounts:
                out[("accounts.csv", "value", plan.code, line.kind, "", "", "")] = money(line.value)
                out[("accounts.csv", "vested_value", plan.code, line.kind, "", "", "")] = money(line.vested)
    out[("positions.csv", "market_value", "", "", "", "", "")] = money(everything)
    return out


def read_from_books(*, key: Key) -> bool:
    """Whether the control group `key` is a balance of the books (books_totals has its figure)."""
    file, measure = key[0], key[1]
    return (file, measure) in {
        ("positions.csv", "units"),
        ("positions.csv", "market_value"),
        ("accounts.csv", "value"),
        ("accounts.csv", "vested_value"),
    }


DUE_COLUMNS = ("employee_number", "name", "plan", "account", "benefit", "payment_date", "amount", "cite")


def payments_due_at_conversion(*, plan_codes: list[str], as_of: dt.date) -> list[list[str]]:
    """The payments of the plans named due on or before `as_of` (the conversion date) and not made: the first
    payment run pays them. FORMAT.md lists a payment due but not made with its Payment Date; a BRP benefit not
    begun may also owe what its plan pays before the package's next payment (a Pre-2005 Supplemental Benefit from
    the Benefit Commencement Date, BRP App. A 3(b), while the rest waits for a Key Employee's six months, BRP 4.3).
    Each as DUE_COLUMNS (account "" for a BRP benefit, amount "" until the payment job values it), by employee
    and date."""
    rows = (
        ScheduledPayment.objects.filter(
            participation__plan__code__in=plan_codes,
            payment_date__lte=as_of,
            status__in=ScheduledPayment.MUTABLE,
        )
        .order_by("participation__person__employee_number", "payment_date", "id")
        .values_list(
            "participation__person__employee_number",
            "participation__person__first_name",
            "participation__person__last_name",
            "participation__plan__code",
            "account__kind",
            "kind",
            "benefit",
            "payment_date",
            "amount",
            "cite",
        )
    )
    return [
        [
            number,
            f"{first} {last}".strip(),
            plan,
            ""
            if payment_kind == ScheduledPayment.Kind.ANNUITY
            else kind,  # a BRP benefit has no account of its own
            benefit,
            day.isoformat(),
            "" if amount is None else str(amount),
            cite,
        ]
        for number, first, last, plan, kind, payment_kind, benefit, day, amount, cite in rows
    ]
