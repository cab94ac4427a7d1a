"""Payroll files: one line per employee, pay date and pay component (EDCP 7.1, RRP 3.03).

The whole file is checked first with a few queries (employees, their employment events, pay lines
already recorded). Then one PayrollRun (books.services.payroll) computes every line in pay-date order,
so year-to-date figures (RRP Plan Compensation above the 401(a)(17) limit, RRP 2011 matching) build up
as they would pay by pay, and writes them in bulk. Any line the books refuse refuses the whole file.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from books.models import PayrollRecord
from books.services.accounts import BooksError
from books.services.payroll import PayLine, PayrollError, PayrollRun
from core.audit import actor_label
from core.imports import Applied, Importer, Problems, Row
from core.models import ImportBatch
from participants.models import EmploymentEvent, Person
from participants.selectors import employment_status_from_events
from plans.models import Provision
from plans.selectors import MissingFigure


@dataclass
class PreparedPayroll:
    lines: list[PayLine] = field(default_factory=list)
    skipped: int = 0


def pay_components() -> list[str]:
    """The pay components the plans know (their deferral components); RRP's Plan Compensation is computed."""
    values: dict[int, dict] = {}
    for version_id, key, value in Provision.objects.filter(
        key__in=["deferral_components", "plan_compensation"]
    ).values_list("version_id", "key", "value"):
        values.setdefault(version_id, {})[key] = value
    codes: set[str] = set()
    for provisions in values.values():
        if provisions.get("plan_compensation") == "above_401a17":
            continue
        codes.update(c["code"] for c in provisions.get("deferral_components") or [])
    return sorted(codes)


class PayrollImport(Importer):
    kind = ImportBatch.Kind.PAYROLL
    required = ("employee_number", "pay_date", "component", "gross")
    optional = ("plan_year", "period_start", "performance_period_end", "net_available", "sequence")
    help = (
        "One line per employee, pay date and pay component: employee_number, pay_date (YYYY-MM-DD), component "
        "(base_salary, monthly_bonus, annual_bonus, other), gross (dollars and cents). Optional: plan_year (when "
        "the pay belongs to another plan year than its pay date's), period_start, performance_period_end (for "
        "Performance-Based Compensation), net_available (cash pay left after taxes and deductions, EDCP 1.14) "
        "and sequence (1, 2, ... for two lines of the same component on the same day)."
    )
    sample = (
        {
            "employee_number": "S1001",
            "pay_date": "2026-01-30",
            "component": "base_salary",
            "gross": "25000.00",
        },
        {
            "employee_number": "S1001",
            "pay_date": "2026-01-30",
            "component": "monthly_bonus",
            "gross": "1500.00",
        },
    )

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> PreparedPayroll:
        numbers = {r.text("employee_number") for r in rows} - {""}
        people = {p.employee_number: p for p in Person.objects.filter(employee_number__in=numbers)}
        events: dict[int, list[EmploymentEvent]] = {p.pk: [] for p in people.values()}
        for event in EmploymentEvent.objects.filter(person__in=people.values()):
            events[event.person_id].append(event)
        components = pay_components()
        known = set(components)
        prepared = PreparedPayroll()
        for row in rows:
            number = row.text("employee_number", required=True)
            person = people.get(number) if number else None
            if number and person is None:
                row.problem(
                    f"employee {number} is not on file (load the participant first)", "employee_number"
                )
            pay_date = row.date("pay_date", required=True)
            component = row.text("component", required=True)
            if component and component not in known:
                row.problem(
                    f"pay component {component!r} is unknown; the plans know {', '.join(components)}",
                    "component",
                )
            gross = row.money("gross", required=True)
            plan_year = row.integer("plan_year", low=1990, high=2100)
            period_start = row.date("period_start")
            performance_period_end = row.date("performance_period_end")
            net_available = row.money("net_available")
            sequence = row.integer("sequence", low=1, high=1000)
            if person is not None and pay_date is not None:
                status = employment_status_from_events(person=person, events=events[person.pk], day=pay_date)
                if not status.employed:
                    row.problem(
                        f"employee {number} was not employed on the pay date {pay_date} ({status.reason})",
                        "pay_date",
                    )
            if not row.bad and person is not None and pay_date is not None and gross is not None:
                prepared.lines.append(
                    PayLine(
                        person=person,
                        pay_date=pay_date,
                        component=component,
                        gross=gross,
                        plan_year=plan_year,
                        period_start=period_start,
                        performance_period_end=performance_period_end,
                        net_available=net_available,
                        sequence=sequence or 1,
                        line_number=row.line,
                    )
                )
        if not prepared.lines:
            return prepared
        days = [p.pay_date for p in prepared.lines]
        recorded = {
            (r.person_id, r.pay_date, r.component, r.sequence): r
            for r in PayrollRecord.objects.filter(
                person__in={p.person for p in prepared.lines},
                pay_date__gte=min(days),
                pay_date__lte=max(days),
            ).only("person_id", "pay_date", "component", "sequence", "gross")
        }
        first_line: dict[tuple, int] = {}
        fresh: list[PayLine] = []
        for pay in prepared.lines:
            key = (pay.person.pk, pay.pay_date, pay.component, pay.sequence)
            if key in first_line:
                problems.add(
                    pay.line_number or 0,
                    f"repeats the {pay.component} pay of employee {pay.person.employee_number} on "
                    f"{pay.pay_date} given on line {first_line[key]} (use the sequence column for a "
                    f"second payment of the same component on the same day)",
                )
                continue
            first_line[key] = pay.line_number or 0
            earlier = recorded.get(key)
            if earlier is None:
                fresh.append(pay)
            elif earlier.gross == pay.gross:
                prepared.skipped += 1
            else:
                problems.add(
                    pay.line_number or 0,
                    f"employee {pay.person.employee_number} already has {pay.component} pay of "
                    f"{earlier.gross} recorded on {pay.pay_date} (sequence {pay.sequence}); this "
                    f"file says {pay.gross}. A recorded pay line is never changed",
                    "gross",
                )
        prepared.lines = fresh
        return prepared

    def apply(
        self, prepared: PreparedPayroll, *, batch: ImportBatch, actor, now: dt.datetime, problems: Problems
    ) -> Applied:
        # One PayrollRun for the file: read once, computed in memory in pay-date order, written in bulk.
        run = PayrollRun.for_people(
            {p.person for p in prepared.lines},
            actor=actor_label(actor),
            now=now,
            years={p.plan_year or p.pay_date.year for p in prepared.lines},
        )
        applied = 0
        for pay in sorted(prepared.lines, key=lambda p: (p.pay_date, p.line_number or 0)):
            try:
                pay.batch = batch
                created = run.add(pay)
            except (PayrollError, BooksError, MissingFigure) as exc:
                problems.add(pay.line_number or 0, str(exc))
                continue
            applied += int(created is not None)
        if not problems:
            run.save()
        return Applied(applied=applied, skipped=prepared.skipped + len(prepared.lines) - applied)
