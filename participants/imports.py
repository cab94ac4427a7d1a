"""Participant files (people, plan participations, employment events) and Key Employee lists.

A participant file has one line per person and plan or event (an HR extract). The person columns
(names, birth and hire dates, marital status, contact) may be repeated on each line of the same
employee or left blank after the first; a line may also name a plan (entered_on, eligible_on) and/or
an employment event (event, event_date, event_reason). The rules are the services' own
(participation_entry_refusal, employment_event_refusal), checked for the whole file at once.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from core.audit import actor_label
from core.imports import Applied, Importer, Problems, Row
from core.models import AuditEvent, ImportBatch
from participants.models import EmploymentEvent, KeyEmployeeList, Participation, Person
from participants.services import (
    ParticipantError,
    employment_event_record,
    employment_event_refusal,
    key_employee_list_record,
    participation_entry_refusal,
)
from plans.models import Plan

IDENTITY = ("first_name", "last_name", "birth_date", "hire_date")
CONTACT = ("marital_status", "email", "address_line1", "address_line2", "city", "state", "postal_code")
PERSON_FIELDS = IDENTITY + CONTACT
LENGTHS = {
    "first_name": 100,
    "last_name": 100,
    "email": 254,
    "address_line1": 200,
    "address_line2": 200,
    "city": 100,
    "state": 2,
    "postal_code": 10,
}


def _people_by_number(numbers: set[str]) -> dict[str, Person]:
    return {p.employee_number: p for p in Person.objects.filter(employee_number__in=numbers)}


@dataclass
class PreparedParticipants:
    new_people: dict[str, Person] = field(default_factory=dict)
    changed_people: list[Person] = field(default_factory=list)
    changed_fields: set[str] = field(default_factory=set)
    participations: list[tuple[str, Plan, dt.date, dt.date | None]] = field(default_factory=list)
    events: list[tuple[int, str, str, dt.date, str]] = field(default_factory=list)
    applied_lines: set[int] = field(default_factory=set)
    lines: int = 0


class ParticipantsImport(Importer):
    kind = ImportBatch.Kind.PARTICIPANTS
    required = ("employee_number",)
    optional = PERSON_FIELDS + ("plan", "entered_on", "eligible_on", "event", "event_date", "event_reason")
    help = (
        "One line per employee and plan or event. A new employee needs first_name, last_name, birth_date and "
        "hire_date (YYYY-MM-DD); marital_status is single, married, divorced or widowed. Add plan and "
        "entered_on (and eligible_on) to enrol the employee in a plan, and event (separation, death, "
        "disability, rehire) with event_date and event_reason (resignation, retirement, involuntary, death) to "
        "record an employment event. Names and dates already on file are never changed by a file; contact "
        "details (marital status, email, address) are updated."
    )
    sample = (
        {
            "employee_number": "S1001",
            "first_name": "Alex",
            "last_name": "Sample",
            "birth_date": "1975-04-12",
            "hire_date": "2015-06-01",
            "marital_status": "married",
            "email": "alex.sample@example.com",
            "address_line1": "1 Main Street",
            "city": "Richmond",
            "state": "VA",
            "postal_code": "23219",
            "plan": "account_balance",  # sample_lines(): the catalog's first plan of this kind
            "entered_on": "2016-01-01",
            "eligible_on": "2015-12-01",
        },
        {
            "employee_number": "S1002",
            "first_name": "Pat",
            "last_name": "Example",
            "birth_date": "1958-03-02",
            "hire_date": "1990-01-08",
            "marital_status": "single",
            "plan": "defined_benefit",  # sample_lines(): the catalog's first plan of this kind
            "entered_on": "2001-01-01",
        },
    )

    def sample_lines(self) -> tuple[dict[str, str], ...]:
        """The sample's plan column names the catalog's first plan of each kind (plans are data)."""
        first: dict[str, str] = {}
        for kind, code in Plan.objects.order_by("code").values_list("kind", "code"):
            first.setdefault(kind, code)
        return tuple({**line, "plan": first.get(line["plan"], "")} for line in self.sample)

    def _person_data(self, rows: list[Row]) -> tuple[dict[str, tuple[int, dict]], dict[str, int]]:
        """Each employee's person columns, gathered over their lines (a later line fills what an earlier left
        empty; a line that contradicts an earlier one is refused), and the first line naming each employee."""
        person_data: dict[str, tuple[int, dict]] = {}
        first_line: dict[str, int] = {}
        for row in rows:
            number = row.text("employee_number", required=True, max_length=20)
            if number:
                first_line.setdefault(number, row.line)
            data = self._person_columns(row)
            if not number or data is None:
                continue
            if number in person_data:
                line, earlier = person_data[number]
                differs = [
                    _label(k)
                    for k, v in data.items()
                    if v not in ("", None) and earlier.get(k) not in ("", None) and earlier[k] != v
                ]
                if differs:
                    row.problem(f"employee {number}: {', '.join(differs)} differ from line {line}")
                for k, v in data.items():
                    if earlier.get(k) in ("", None):
                        earlier[k] = v
            else:
                person_data[number] = (row.line, dict(data))
        return person_data, first_line

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> PreparedParticipants:
        prepared = PreparedParticipants(lines=len(rows))
        numbers = {r.text("employee_number") for r in rows} - {""}
        on_file = _people_by_number(numbers)
        plans = {p.code.upper(): p for p in Plan.objects.prefetch_related("versions__provisions")}
        existing_participations = {
            (person_id, plan_id): entered
            for person_id, plan_id, entered in Participation.objects.filter(
                person__in=on_file.values()
            ).values_list("person_id", "plan_id", "entered_on")
        }
        events: dict[int, list[EmploymentEvent]] = defaultdict(list)
        for event in EmploymentEvent.objects.filter(person__in=on_file.values()):
            events[event.person_id].append(event)

        person_data, first_line = self._person_data(rows)
        people: dict[str, Person] = {}
        for number, line in first_line.items():
            data = person_data.get(number, (line, None))[1]
            current = on_file.get(number)
            if current is None:
                person = self._new_person(number, line, data, problems)
                if person is not None:
                    people[number] = prepared.new_people[number] = person
                    prepared.applied_lines.add(person_data[number][0])
            else:
                people[number] = current
                if data is not None and self._merge(
                    current, person_data[number][0], data, problems, prepared
                ):
                    prepared.applied_lines.add(person_data[number][0])

        seen_plan: dict[tuple[str, str], int] = {}
        seen_event: dict[tuple[str, str, dt.date], int] = {}
        planned_events: dict[str, list[EmploymentEvent]] = defaultdict(list)
        for row in rows:
            number = row.text("employee_number")
            person = people.get(number)
            if not number:
                continue
            if person is None and number not in on_file and number not in person_data:
                row.problem(
                    f"employee {number} is not on file, and no line of this file gives their first_name, "
                    f"last_name, birth_date and hire_date"
                )
            self._check_participation(
                row, number, person, plans, seen_plan, existing_participations, prepared
            )
            self._check_event(row, number, person, events, planned_events, seen_event, prepared)
        return prepared

    def _person_columns(self, row: Row) -> dict | None:
        given = [c for c in PERSON_FIELDS if row.text(c)]
        if not given:
            return None
        data: dict = {}
        for c in ("first_name", "last_name", "address_line1", "address_line2", "city", "postal_code"):
            data[c] = row.text(c, max_length=LENGTHS[c])
        data["birth_date"] = row.date("birth_date")
        data["hire_date"] = row.date("hire_date")
        state = row.text("state").upper()
        if state and (len(state) != 2 or not state.isalpha()):
            row.problem(f"state {state!r} is not a two-letter state code", "state")
        data["state"] = state
        email = row.text("email", max_length=254)
        if email:
            try:
                validate_email(email)
            except ValidationError:
                row.problem(f"email {email!r} is not an email address", "email")
        data["email"] = email
        marital = row.text("marital_status").lower()
        if marital and marital not in Person.MaritalStatus.values:
            row.problem(
                f"marital status {marital!r} is not one of {', '.join(Person.MaritalStatus.values)}",
                "marital_status",
            )
        data["marital_status"] = marital
        if data["birth_date"] and data["hire_date"] and data["hire_date"] <= data["birth_date"]:
            row.problem(
                f"hire date {data['hire_date']} is not after birth date {data['birth_date']}", "hire_date"
            )
        return data

    def _new_person(self, number: str, line: int, data: dict | None, problems: Problems) -> Person | None:
        if data is None:
            return None
        missing = [_label(c) for c in IDENTITY if not data.get(c)]
        if missing:
            problems.add(line, f"employee {number} is new, so the line needs {', '.join(missing)}")
            return None
        fields = {k: v for k, v in data.items() if v not in ("", None)}
        return Person(employee_number=number, **fields)

    def _merge(
        self, person: Person, line: int, data: dict, problems: Problems, prepared: PreparedParticipants
    ) -> bool:
        conflicts = [
            f"{_label(c)} is {getattr(person, c)} on file but {data[c]} here"
            for c in IDENTITY
            if data.get(c) not in ("", None) and getattr(person, c) != data[c]
        ]
        if conflicts:
            problems.add(
                line,
                f"employee {person.employee_number}: {'; '.join(conflicts)}. A file never changes "
                f"names or dates already on file",
            )
            return False
        changed = [c for c in CONTACT if data.get(c) not in ("", None) and getattr(person, c) != data[c]]
        for c in changed:
            setattr(person, c, data[c])
        if changed:
            prepared.changed_people.append(person)
            prepared.changed_fields.update(changed)
        return bool(changed)

    def _check_participation(
        self,
        row: Row,
        number: str,
        person: Person | None,
        plans: dict[str, Plan],
        seen: dict,
        existing: dict,
        prepared: PreparedParticipants,
    ) -> None:
        code = row.text("plan").upper()
        entered = row.date("entered_on", required=bool(code))
        eligible = row.date("eligible_on")
        if not code:
            if entered or eligible:
                row.problem("entered on or eligible on is given without a plan", "plan")
            return
        plan = plans.get(code)
        if plan is None:
            row.problem(f"there is no plan {code!r} (the plans are {', '.join(sorted(plans))})", "plan")
            return
        if (number, code) in seen:
            row.problem(
                f"repeats the {code} participation of employee {number} given on line {seen[number, code]}"
            )
            return
        seen[number, code] = row.line
        if entered is None:
            return
        refusal = participation_entry_refusal(plan=plan, entered_on=entered)
        if refusal:
            row.problem(refusal, "entered_on")
            return
        if person is not None and person.pk is not None and (person.pk, plan.pk) in existing:
            already = existing[person.pk, plan.pk]
            if already != entered:
                row.problem(
                    f"employee {number} is already in {code} since {already}; this file says {entered}",
                    "entered_on",
                )
            return
        if not row.bad:
            prepared.participations.append((number, plan, entered, eligible))
            prepared.applied_lines.add(row.line)

    def _check_event(
        self,
        row: Row,
        number: str,
        person: Person | None,
        events: dict,
        planned: dict,
        seen: dict,
        prepared: PreparedParticipants,
    ) -> None:
        kind = row.text("event").lower()
        day = row.date("event_date", required=bool(kind))
        reason = row.text("event_reason").lower()
        if not kind:
            if day or reason:
                row.problem("event date or event reason is given without an event", "event")
            return
        if kind not in EmploymentEvent.Kind.values:
            row.problem(f"event {kind!r} is not one of {', '.join(EmploymentEvent.Kind.values)}", "event")
            return
        if reason and reason not in EmploymentEvent.Reason.values:
            row.problem(
                f"event reason {reason!r} is not one of "
                f"{', '.join(v for v in EmploymentEvent.Reason.values if v)}",
                "event_reason",
            )
            return
        if day is None or person is None:
            return
        if (number, kind, day) in seen:
            row.problem(
                f"repeats the {kind} of employee {number} on {day} given on line {seen[number, kind, day]}"
            )
            return
        seen[number, kind, day] = row.line
        recorded = events.get(person.pk, []) if person.pk else []
        if any(e.kind == kind and e.effective_date == day for e in recorded):
            return
        refusal = employment_event_refusal(
            person=person, events=recorded + planned[number], kind=kind, effective_date=day
        )
        if refusal:
            row.problem(refusal, "event")
            return
        planned[number].append(EmploymentEvent(kind=kind, effective_date=day, reason=reason))
        if not row.bad:
            prepared.events.append((row.line, number, kind, day, reason))
            prepared.applied_lines.add(row.line)

    def apply(
        self,
        prepared: PreparedParticipants,
        *,
        batch: ImportBatch,
        actor,
        now: dt.datetime,
        problems: Problems,
    ) -> Applied:
        reason = f"import #{batch.pk} {batch.file_name}"[:100]
        user = None if actor is None or isinstance(actor, str) else actor
        created = bulk_create_with_history(
            list(prepared.new_people.values()),
            Person,
            batch_size=2000,
            default_user=user,
            default_change_reason=reason,
            default_date=now,
        )
        people = {p.employee_number: p for p in created}
        if prepared.changed_people:
            bulk_update_with_history(
                prepared.changed_people,
                Person,
                sorted(prepared.changed_fields),
                batch_size=2000,
                default_user=user,
                default_change_reason=reason,
                default_date=now,
            )
        missing = ({p[0] for p in prepared.participations} | {e[1] for e in prepared.events}) - set(people)
        people.update(_people_by_number(missing))
        participations = bulk_create_with_history(
            [
                Participation(person=people[n], plan=plan, entered_on=entered, eligible_on=eligible)
                for n, plan, entered, eligible in prepared.participations
            ],
            Participation,
            batch_size=2000,
            default_user=user,
            default_change_reason=reason,
            default_date=now,
        )
        AuditEvent.objects.bulk_create(
            [
                AuditEvent(
                    at=now,
                    actor=user,
                    actor_label=actor_label(actor),
                    action="participation.enrol",
                    object_type=Participation._meta.label,
                    object_id=str(p.pk),
                    data={"plan": p.plan.code, "entered_on": p.entered_on.isoformat(), "import": batch.pk},
                )
                for p in participations
            ],
            batch_size=2000,
        )
        # Events go through the service one by one: books and payments react to each (vesting, forfeiture).
        for line, number, kind, day, why in sorted(prepared.events, key=lambda e: (e[3], e[0])):
            try:
                employment_event_record(
                    person=people[number],
                    kind=kind,
                    effective_date=day,
                    reason=why,
                    actor=actor,
                    now=now,
                    note=reason,
                )
            except ParticipantError as exc:
                problems.add(line, str(exc), "event")
        applied = len(prepared.applied_lines)
        return Applied(applied=applied, skipped=prepared.lines - applied)


@dataclass
class PreparedKeyEmployees:
    years: dict[int, set[int]] = field(default_factory=dict)
    applied: int = 0
    skipped: int = 0


class KeyEmployeesImport(Importer):
    kind = ImportBatch.Kind.KEY_EMPLOYEES
    required = ("identification_year", "employee_number")
    optional = ()
    help = (
        "One line per Key Employee: identification_year (the December 31 of that year is the identification "
        "date; the list governs from the next April 1) and employee_number. A line with the year and no "
        "employee number records that the year's list is known and empty. A file adds to a year's list; "
        "people already on it are skipped."
    )
    sample = ({"identification_year": "2025", "employee_number": "S1001"},)

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> PreparedKeyEmployees:
        people = _people_by_number({r.text("employee_number") for r in rows} - {""})
        parsed: list[tuple[Row, int, Person | None]] = []
        for row in rows:
            year = row.integer("identification_year", required=True, low=1990, high=2100)
            number = row.text("employee_number")
            person = people.get(number) if number else None
            if number and person is None:
                row.problem(
                    f"employee {number} is not on file (load the participant first)", "employee_number"
                )
            if not row.bad and year is not None:
                parsed.append((row, year, person))
        lists = {
            lst.identification_year: {p.pk for p in lst.members.all()}
            for lst in KeyEmployeeList.objects.filter(
                identification_year__in={y for _, y, _ in parsed}
            ).prefetch_related("members")
        }
        prepared = PreparedKeyEmployees()
        seen: dict[tuple[int, int | None], int] = {}
        for row, year, person in parsed:
            key = (year, person.pk if person else None)
            if key in seen:
                who = f"employee {person.employee_number}" if person else "the empty list"
                row.problem(f"repeats {who} for {year} given on line {seen[key]}")
                continue
            seen[key] = row.line
            wanted = prepared.years.setdefault(year, set(lists.get(year, set())))
            if year in lists and (person is None or person.pk in lists[year]):
                prepared.skipped += 1
                continue
            if person is not None:
                wanted.add(person.pk)
            prepared.applied += 1
        prepared.years = {
            y: members for y, members in prepared.years.items() if y not in lists or members != lists[y]
        }
        return prepared

    def apply(
        self,
        prepared: PreparedKeyEmployees,
        *,
        batch: ImportBatch,
        actor,
        now: dt.datetime,
        problems: Problems,
    ) -> Applied:
        note = f"import #{batch.pk} {batch.file_name}"
        for year, members in sorted(prepared.years.items()):
            key_employee_list_record(
                identification_year=year,
                people=list(Person.objects.filter(pk__in=members)),
                actor=actor,
                now=now,
                note=note,
            )
        return Applied(applied=prepared.applied, skipped=prepared.skipped)


def _label(column: str) -> str:
    return column.replace("_", " ")
