"""Checks of a beneficiary designation as typed on a form: every problem at once, each beside its field.

A format mistake (a missing name, a share that is not a whole percentage, a date that is not one, shares of a
tier that do not add up to 100) is a form error and nothing is stored; beneficiaries_designate repeats the
checks that make a designation valid for callers without a form (the API, the demo, the tests).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.inputs import date_or_none, int_or_none
from participants.models import Beneficiary

# The relationships a designation names (the conversion's beneficiaries.csv uses the same codes).
RELATIONSHIPS: tuple[tuple[str, str], ...] = (
    ("spouse", "Spouse"),
    ("child", "Child"),
    ("grandchild", "Grandchild"),
    ("parent", "Parent"),
    ("sibling", "Brother or sister"),
    ("other_relative", "Other relative"),
    ("friend", "Friend"),
    ("trust", "Trust"),
    ("estate", "Estate"),
    ("charity", "Charity"),
    ("other", "Other"),
)
RELATIONSHIP_LABELS = dict(RELATIONSHIPS)
EARLIEST_BIRTH = dt.date(1900, 1, 1)


@dataclass
class DesignationCheck:
    """The rows as typed (for the form), the rows as the service takes them, and the problems by field name
    (`name_3`, `percent_2`, `total_primary`, `__all__`)."""

    typed: list[dict]
    rows: list[dict] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.errors.values())


def _typed_row(data: Mapping[str, str], i: int) -> dict:
    def raw(name: str) -> str:
        return (data.get(f"{name}_{i}") or "").strip()

    return {
        "i": i,
        "tier": raw("tier") or Beneficiary.Tier.PRIMARY,
        "name": raw("name"),
        "relationship": raw("relationship"),
        "birth_date": raw("birth_date"),
        "percent": raw("percent"),
    }


def _row_problems(row: dict, *, as_of: dt.date, add) -> dict | None:
    """The row as the service takes it, or None when one of its fields is wrong (each problem added)."""
    i = row["i"]
    good = True
    if row["tier"] not in Beneficiary.Tier.values:
        add(f"tier_{i}", "Choose primary or contingent.")
        good = False
    name_limit = Beneficiary._meta.get_field("name").max_length or 200
    if not row["name"]:
        add(f"name_{i}", "Enter the beneficiary's name (a person, a trust or an estate).")
        good = False
    elif len(row["name"]) > name_limit:
        add(f"name_{i}", f"A name is at most {name_limit} characters; this one has {len(row['name'])}.")
        good = False
    if not row["relationship"]:
        add(f"relationship_{i}", "Choose how this beneficiary is related to you.")
        good = False
    elif row["relationship"] not in RELATIONSHIP_LABELS:
        add(f"relationship_{i}", "Choose a relationship from the list.")
        good = False
    born = None
    if row["birth_date"]:
        born = date_or_none(row["birth_date"])
        if born is None:
            add(
                f"birth_date_{i}",
                f"Enter the date of birth as YYYY-MM-DD; {row['birth_date']!r} is not a date.",
            )
            good = False
        elif born > as_of:
            add(f"birth_date_{i}", f"A date of birth cannot be after today ({as_of:%Y-%m-%d}).")
            good = False
        elif born < EARLIEST_BIRTH:
            add(
                f"birth_date_{i}",
                f"A date of birth before {EARLIEST_BIRTH:%Y} is not possible; check the year.",
            )
            good = False
    percent = int_or_none(row["percent"])
    if not row["percent"]:
        add(f"percent_{i}", "Enter this beneficiary's share, a whole percentage from 1 to 100.")
        good = False
    elif percent is None or not 1 <= percent <= 100:
        add(f"percent_{i}", f"A share is a whole percentage from 1 to 100; you entered {row['percent']!r}.")
        good = False
    if not good:
        return None
    return {
        "tier": row["tier"],
        "name": row["name"],
        "relationship": row["relationship"],
        "birth_date": born,
        "percent": percent,
    }


def designation_check(*, data: Mapping[str, str], rows: int, as_of: dt.date) -> DesignationCheck:
    """Every problem of a designation form at once; rows left wholly blank are ignored."""
    check = DesignationCheck(typed=[_typed_row(data, i) for i in range(1, rows + 1)])

    def add(name: str, message: str) -> None:
        check.errors.setdefault(name, []).append(message)

    filled = [r for r in check.typed if r["name"] or r["percent"] or r["relationship"] or r["birth_date"]]
    totals: dict[str, int] = {}
    complete: dict[str, bool] = {}
    for row in filled:
        parsed = _row_problems(row, as_of=as_of, add=add)
        tier = row["tier"]
        percent = int_or_none(row["percent"])
        totals[tier] = totals.get(tier, 0) + (percent or 0)
        complete[tier] = complete.get(tier, True) and percent is not None and 1 <= percent <= 100
        if parsed is not None:
            check.rows.append(parsed)
    if Beneficiary.Tier.PRIMARY not in totals:
        add("__all__", "Name at least one primary beneficiary.")
    for tier, label in Beneficiary.Tier.choices:
        total = totals.get(tier)
        if total is None or total == 100 or not complete.get(tier):
            continue  # a missing or malformed share is reported beside it, not again as a sum
        gap = abs(100 - total)
        add(
            f"total_{tier}",
            f"The {label.lower()} beneficiaries' shares add up to {total}%: {gap}% "
            f"{'short of' if total < 100 else 'over'} 100%.",
        )
    if check.errors:
        check.rows = []
    return check
