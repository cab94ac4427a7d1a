"""Benefits in payment or due, taken over from the prior recordkeeper (FORMAT.md 5, payment schedules and the BRP).

Through the payments app's own services, so a converted benefit lives on as any other:
- `payment_schedules.csv`: each account's schedule is the plan's schedule of the account, computed by the schedule
  engine from the converted events, elections and schedule changes (and an `override` the prior administrator
  determined, EDCP 5.6/5.7, kept as a TakenOverOverride the engine honors); the payments already made are recorded as paid
  by the prior recordkeeper (they move no units), the next one falls on its Payment Date and is valued by the plan's
  rule by the payment job (`payments.services.schedules.schedules_take_over`);
- `db_benefits.csv`: a benefit in pay is recorded fixed (BRP 3.4(c)) at its monthly amount, form and survivor, with
  the payments made; the payment job pays the next month (`payments.services.annuities.annuities_take_over`). A
  separated participant's benefit not yet begun is planned as after any separation.

The package and the system must agree on what comes next: a schedule whose next Payment Date or number of payments
differs from the package's is a failure while writing (conflicts_with_records on its line), and nothing is applied.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from conversion.validate import first_after_six_month_anniversary
from core.bulk import analyze
from participants.models import Participation
from payments.models import Annuity, PaymentSchedule, ScheduledPayment, TakenOverOverride
from payments.services.annuities import (
    AnnuityTakenOver,
    AnnuityTakeOverError,
    annuities_not_commenced_open,
    annuities_take_over,
)
from payments.services.schedules import ScheduleTakenOver, schedules_take_over

Stream = Callable[[str], Iterator[tuple[int, dict[str, Any]]]]
IN_PAY = ("in_pay", "survivor_in_pay", "beneficiary_in_pay")
# Benefits per call of the set-based take-overs: each call's statements do not grow with it (some 30, and an
# ANALYZE check), its memory does (some 80 payments made per benefit in pay, as plain tuples, then one object each).
# 500: at 100,000 participants 64 calls, not 320. What a call writes is let go before it recomputes
# (annuities_take_over): at 10,000 participants this phase stays below the run's peak set before it (212 MB).
BENEFITS_PER_CALL = 500
# Schedules per call of `schedules_take_over`: its statements name every account of the call (PostgreSQL takes at most
# 65,535 parameters to a statement; 100,000 participants have some 96,000 schedules).
SCHEDULES_PER_CALL = 5000


class PaymentMismatch(Exception):
    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(message)
        self.file, self.line, self.message = file, line, message


def _by(package_id: str) -> str:
    return f"taken over from conversion package {package_id}"


def apply_payment_schedules(
    *,
    stream: Stream,
    accounts: dict[tuple[str, str, str], int],
    package_id: str,
    now: dt.datetime,
    cd: dt.date,
) -> int:
    """Every schedule of payment_schedules.csv, with its payments made; returns the number of schedules.

    `accounts` gives each account's id by its package key. The file goes `SCHEDULES_PER_CALL` schedules to a call,
    and each call's schedules are compared with the package before the next is read: what is held is one call's
    rows and payments, not the whole file's (some 96,000 schedules at 100,000 participants). The first line in
    the file whose schedule differs is the one reported, as when every schedule was compared at the end."""
    count = calls = 0
    chunk: list[tuple[int, dict[str, Any], int]] = []
    for line, v in stream("payment_schedules.csv"):
        chunk.append((line, v, accounts[(v["employee_number"], v["plan"], v["account"])]))
        if len(chunk) == SCHEDULES_PER_CALL:
            calls += 1
            count += _take_over_schedules(chunk, package_id=package_id, now=now, cd=cd, calls=calls)
            chunk = []
    if chunk:
        calls += 1
        count += _take_over_schedules(chunk, package_id=package_id, now=now, cd=cd, calls=calls)
    return count


def _take_over_schedules(
    chunk: list[tuple[int, dict[str, Any], int]],
    *,
    package_id: str,
    now: dt.datetime,
    cd: dt.date,
    calls: int,
) -> int:
    """One call's schedules: the prior administrator's overrides kept, the schedules taken over, then each compared
    with what the package says comes next."""
    TakenOverOverride.objects.bulk_create(
        [  # the prior administrator's determination (EDCP 5.6, 5.7): the engine honors it
            TakenOverOverride(
                account_id=account_id,
                kind=v["override"],
                source=f"conversion package {package_id}, payment_schedules.csv line {line}"[:300],
                recorded_at=now,
            )
            for line, v, account_id in chunk
            if v["override"]
        ]
    )
    remaining = schedules_take_over(
        taken=[
            ScheduleTakenOver(
                account_id=account_id,
                payments_made=v["payments_made"],
                last_payment_amount=v["last_payment_amount"],
            )
            for _, v, account_id in chunk
        ],
        by=_by(package_id),
        now=now,
        as_of=cd,
    )
    _analyze_as_they_grow(calls)
    for line, v, account_id in chunk:
        left = remaining.get(account_id, [])
        total = v["payments_made"] + len(left)
        first = left[0][0].payment_date if left else None
        if first != v["next_payment_date"] or total != v["payments_total"]:
            raise PaymentMismatch(
                "payment_schedules.csv",
                line,
                f"{v['employee_number']} {v['plan']} {v['account']}: the plan's schedule here has {total} payments, "
                f"the next on {first}; the package says {v['payments_total']}, the next on {v['next_payment_date']}",
            )
    return len(chunk)


def _analyze_as_they_grow(calls: int) -> None:
    """After the 1st, 2nd, 4th, 8th... call, the payment tables' statistics are refreshed: each call reads back the
    payments and schedules of its own benefits, and planned on the statistics of the (empty) tables the transaction
    began with, that lookup scans every payment still to make so far (core.bulk.analyze). Doubling keeps the
    statistics within a factor two of the rows for a number of ANALYZEs that grows with the logarithm of the calls."""
    if calls & (calls - 1) == 0:
        analyze(models=[PaymentSchedule, ScheduledPayment, Annuity, TakenOverOverride])


def _analyze_grown() -> None:
    """After each call of the benefits, the payment tables' statistics are refreshed once a table has doubled since
    its last ANALYZE (core.bulk.analyze, `grown`), for the reason of `_analyze_as_they_grow`. Not on a count of this
    phase's calls: the schedules before it leave the tables holding their rows, analyzed, and ANALYZEs after the
    1st, 2nd, 4th... call of benefits mostly found them grown far less than twofold (5 of the payments at 10,000
    participants, 2 of them now; each reads a sample of up to 30,000 pages)."""
    analyze(models=[PaymentSchedule, ScheduledPayment, Annuity, TakenOverOverride], grown=2)


def _key_wait_end(separation: dt.date, key: bool | None, commencement: dt.date) -> dt.date:
    """BRP 4.3: a Key Employee's first payment is the later of the commencement date and the 1st day of the month
    after the six-month anniversary of separation."""
    return max(commencement, first_after_six_month_anniversary(separation)) if key else commencement


def apply_db_benefits(
    *,
    stream: Stream,
    participations: dict[tuple[str, str], Participation],
    people: dict[str, dict[str, Any]],
    key_employee: Callable[[str, dt.date], bool | None],
    package_id: str,
    now: dt.datetime,
    cd: dt.date,
) -> int:
    """Each BRP benefit in pay, fixed, with its payments made; each separated benefit not begun, planned. The
    benefits of the package go to the set-based services `BENEFITS_PER_CALL` at a time."""
    in_pay: list[tuple[int, dict[str, Any], AnnuityTakenOver]] = []
    not_begun: list[tuple[int, dict[str, Any], Participation]] = []
    for line, v in stream("db_benefits.csv"):
        participation = participations[(v["employee_number"], v["plan"])]
        if v["status"] in IN_PAY:
            in_pay.append(
                (line, v, _taken_over(v, participation, people[v["employee_number"]], key_employee))
            )
        elif v["next_payment_date"] is not None:
            not_begun.append((line, v, participation))
    by = _by(package_id)
    checked: list[tuple[int, dict[str, Any], dt.date | None]] = []
    for start in range(0, len(in_pay), BENEFITS_PER_CALL):
        chunk = in_pay[start : start + BENEFITS_PER_CALL]
        try:
            paying = annuities_take_over(taken=[t for _, _, t in chunk], by=by, now=now, as_of=cd)
        except AnnuityTakeOverError as exc:
            line = next(line for line, _, t in chunk if t is exc.taken)
            raise PaymentMismatch("db_benefits.csv", line, str(exc)) from exc
        checked += [(line, v, _first(left)) for (line, v, _), left in zip(chunk, paying, strict=True)]
        _analyze_grown()
    for start in range(0, len(not_begun), BENEFITS_PER_CALL):
        chunk_nb = not_begun[start : start + BENEFITS_PER_CALL]
        planned = annuities_not_commenced_open(
            participations=[p for _, _, p in chunk_nb], by=by, now=now, as_of=cd
        )
        _analyze_grown()
        # the benefit the package describes; a Pre-2005 Supplemental Benefit (BRP App. A) is paid apart
        checked += [
            (line, v, _first([p for p in left if p.benefit == p.schedule.benefit]))
            for (line, v, _), left in zip(chunk_nb, planned, strict=True)
        ]
    for line, v, first in sorted(checked, key=lambda c: c[0]):
        if first != v["next_payment_date"]:
            raise PaymentMismatch(
                "db_benefits.csv",
                line,
                f"{v['employee_number']} {v['plan']}: the next monthly payment here is on {first}, the package says "
                f"{v['next_payment_date']}",
            )
    return len(checked)


def _first(left: list[ScheduledPayment]) -> dt.date | None:
    return left[0].payment_date if left else None


def _taken_over(
    v: dict[str, Any],
    participation: Participation,
    person: dict[str, Any],
    key_employee: Callable[[str, dt.date], bool | None],
) -> AnnuityTakenOver:
    separation = person["termination_date"]
    commencement = v["benefit_commencement_date"]
    survivor_monthly: Decimal | None = v["survivor_monthly_amount"]
    return AnnuityTakenOver(
        participation=participation,
        form=v["form"],
        commencement=commencement,
        first_payment=_key_wait_end(separation, key_employee(v["employee_number"], separation), commencement),
        monthly=v["monthly_amount"],
        next_payment=v["next_payment_date"],
        survivor_name=v["survivor_name"] or "",
        survivor_monthly=survivor_monthly,
    )
