from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User

from core.imports import import_file
from core.roles import Role
from elections.models import Channel, DeferralElection, DeferralElectionLine, Status
from tests.conftest import eastern
from tests.factories import FundFactory, ParticipationFactory, PersonFactory

NOW = eastern(2024, 6, 3, 9, 0)


def csv_bytes(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def run(kind: str, *lines: str, name: str = "file.csv", actor="test", now=NOW):
    return import_file(kind=kind, file_name=name, content=csv_bytes(*lines), actor=actor, now=now)


def reasons(batch) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for e in batch.errors:
        out.setdefault(e["line"], []).append(e["message"])
    return out


@pytest.fixture
def funds(edcp, rrp):
    return {
        "SV": FundFactory(plan=edcp, code="SV", name="Stable Value", is_default=True),
        "EQ": FundFactory(plan=edcp, code="EQ", name="Equity Index"),
        "RSV": FundFactory(plan=rrp, code="RSV", name="RRP Stable Value", is_default=True),
    }


@pytest.fixture
def employees(edcp):
    """E100 and E200 take part in the EDCP with a 10% base salary election for 2024; E300 is not in a plan."""
    people = {}
    for number in ("E100", "E200", "E300"):
        people[number] = PersonFactory(employee_number=number, hire_date=dt.date(2015, 1, 5))
    for number in ("E100", "E200"):
        participation = ParticipationFactory(person=people[number], plan=edcp, entered_on=dt.date(2015, 1, 5))
        election = DeferralElection.objects.create(
            participation=participation,
            plan_year=2024,
            status=Status.ACCEPTED,
            submitted_at=eastern(2023, 12, 1),
            channel=Channel.STAFF,
            actor="test",
        )
        DeferralElectionLine.objects.create(election=election, component="base_salary", percent=Decimal("10"))
    return people


def user_with(role: Role | None, username: str) -> User:
    user = User.objects.create_user(username)  # no password: tests sign in with force_login
    if role is not None:
        user.groups.add(Group.objects.get(name=role.value))
    return user
