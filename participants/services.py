"""Writes about people: enrolment, employment events, Key Employee lists, beneficiaries."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from core import hooks
from core.audit import actor_label, audit_record
from core.errors import ApplicationError
from participants.models import (
    Beneficiary,
    BeneficiaryDesignation,
    BeneficiaryTaxInfo,
    ChangeInControl,
    EmploymentEvent,
    KeyEmployeeList,
    Participation,
    Person,
    VestingServiceCredit,
)
from plans.models import Plan

if TYPE_CHECKING:
    from core.audit import Actor


class ParticipantError(ApplicationError):
    pass


def participation_entry_refusal(*, plan: Plan, entered_on: dt.date) -> str | None:
    """Why `plan` admits no participant entering on `entered_on` (a frozen plan), else None."""
    version = plan.version_on(entered_on)
    frozen = version.provision("frozen_after", None)
    if frozen and entered_on > dt.date.fromisoformat(frozen):
        return f"{plan.code} admits no new participants after {frozen} ({version.cite('frozen_after')})"
    return None


def participation_enrol(
    *,
    person: Person,
    plan: Plan,
    entered_on: dt.date,
    eligible_on: dt.date | None = None,
    actor: Actor,
    now: dt.datetime | None = None,
) -> Participation:
    refusal = participation_entry_refusal(plan=plan, entered_on=entered_on)
    if refusal:
        raise ParticipantError(refusal)
    participation, created = Participation.objects.get_or_create(
        person=person, plan=plan, defaults={"entered_on": entered_on, "eligible_on": eligible_on}
    )
    if created:
        audit_record(
            action="participation.enrol",
            actor=actor,
            at=now or timezone.now(),
            obj=participation,
            data={"plan": plan.code, "entered_on": entered_on.isoformat()},
        )
    return participation


def employment_event_refusal(
    *, person: Person, events: list[EmploymentEvent], kind: str, effective_date: dt.date
) -> str | None:
    """Why an event cannot be recorded given the person's recorded `events`, else None."""
    if kind not in EmploymentEvent.Kind.values:
        return f"unknown employment event {kind!r}"
    if effective_date < person.hire_date:
        return f"{person} was hired {person.hire_date}: an event dated {effective_date} is before that"
    death = next((e for e in events if e.kind == EmploymentEvent.Kind.DEATH), None)
    if death is not None:
        if kind == EmploymentEvent.Kind.DEATH:
            return f"{person} is already recorded as deceased on {death.effective_date}"
        if effective_date > death.effective_date:
            return f"{person} died {death.effective_date}: an event dated {effective_date} is after that"
    if kind == EmploymentEvent.Kind.SEPARATION and any(
        e.kind == kind and e.effective_date == effective_date for e in events
    ):
        return f"{person} already has a separation on {effective_date}"
    return None


@transaction.atomic
def employment_event_record(
    *,
    person: Person,
    kind: str,
    effective_date: dt.date,
    actor: Actor,
    reason: str = "",
    note: str = "",
    now: dt.datetime | None = None,
) -> EmploymentEvent:
    """Record a separation, death or disability; books and payments react (vesting, forfeiture, schedules)."""
    refusal = employment_event_refusal(
        person=person, events=list(person.employment_events.all()), kind=kind, effective_date=effective_date
    )
    if refusal:
        raise ParticipantError(refusal)
    event = EmploymentEvent.objects.create(
        person=person,
        kind=kind,
        effective_date=effective_date,
        reason=reason,
        note=note,
        recorded_at=now or timezone.now(),
        recorded_by=actor_label(actor),
    )
    audit_record(
        action=f"employment.{kind}",
        actor=actor,
        at=now or timezone.now(),
        obj=event,
        data={"effective_date": effective_date.isoformat(), "reason": reason},
    )
    hooks.emit("employment_event", event=event, actor=actor)
    return event


@transaction.atomic
def change_in_control_record(
    *, effective_date: dt.date, actor: Actor, description: str = "", now: dt.datetime | None = None
) -> ChangeInControl:
    if ChangeInControl.objects.filter(effective_date=effective_date).exists():
        raise ParticipantError(f"a change in control on {effective_date} is already recorded")
    cic = ChangeInControl.objects.create(
        effective_date=effective_date,
        description=description,
        recorded_at=now or timezone.now(),
        recorded_by=actor_label(actor),
    )
    audit_record(action="change_in_control", actor=actor, at=now or timezone.now(), obj=cic)
    hooks.emit("change_in_control", cic=cic, actor=actor)
    return cic


@transaction.atomic
def key_employee_list_record(
    *,
    identification_year: int,
    people: list[Person],
    actor: Actor,
    note: str = "",
    now: dt.datetime | None = None,
) -> KeyEmployeeList:
    """Record (or replace) the Key Employees identified as of December 31 of the year (EDCP 1.20)."""
    lst, _ = KeyEmployeeList.objects.get_or_create(
        identification_year=identification_year,
        defaults={"recorded_at": now or timezone.now(), "recorded_by": actor_label(actor), "note": note},
    )
    lst.members.set(people)
    audit_record(
        action="key_employees.record",
        actor=actor,
        at=now or timezone.now(),
        obj=lst,
        data={"year": identification_year, "members": [p.employee_number for p in people]},
    )
    return lst


