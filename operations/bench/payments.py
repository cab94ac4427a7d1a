"""`manage.py bench payments --participants N [--json]`: schedule and process one payment day at scale.

In a scratch database: N EDCP participants, each with a Retirement/Termination Account valued on the
last Valuation Dates; 5% of them separated in the previous month so that their termination benefit
(EDCP 5.1: the 15th of the month after separation, valued at the end of the month of separation) is
due on the processing day, half as a lump sum and half as the first of five installments. Timed: the
schedules of the day's separations (what the separation hook computes), the real daily job
(valuation of what is due, holds) and the two-person payment run that releases the day's payments
to the books. The set-up (including every account's waiting schedule) is not timed.
"""

from __future__ import annotations

import datetime as dt
import resource
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone

from books.models import Account
from core import valuation_calendar as cal
from operations.simulation.sandbox import scratch_database
from participants.models import KeyEmployeeList
from payments.models import ScheduledPayment
from payments.services.processing import payment_day_process
from payments.services.runs import payment_run_approve, payment_run_prepare
from payments.services.schedules import schedules_recompute
from plans.models import Fund, Plan

DAY = dt.date(2026, 4, 15)  # a Wednesday, a Valuation Date
SEPARATED_ON = dt.date(2026, 3, 20)
VALUED_ON = dt.date(2026, 3, 31)
CREDITED_THROUGH = dt.date(2026, 4, 14)


def add_arguments(parser) -> None:
    pass


