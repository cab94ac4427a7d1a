"""Who is paid a death benefit (EDCP 5.4 "to the Beneficiary"; RRP 4.01(a) "to his Beneficiary").

The designation in force (participants.selectors.beneficiaries_in_force) decides:
  1. the primary beneficiaries living at the participant's death, by their whole percentages;
  2. if none of them survives, the contingent beneficiaries, the same way;
  3. if nobody was designated or no designee survives, the plan's default Beneficiary
     (`default_beneficiary`, e.g. EDCP 1.2: the Surviving Spouse, else the estate).
Reading (stated with the provision in the catalog): a beneficiary who died on or before the
participant's death did not survive; the share of a predeceased beneficiary is spread over the
survivors of the same tier in proportion to their percentages (60/30/10 with the 10 gone: 66.6667 and
33.3333). Percentages are kept to 4 places and always add up to exactly 100 (the last payee takes the
remainder), so the amounts split with core.money.split_by_percent add up to the cent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from core.money import HUNDRED, PERCENT_PRECISION, split_by_percent
from participants.models import Beneficiary, BeneficiaryDesignation, Person
from participants.selectors import beneficiaries_in_force

if TYPE_CHECKING:
    from participants.models import Beneficiary, BeneficiaryDesignation, Person
    from plans.models import Plan, PlanVersion


@dataclass(frozen=True)
class Payee:
    name: str
    percent: Decimal
    basis: str  # "primary beneficiary", "Surviving Spouse (EDCP 1.2)", ...


@dataclass(frozen=True)
class Payees:
    payees: tuple[Payee, ...]
    explanation: str

    @property
    def shared(self) -> bool:
        return len(self.payees) > 1


Key = TypeVar("Key", bound=Hashable)


def normalise_percents(*, parts: Sequence[tuple[Key, Decimal | int]]) -> list[tuple[Key, Decimal]]:
    """Scale percentages to add up to exactly 100: 4 places each, the last takes the remainder."""
    total = sum((Decimal(p) for _, p in parts), Decimal(0))
    if total <= 0:
        raise ValueError("nothing to share: the percentages add up to zero")
    out: list[tuple[Key, Decimal]] = []
    for key, pct in parts[:-1]:
        out.append((key, (Decimal(pct) * HUNDRED / total).quantize(PERCENT_PRECISION)))
    out.append((parts[-1][0], HUNDRED - sum((p for _, p in out), Decimal(0))))
    return out


def split_among(*, amount: Decimal, parts: Sequence[tuple[Key, Decimal | int]]) -> dict[Key, Decimal]:
    """Split `amount` by the parts' percentages (scaled to 100 if they are a subset); remainder on the last."""
    if not parts:
        return {}
    return dict(split_by_percent(amount, normalise_percents(parts=parts)))


def _survived(beneficiary: Beneficiary, death: dt.date) -> bool:
    return beneficiary.deceased_on is None or beneficiary.deceased_on > death


def death_payees(
    *,
    person: Person,
    plan: Plan,
    version: PlanVersion,
    death: dt.date,
    designations: dict[tuple[int, int], BeneficiaryDesignation] | None = None,
) -> Payees:
    """The payees of a death benefit and their shares, with the sections that make them so. `designations`: the
    designations in force read for many (participants.selectors.beneficiaries_in_force_of), this one's among them
    if it has one."""
    designation = (
        beneficiaries_in_force(person=person, plan=plan)
        if designations is None
        else designations.get((person.pk, plan.pk))
    )
    cite = version.cite("default_beneficiary")
    if designation is not None:
        everyone = list(designation.beneficiaries.all())
        for tier in (Beneficiary.Tier.PRIMARY, Beneficiary.Tier.CONTINGENT):
            named = [b for b in everyone if b.tier == tier]
            living = [b for b in named if _survived(b, death)]
            if not living:
                continue
            shares = normalise_percents(parts=[(b.name, b.percent) for b in living])
            payees = tuple(Payee(name, pct, f"{tier} beneficiary") for name, pct in shares)
            gone = [b.name for b in named if b not in living]
            why = (
                f"the {tier} beneficiaries of the designation received {designation.received_at:%B %d, %Y}"
                + (
                    f"; {', '.join(gone)} predeceased the participant and that share goes to the others in "
                    f"proportion ({cite})"
                    if gone
                    else ""
                )
            )
            return Payees(payees, why)
    order = version.provision("default_beneficiary", None) or ["estate"]
    married = person.marital_status == Person.MaritalStatus.MARRIED
    none_why = (
        "no beneficiary was designated" if designation is None else "no designated beneficiary survived"
    )
    for who in order:
        if who == "spouse" and married:
            return Payees(
                (Payee(f"Surviving Spouse of {person.full_name}", HUNDRED, f"Surviving Spouse ({cite})"),),
                f"{none_why}: the Surviving Spouse ({cite})",
            )
        if who == "estate":
            return Payees(
                (Payee(f"Estate of {person.full_name}", HUNDRED, f"estate ({cite})"),),
                f"{none_why}: the executor or administrator of the estate ({cite})",
            )
    return Payees(
        (Payee(f"Estate of {person.full_name}", HUNDRED, f"estate ({cite})"),),
        f"{none_why}: the estate ({cite})",
    )
