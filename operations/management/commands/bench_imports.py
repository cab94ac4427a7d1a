"""Benchmark of the set-based imports: a price file and a payroll file, in a scratch database (a copy of an
empty one, as the simulator uses), never touching real plan data.

    python manage.py bench_imports --prices 100000 --payroll 10000 [--json]

Builds synthetic funds, people (EDCP and RRP participants with deferral elections), writes the CSV
files in memory, and times `import_file` on each (validation and apply), then rolls everything back.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import tracemalloc
from decimal import Decimal

from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.utils import timezone

from core import valuation_calendar as cal
from core.imports import import_file
from core.models import ImportBatch
from elections.models import Channel, DeferralElection, DeferralElectionLine, Status
from operations.simulation.sandbox import scratch_database
from participants.models import Participation, Person
from plans.models import Fund, Plan


class Rollback(Exception):
    pass


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--prices", type=int, default=100_000, help="lines of the price file")
        parser.add_argument("--payroll", type=int, default=10_000, help="lines of the payroll file")
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--memory", action="store_true", help="also trace peak Python memory (slows the run)"
        )

    def handle(self, *args, prices: int, payroll: int, json: bool, memory: bool, **options):
        self.memory = memory
        results: dict = {}
        with scratch_database():
            try:
                with transaction.atomic():
                    results["prices"] = self._prices(prices)
                    results["payroll"] = self._payroll(payroll)
                    raise Rollback
            except Rollback:
                pass
        if json:
            self.stdout.write(_dumps(results))
            return
        for kind, r in results.items():
            self.stdout.write(
                f"{kind}: {r['rows']} lines in {r['seconds']:.2f} s = {r['rows_per_second']:.0f} "
                f"lines/s ({r['status']}, {r['queries']} queries"
                + (f", peak Python memory {r['peak_memory_mb']:.0f} MB" if memory else "")
                + f"); a re-import of the same file: {r['rerun_seconds']:.2f} s ({r['rerun_status']})"
            )

    def _measure(self, kind: str, content: bytes, rows: int) -> dict:
        queries = []

        def count(execute, sql, params, many, context):
            queries.append(1)
            return execute(sql, params, many, context)

        if self.memory:
            tracemalloc.start()
        started = time.perf_counter()
        with connection.execute_wrapper(count):
            batch = import_file(
                kind=kind, file_name=f"bench-{kind}.csv", content=content, actor="bench", now=timezone.now()
            )
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20 if self.memory else 0.0
        tracemalloc.stop()
        if batch.status != ImportBatch.Status.APPLIED:
            raise SystemExit(f"{kind} benchmark file was {batch.status}: {batch.errors[:5]}")
        again = time.perf_counter()
        rerun = import_file(
            kind=kind, file_name="again.csv", content=content, actor="bench", now=timezone.now()
        )
        return {
            "rows": rows,
            "seconds": seconds,
            "rows_per_second": rows / seconds,
            "status": batch.status,
            "queries": len(queries),
            "peak_memory_mb": peak,
            "rerun_seconds": time.perf_counter() - again,
            "rerun_status": rerun.status,
        }

    def _prices(self, rows: int) -> dict:
        plan = Plan.objects.get(code="EDCP")
        funds = [Fund.objects.create(plan=plan, code=f"B{i:02d}", name=f"Bench fund {i}") for i in range(40)]
        days = cal.valuation_dates_between(dt.date(2005, 1, 3), dt.date(2059, 12, 31))
        per_fund = -(-rows // len(funds))
        lines = ["fund,date,price"]
        for fund in funds:
            for i, day in enumerate(days[:per_fund]):
                lines.append(f"{fund.code},{day.isoformat()},{Decimal(10) + Decimal(i % 500) / 100}")
        lines = lines[: rows + 1]
        return self._measure(ImportBatch.Kind.PRICES, ("\n".join(lines) + "\n").encode(), rows)

    def _payroll(self, rows: int) -> dict:
        edcp, rrp = Plan.objects.get(code="EDCP"), Plan.objects.get(code="RRP")
        Fund.objects.get_or_create(plan=rrp, code="RB0", defaults={"name": "RRP bench", "is_default": True})
        pay_dates = [dt.date(2024, m, 15) for m in range(1, 13)]
        people_count = max(1, rows // len(pay_dates))
        people = Person.objects.bulk_create(
            Person(
                employee_number=f"BENCH{i:06d}",
                first_name="Bench",
                last_name=f"P{i}",
                birth_date=dt.date(1970, 1, 1),
                hire_date=dt.date(2010, 1, 1),
            )
            for i in range(people_count)
        )
        now = timezone.now()
        participations = Participation.objects.bulk_create(
            Participation(person=p, plan=rrp if i % 5 == 0 else edcp, entered_on=dt.date(2011, 7, 1))
            for i, p in enumerate(people)
        )
        elections = DeferralElection.objects.bulk_create(
            DeferralElection(
                participation=p,
                plan_year=2024,
                status=Status.ACCEPTED,
                submitted_at=now,
                channel=Channel.STAFF,
                actor="bench",
            )
            for p in participations
        )
        DeferralElectionLine.objects.bulk_create(
            DeferralElectionLine(
                election=e,
                percent=Decimal("10"),
                component="plan_compensation" if p.plan_id == rrp.pk else "base_salary",
            )
            for e, p in zip(elections, participations, strict=True)
        )
        lines = ["employee_number,pay_date,component,gross"]
        for day in pay_dates:
            for i, person in enumerate(people):
                gross = (
                    "40000.00" if i % 5 == 0 else "10000.00"
                )  # RRP people pass the 401(a)(17) limit mid-year
                lines.append(f"{person.employee_number},{day.isoformat()},base_salary,{gross}")
        lines = lines[: rows + 1]
        return self._measure(ImportBatch.Kind.PAYROLL, ("\n".join(lines) + "\n").encode(), len(lines) - 1)


def _dumps(results: dict) -> str:
    return json.dumps(results, default=str)
