"""What the Company owes under each plan on a date: the liability report.

The plans are unfunded promises (EDCP 10.1-10.2, RRP 8.02-8.03, BRP 10.2): the accounts are bookkeeping
records and benefits are paid from the Company's general assets or a rabbi trust. The committee needs the
liability on a date, and BRP 8.1 needs one figure in particular: immediately before a Change in Control the
Company funds a rabbi trust with "the then Actuarial Equivalent of the present value of the Supplemental
Benefits of all Participants and the survivor benefits of all Beneficiaries determined as a single lump sum
payment".

- Account plans: the value of every account at the end of the date (the last credited Valuation Date on or
  before it, plus credits waiting for their Valuation Date), split into vested and unvested by the plan's
  vesting rule (books.services.vesting.vested_percents_of, which names its section), both for the whole plan
  in a handful of queries.
- Defined benefit plans, one line a participant, on the plan's actuarial basis (its `actuarial_basis`
  provision: mortality table and interest of the valuation date's month):
  * a benefit in pay: what has fallen due and is unpaid, at face, plus the monthly payments still to come
    valued as an annuity on the lives they depend on (participant, survivor, or both; a period certain for
    its remaining months), the first of them one month after the valuation date;
  * a participant who has not separated: the single lump sum of the benefit of a separation on the
    valuation date (BRP 4.2(c), the quote the participant's page shows);
  * a benefit the figures cannot yet give (a hold, a participant who would not be eligible if separated on
    the date) is listed as not valued with the reason, and counted apart: never as zero.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from books.selectors import last_credited_on_or_before, plan_account_values
from books.services.vesting import plan_vesting_subjects, vested_percents_of
from core import hooks
from core.money import HUNDRED, ZERO, money
from participants.models import Participation
from plans.models import Plan


@dataclass
class AccountLine:
    kind: str
    label: str
    accounts: int = 0
    value: Decimal = ZERO
    vested: Decimal = ZERO

    @property
    def unvested(self) -> Decimal:
        return self.value - self.vested


@dataclass
class BenefitLine:
    participation: Participation
    status: str
    value: Decimal | None
    method: str
    cite: str
    note: str = ""


@dataclass
class PlanLiability:
    plan: Plan
    as_of: dt.date
    cite: str
    reading: str
    valued_on: dt.date | None = None
    accounts: list[AccountLine] = field(default_factory=list)
    benefits: list[BenefitLine] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        if self.plan.kind == Plan.Kind.DEFINED_BENEFIT:
            return money(sum((b.value for b in self.benefits if b.value is not None), ZERO))
        return money(sum((a.value for a in self.accounts), ZERO))

    @property
    def vested(self) -> Decimal | None:
        return money(sum((a.vested for a in self.accounts), ZERO)) if self.accounts else None

    @property
    def not_valued(self) -> list[BenefitLine]:
        return [b for b in self.benefits if b.value is None]


def plan_liabilities(*, as_of: dt.date) -> list[PlanLiability]:
    """Every plan's liability at the end of `as_of`."""
    return [plan_liability(plan=plan, as_of=as_of) for plan in Plan.objects.order_by("code")]


def plan_liability(*, plan: Plan, as_of: dt.date) -> PlanLiability:
    version = plan.version_on(as_of)
    funding = version.provisions.filter(key="funding").first()
    report = PlanLiability(
        plan=plan,
        as_of=as_of,
        cite=version.cite("funding"),
        reading=funding.reading if funding is not None else "",
    )
    if plan.kind == Plan.Kind.DEFINED_BENEFIT:
        participations = list(
            Participation.objects.filter(plan=plan)
            .select_related("person")
            .order_by("person__last_name", "person__first_name", "id")
        )
        for p in participations:
            p.plan = plan  # one instance: the plan's versions and provisions read once for every line
        # The defined benefit in pay or to come: payments (annuities and their payments) answers, valued on the
        # plan's actuarial basis, for every participant at once (payments.liability; BRP 8.1).
        report.benefits = hooks.ask("defined_benefit_values", participations=participations, as_of=as_of)
    else:
        report.valued_on, report.accounts = _account_lines(plan, as_of)
    return report


# --- account plans -------------------------------------------------------------------------------------


def _account_lines(plan: Plan, as_of: dt.date) -> tuple[dt.date | None, list[AccountLine]]:
    """Each sub-account kind's count, value and vested part: values by aggregate SQL (books.selectors
    .plan_account_values), vesting for every account of the plan at once (books.services.vesting
    .vested_percents_of, EDCP 4.2, RRP 3.06): a handful of queries whatever the number of accounts."""
    values = plan_account_values(plan=plan, on=as_of)
    subjects = [s for s in plan_vesting_subjects(plan=plan) if s.account_id in values]
    version = plan.version_on(as_of)
    lines: dict[str, AccountLine] = {}
    for (
        spec
    ) in version.account_kinds():  # every sub-account of the plan, in the plan's order, even when empty
        lines[spec["kind"]] = AccountLine(kind=spec["kind"], label=spec.get("label") or spec["kind"])
    percents = vested_percents_of(subjects=subjects, plans={plan.id: plan}, on=as_of, whole_plan=True)
    for subject in subjects:
        value = values[subject.account_id]
        line = lines.setdefault(
            subject.kind, AccountLine(kind=subject.kind, label=subject.kind.replace("_", " ").title())
        )
        percent, _cite = percents[subject.account_id]
        line.accounts += 1
        line.value += value
        line.vested += money(value * percent / HUNDRED)
    return last_credited_on_or_before(day=as_of), list(lines.values())


__all__ = ["AccountLine", "BenefitLine", "PlanLiability", "plan_liabilities", "plan_liability"]