def _setup(n: int) -> dict:
    plan = Plan.objects.get(code="EDCP")
    fund = Fund.objects.create(plan=plan, code="SV", name="Stable Value", is_default=True)
    days = cal.valuation_dates_between(VALUED_ON, DAY)
    now = timezone.now()
    due = max(1, n * 5 // 100)
    with connection.cursor() as c:
        c.execute(
            """INSERT INTO plans_fundprice (fund_id, date, price, loaded_at, source)
                     SELECT %s, d, 10, %s, 'bench' FROM unnest(%s::date[]) AS d""",
            [fund.id, now, days],
        )
        c.execute(
            """INSERT INTO participants_person (employee_number, first_name, last_name, birth_date, hire_date,
                         marital_status, email, address_line1, address_line2, city, state, postal_code)
                     SELECT 'B' || lpad(g::text, 7, '0'), 'Bench', 'P' || g, DATE '1965-01-01', DATE '2005-01-03',
                            'single', '', '1 Bench Way', '', 'Richmond', 'VA', '23230'
                     FROM generate_series(1, %s) g""",
            [n],
        )
        c.execute(
            """INSERT INTO participants_participation (person_id, plan_id, entered_on, eligible)
                     SELECT id, %s, DATE '2006-01-01', true FROM participants_person""",
            [plan.id],
        )
        c.execute("""INSERT INTO books_account (participation_id, kind, opened_on)
                     SELECT id, 'retirement_termination', DATE '2006-01-01' FROM participants_participation""")
        c.execute(
            "INSERT INTO books_position (account_id, fund_id) SELECT id, %s FROM books_account", [fund.id]
        )
        # Each account holds 6,000 to 99,999 units at 10.00: values of 60,000 and up (above the small balance).
        c.execute(
            """INSERT INTO books_dailyvaluation (position_id, account_id, fund_id, valuation_date, units, price,
                         value, flow, earnings)
                     SELECT p.id, p.account_id, p.fund_id, d, 6000 + (p.id %% 94000), 10, (6000 + (p.id %% 94000)) * 10,
                            CASE WHEN d = %s THEN (6000 + (p.id %% 94000)) * 10 ELSE 0 END, 0
                     FROM books_position p CROSS JOIN unnest(%s::date[]) AS d""",
            [days[0], [d for d in days if d <= CREDITED_THROUGH]],
        )
        # The books prove (verify_books): the units came in as one deferral on the first day (that row's flow).
        c.execute(
            """INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, valuation_date,
                         units, price, amount, idempotency_key, actor, posted_at, memo)
                     SELECT p.id, p.account_id, 'credit', 'deferral', %s, %s, 6000 + (p.id %% 94000), 10,
                            (6000 + (p.id %% 94000)) * 10, 'bench-opening-' || p.id, 'bench', %s, 'bench opening'
                     FROM books_position p""",
            [days[0], days[0], now],
        )
        c.execute(
            """INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                         started_at, heartbeat_at, finished_at, stats)
                     SELECT 'crediting', d::text, 'done', 1, 1, 'bench', 1, 'bench', %s, %s, %s, '{}'
                     FROM unnest(%s::date[]) AS d""",
            [now, now, now, [d for d in days if d <= CREDITED_THROUGH]],
        )
        c.execute(
            """INSERT INTO participants_employmentevent (person_id, kind, reason, effective_date, recorded_at,
                         recorded_by, note)
                     SELECT id, 'separation', 'resignation', %s, %s, 'bench', '' FROM participants_person
                     ORDER BY id LIMIT %s""",
            [SEPARATED_ON, now, due],
        )
        c.execute(
            """INSERT INTO elections_distributionelection (participation_id, submitted_at, status, rule, message,
                         channel, actor, request_data, account_kind, form, installments, delay_months)
                     SELECT pa.id, %s, 'accepted', '', '', 'import', 'bench', '{}', 'retirement_termination', 'installments', 5, 0
                     FROM participants_participation pa WHERE pa.person_id %% 2 = 0""",
            [now],
        )
        # The steady state before the day: every account already has its (waiting) schedule, as the
        # daily job gave it when the account opened.
        c.execute(
            """INSERT INTO payments_paymentschedule (participation_id, account_id, kind, trigger, benefit, form, cite,
                         summary, hold_reason, revision, computed_at, computed_because)
                     SELECT a.participation_id, a.id, 'benefit', '', 'Termination Benefit', 'lump_sum', 'EDCP 5.1',
                            'Termination Benefit (EDCP 5.1): payable after separation.', '', 1, %s, 'account opened'
                     FROM books_account a""",
            [now],
        )
        c.execute("ANALYZE")
    for year in (2024, 2025):
        KeyEmployeeList.objects.create(identification_year=year, recorded_at=now, recorded_by="bench")
    User = get_user_model()
    users = {}
    for name, role in (("bench-preparer", "administrator"), ("bench-approver", "committee")):
        users[name] = User.objects.create(username=name)
        users[name].groups.add(Group.objects.get_or_create(name=role)[0])
    return {"due": due, "users": users}


def measure(state: dict) -> dict:
    """The timed part, in the current database (set up by _setup)."""
    t0 = time.monotonic()
    # What the separation hook does for each separation recorded, here for the day's whole batch at once.
    separated = list(Account.objects.filter(participation__person__employment_events__kind="separation"))
    schedules_recompute(accounts=separated, because="separations recorded", now=timezone.now())
    ts = time.monotonic()
    job = payment_day_process(day=DAY, now=timezone.now())
    t1 = time.monotonic()
    run_ = payment_run_prepare(period_end=DAY, actor=state["users"]["bench-preparer"], now=timezone.now())
    payment_run_approve(run=run_, actor=state["users"]["bench-approver"], now=timezone.now())
    t2 = time.monotonic()
    released = ScheduledPayment.objects.filter(
        status=ScheduledPayment.Status.RELEASED, release_date=DAY
    ).count()
    return {
        "payments": released,
        "seconds": round(t2 - t0, 2),
        "schedule_seconds": round(ts - t0, 2),
        "job_seconds": round(t1 - ts, 2),
        "run_seconds": round(t2 - t1, 2),
        "payments_scheduled": ScheduledPayment.objects.count(),
        "expected_due": state["due"],
        "job_stats": job.stats if job else {},
    }


def run(*, participants: int = 100000, json: bool = False, **_) -> dict:
    with scratch_database():
        started = time.monotonic()
        state = _setup(participants)
        setup_seconds = time.monotonic() - started
        result = measure(state)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "participants": participants,
        "payments": result.pop("payments"),
        "seconds": result.pop("seconds"),
        "peak_memory_mb": round(peak, 1),
        **result,
        "setup_seconds": round(setup_seconds, 2),
    }