def vesting_service_record(*, person: Person, through_year: int, years: int) -> VestingServiceCredit:
    credit, _ = VestingServiceCredit.objects.update_or_create(
        person=person, through_year=through_year, defaults={"years": years}
    )
    return credit


@transaction.atomic
def beneficiaries_designate(
    *, person: Person, plan: Plan, beneficiaries: list[dict], actor: Actor, now: dt.datetime | None = None
) -> BeneficiaryDesignation:
    """A new designation (primary and contingent; whole percentages summing to 100 per tier)."""
    if not beneficiaries:
        raise ParticipantError("name at least one primary beneficiary")
    tiers: dict[str, int] = {}
    for b in beneficiaries:
        if b.get("tier") not in Beneficiary.Tier.values:
            raise ParticipantError(f"tier must be primary or contingent, not {b.get('tier')!r}")
        pct = b.get("percent")
        if not isinstance(pct, int) or isinstance(pct, bool) or not 1 <= pct <= 100:
            raise ParticipantError(
                f"{b.get('name') or 'a beneficiary'}: percent must be a whole number from 1 to 100"
            )
        if not (b.get("name") or "").strip():
            raise ParticipantError("every beneficiary needs a name")
        # Issue 12: the database columns' lengths, checked here so a long name is a message, not a 500.
        for key, field_name in (("name", "name"), ("relationship", "relationship")):
            limit = getattr(Beneficiary._meta.get_field(field_name), "max_length", None) or 0
            if limit and len((b.get(key) or "").strip()) > limit:
                raise ParticipantError(f"a beneficiary's {key} is at most {limit} characters")
        born = b.get("birth_date")
        if born is not None and (not isinstance(born, dt.date) or born > timezone.localdate(now)):
            raise ParticipantError(f"{b['name']}: a date of birth is a date not after today")
        tiers[b["tier"]] = tiers.get(b["tier"], 0) + pct
    if "primary" not in tiers:
        raise ParticipantError("name at least one primary beneficiary")
    for tier, total in tiers.items():
        if total != 100:
            raise ParticipantError(f"{tier} beneficiaries' percentages sum to {total}, not 100")
    designation = BeneficiaryDesignation.objects.create(
        person=person, plan=plan, received_at=now or timezone.now(), recorded_by=actor_label(actor)
    )
    for b in beneficiaries:
        Beneficiary.objects.create(
            designation=designation,
            tier=b["tier"],
            name=b["name"].strip(),
            relationship=b.get("relationship", ""),
            percent=b["percent"],
            birth_date=b.get("birth_date"),
        )
    audit_record(action="beneficiaries.designate", actor=actor, at=now or timezone.now(), obj=designation)
    return designation


def _email_valid(value: str) -> bool:
    try:
        validate_email(value)
    except ValidationError:
        return False
    return True


def beneficiary_tax_info_record(
    *,
    beneficiary: Beneficiary,
    taxpayer_number: str,
    address_line1: str,
    address_line2: str = "",
    city: str,
    state: str,
    postal_code: str,
    actor: Actor,
    now: dt.datetime,
    email: str = "",
) -> BeneficiaryTaxInfo:
    """Record (or replace) a beneficiary's taxpayer number and mailing address for Form 1099-MISC (RULES.md
    "FICA special timing and year-end tax reporting": payments to a beneficiary after death). Every field is
    checked; a bad one changes nothing and is named. The audit event carries only the masked number."""
    digits = "".join(ch for ch in taxpayer_number if ch.isdigit())
    problems = []
    if len(digits) != 9 or len(taxpayer_number.replace("-", "").strip()) != 9:
        problems.append("taxpayer number: 9 digits (SSN or ITIN), dashes allowed")
    for name, value in (("address line 1", address_line1), ("city", city), ("postal code", postal_code)):
        if not value.strip():
            problems.append(f"{name}: required")
    if len(state.strip()) != 2 or not state.strip().isalpha():
        problems.append("state: the two-letter code")
    email = email.strip()
    if email and not _email_valid(email):
        problems.append("email: an address such as name@example.com, or empty")
    if problems:
        raise ParticipantError("Form 1099-MISC information refused: " + "; ".join(problems))
    with transaction.atomic():
        info, _ = BeneficiaryTaxInfo.objects.update_or_create(
            beneficiary=beneficiary,
            defaults={
                "taxpayer_number": digits,
                "address_line1": address_line1.strip(),
                "address_line2": address_line2.strip(),
                "city": city.strip(),
                "state": state.strip().upper(),
                "postal_code": postal_code.strip(),
                "email": email,
                "recorded_by": actor_label(actor),
                "recorded_at": now,
            },
        )
        audit_record(
            action="beneficiary_tax_info_record",
            actor=actor,
            at=now,
            obj=beneficiary,
            data={"taxpayer_number": info.masked_number},
        )
    return info
