"""One production day, in the order production runs it: the payment job, the two-person payment run of what
is released that day, then the crediting of the Valuation Date (which posts the released distributions).

The beat (payments.process_day in the morning, books.credit_due_dates in the evening), the demo
population (load_demo) and the simulator all call `production_day_run`, so none of them writes the
sequence by hand. In production the run is prepared and approved by two people on the payments page
(maker-checker): the beat passes no staff and that step is left to them; the demo and the simulator
pass a preparer (an administrator) and an approver (a Committee member), who go through the same
capability and maker-checker checks as people do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from books.services.crediting import credit_due_dates
from core.models import JobRun
from payments.models import PaymentRun
from payments.services.processing import Work, payment_day_process, payment_work
from payments.services.runs import payment_run_approve, payment_run_prepare, payments_ready

# The hour of each step on a day whose steps are given times (the demo and the simulator).
JOB_HOUR, PREPARE_HOUR, APPROVE_HOUR = 7, 8, 10


@dataclass(frozen=True)
class RunStaff:
    """Who prepares and who approves the day's payment run (two different people: maker-checker)."""

    preparer: Any
    approver: Any


@dataclass
class ProductionDay:
    day: dt.date
    payments_job: JobRun | None = None  # None: the job found nothing to do (no run recorded)
    payment_run: PaymentRun | None = None
    credited: list[JobRun] = field(default_factory=list)

    @property
    def crediting_refused(self) -> JobRun | None:
        """The first crediting run that did not finish (a missing price, an earlier date not credited)."""
        return next((r for r in self.credited if r.status != JobRun.Status.DONE), None)


def production_day_run(
    *,
    as_of: dt.date,
    at: Callable[[int], dt.datetime],
    staff: RunStaff | None = None,
    payments: bool = True,
    credit: bool = True,
    work: Work | None = None,
    crediting_actor: str = "crediting job",
    crediting_since: dt.date | None = None,
) -> ProductionDay:
    """Run the steps of day `as_of`: the payment job, the payment run (with `staff`), the crediting.

    `at(hour)` gives the time of a step (production: the clock, whatever the hour). `payments=False` or
    `credit=False` leaves that part to another call (the beat runs the morning and the evening apart; the
    demo and the simulator credit only on Valuation Dates, where there is something to credit);
    `work` is the payment job's look at the database when the caller already took it; `crediting_since`
    is the first day of books that have no credited date yet (books.services.crediting.credit_due_dates).
    """
    result = ProductionDay(day=as_of)
    if payments:
        work = work or payment_work(day=as_of)
        if work.for_job:
            result.payments_job = payment_day_process(day=as_of, now=at(JOB_HOUR), work=work)
        if staff is not None and payments_ready(period_end=as_of).exists():
            run = payment_run_prepare(period_end=as_of, actor=staff.preparer, now=at(PREPARE_HOUR))
            result.payment_run = payment_run_approve(run=run, actor=staff.approver, now=at(APPROVE_HOUR))
    if credit:
        # Every Valuation Date not yet credited through today, in order (EDCP 7.2, RRP 3.05(c)).
        result.credited = credit_due_dates(through=as_of, actor=crediting_actor, since=crediting_since)
    return result
