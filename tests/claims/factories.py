"""Factories and helpers for the claims tests: users in their role groups, files, claims at a given moment."""

from __future__ import annotations

import datetime as dt
import io
import re
import zoneinfo

from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile

from claims.models import Capacity, Subject
from claims.selectors import review_procedure_text
from claims.services import claim_deny, claim_file
from participants.models import Person
from plans.models import Plan, PlanSection
from tests.factories import ParticipationFactory, PersonFactory

EASTERN = zoneinfo.ZoneInfo("America/New_York")
PASSWORD = "a-long-test-password"


def at(y: int, m: int, d: int, hh: int = 12, mm: int = 0) -> dt.datetime:
    """A moment in the plan's time zone."""
    return dt.datetime(y, m, d, hh, mm, tzinfo=EASTERN)


def user_in(role: str, username: str | None = None, email: str = "") -> User:
    group, _ = Group.objects.get_or_create(name=role)
    user = User.objects.create_user(
        username=username or f"{role}-{User.objects.count() + 1}",
        password=PASSWORD,
        email=email,
        first_name=role.title(),
        last_name="User",
    )
    user.groups.add(group)
    return user


def participant(plan_code: str = "EDCP", username: str | None = None, **person) -> Person:
    """A Person with a portal login (Group participant) enrolled in the plan."""
    person = PersonFactory(**person)
    ParticipationFactory(person=person, plan=Plan.objects.get(code=plan_code))
    user = user_in("participant", username=username or f"p-{person.employee_number}")
    person.user = user
    person.save()
    return person


def pdf_bytes(text: str = "Statement of benefits") -> bytes:
    from weasyprint import HTML

    return HTML(string=f"<p>{text}</p>").write_pdf()


def png_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 20), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def upload(name: str = "statement.pdf", data: bytes | None = None, content_type: str = "application/pdf"):
    return SimpleUploadedFile(name, pdf_bytes() if data is None else data, content_type=content_type)


def file_claim(person: Person, *, now: dt.datetime, plan_code: str = "EDCP", files=(), **kwargs):
    return claim_file(
        plan=Plan.objects.get(code=plan_code),
        claimant=person,
        capacity=kwargs.pop("capacity", Capacity.PARTICIPANT),
        subject=kwargs.pop("subject", Subject.AMOUNT),
        description=kwargs.pop("description", "My 2024 company contribution was not credited."),
        now=now,
        actor=kwargs.pop("actor", person.user or "staff"),
        filed_by=kwargs.pop("filed_by", person),
        files=files,
        **kwargs,
    )


def section(plan_code: str, number: str) -> PlanSection:
    return (
        PlanSection.objects.filter(version__plan__code=plan_code, section=number)
        .order_by("-version__effective_date")
        .first()
    )


def deny(claim, *, now: dt.datetime, actor, provisions=None, **kwargs):
    defaults = {
        "reasons": "The 2024 company contribution was credited on December 31, 2024, as the records show.",
        "provisions": provisions if provisions is not None else [section(claim.plan.code, "4.1")],
        "additional_material": "None is needed: the records of the plan are complete for this claim.",
        "review_procedure": review_procedure_text(claim=claim),
    }
    defaults.update(kwargs)
    return claim_deny(claim=claim, now=now, actor=actor, **defaults)


def text_of(document) -> str:
    """The words of a PDF with the running footers taken out (so a sentence split by a page break reads whole)."""
    from core.pdf import document_bytes, pdf_text

    lines = [
        line
        for line in pdf_text(document_bytes(document)).splitlines()
        if not re.search(r"Page \d+ of \d+\s*$", line)
    ]
    return " ".join(" ".join(lines).split())
