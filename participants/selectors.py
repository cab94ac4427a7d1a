from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Exists, OuterRef

from core import memo
from core.dates import add_months, years_between
from core.lists import people_filter
from participants.models import (
    BeneficiaryDesignation,
    ChangeInControl,
    EmploymentEvent,
    KeyEmployeeList,
    Participation,
    Person,
    VestingServiceCredit,
)

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from plans.models import Plan


@dataclass(frozen=True)
class EmploymentStatus:
    employed: bool
    reason: str = ""


def employment_status_on(*, person: Person, day: dt.date) -> EmploymentStatus:
    return employment_status_from_events(
        person=person, events=list(EmploymentEvent.objects.filter(person=person)), day=day
    )


def employment_status_from_events(
    *, person: Person, events: list[EmploymentEvent], day: dt.date
) -> EmploymentStatus:
    """Employed on `day` given all of the person's events: hired by then, and not separated or dead before
    it unless rehired since. (Set-based callers load every person's events in one query.)"""
    if day < person.hire_date:
        return EmploymentStatus(False, f"hired {person.hire_date}")
    ends = [
        e
        for e in events
        if e.effective_date < day and e.kind in (EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH)
    ]
    if ends:
        ended = max(ends, key=lambda e: (e.effective_date, e.kind == EmploymentEvent.Kind.DEATH))
        rehired = any(
            e.kind == EmploymentEvent.Kind.REHIRE and ended.effective_date < e.effective_date <= day
            for e in events
        )
        if not rehired:
            return EmploymentStatus(False, f"{ended.get_kind_display().lower()} {ended.effective_date}")
    return EmploymentStatus(True)


def termination_event(*, person: Person, on_or_before: dt.date | None = None) -> EmploymentEvent | None:
    """The first separation or death (Termination of Employment, RRP 4.01)."""
    qs = EmploymentEvent.objects.filter(
        person=person, kind__in=[EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH]
    )
    if on_or_before:
        qs = qs.filter(effective_date__lte=on_or_before)
    return qs.order_by("effective_date", "id").first()


def death_of(*, person: Person) -> EmploymentEvent | None:
    return EmploymentEvent.objects.filter(person=person, kind=EmploymentEvent.Kind.DEATH).first()


@dataclass(frozen=True)
class KeyEmployeeStatus:
    known: bool
    key: bool
    identification_year: int


def key_employee_status(
    *, person: Person, on: dt.date, effective_month: int = 4, effective_day: int = 1
) -> KeyEmployeeStatus:
    """Whether `person` is a Key Employee on `on` (EDCP 1.20): identified the December 31 before the last April 1."""
    year = KeyEmployeeList.identification_year_for(on, effective_month, effective_day)
    if memo.active():  # a report over many people: the year's list read once for the run
        known, members = memo.remember(("key_employee_list", year), lambda: _key_employee_list(year))
        return KeyEmployeeStatus(known, person.pk in members, year)
    lst = KeyEmployeeList.objects.filter(identification_year=year).first()
    if lst is None:
        return KeyEmployeeStatus(False, False, year)
    return KeyEmployeeStatus(True, lst.members.filter(pk=person.pk).exists(), year)


def _key_employee_list(year: int) -> tuple[bool, frozenset[int]]:
    lst = KeyEmployeeList.objects.filter(identification_year=year).first()
    if lst is None:
        return False, frozenset()
    return True, frozenset(lst.members.values_list("pk", flat=True))


def years_of_vesting_service(*, person: Person, on: dt.date) -> int:
    """Whole Years of Vesting Service completed before `on` (the RSP's records; else whole years since hire)."""
    credit = (
        VestingServiceCredit.objects.filter(person=person, through_year__lt=on.year)
        .order_by("-through_year")
        .first()
    )
    if credit is not None:
        return credit.years
    return max(0, years_between(person.hire_date, on))


def change_in_control_between(*, start: dt.date, end: dt.date) -> ChangeInControl | None:
    return (
        ChangeInControl.objects.filter(effective_date__gte=start, effective_date__lte=end)
        .order_by("effective_date")
        .first()
    )


# The designation in force is the last one received (for each person and plan).
_DESIGNATION_ORDER = ("-received_at", "-id")


def beneficiaries_in_force(*, person: Person, plan: Plan) -> BeneficiaryDesignation | None:
    return (
        BeneficiaryDesignation.objects.filter(person=person, plan=plan).order_by(*_DESIGNATION_ORDER).first()
    )


def beneficiaries_in_force_of(
    *, pairs: Collection[tuple[int, int]]
) -> dict[tuple[int, int], BeneficiaryDesignation]:
    """(person id, plan id) -> the designation in force (as `beneficiaries_in_force`), its beneficiaries read with
    it: two reads for any number of pairs."""
    if not pairs:
        return {}
    wanted = set(pairs)
    out: dict[tuple[int, int], BeneficiaryDesignation] = {}
    for d in (
        BeneficiaryDesignation.objects.filter(
            person_id__in={person for person, _ in wanted}, plan_id__in={plan for _, plan in wanted}
        )
        .order_by("person_id", "plan_id", *_DESIGNATION_ORDER)
        .prefetch_related("beneficiaries")
    ):
        if (d.person_id, d.plan_id) in wanted:
            out.setdefault((d.person_id, d.plan_id), d)
    return out


def people_search(*, query: str = "", plan_code: str = "") -> QuerySet[Person]:
    """People whose last name, first name or employee number begins with each word of the query (an address with
    "@": whose email begins with it), optionally in one plan: prefix searches with an index behind each (issue 15,
    core.lists), in the Person's own order (last name, first name, employee number)."""
    qs = Person.objects.all()
    if "@" in query:
        qs = qs.filter(email__istartswith=query.strip())
    else:
        qs = qs.filter(people_filter(query))
    if plan_code:
        qs = qs.filter(Exists(Participation.objects.filter(person=OuterRef("pk"), plan__code=plan_code)))
    return qs.prefetch_related("participations__plan").order_by("last_name", "first_name", "employee_number")


def key_employee_years(*, person: Person, effective_month: int = 4, effective_day: int = 1) -> list[dict]:
    """Every recorded identification year: whether the person is on the list and the twelve months it governs."""
    member_of = set(person.key_employee_lists.values_list("identification_year", flat=True))
    out = []
    for lst in KeyEmployeeList.objects.order_by("-identification_year"):
        start = dt.date(lst.identification_year + 1, effective_month, effective_day)
        out.append(
            {
                "year": lst.identification_year,
                "key": lst.identification_year in member_of,
                "list": lst,
                "from": start,
                "to": add_months(start, 12) - dt.timedelta(days=1),
            }
        )
    return out
