"""Factories and helpers for the elections tests."""

from __future__ import annotations

import datetime as dt
import zoneinfo

from django.contrib.auth.models import Group, User

from plans.models import Plan, Provision
from tests.factories import FundFactory, ParticipationFactory, PersonFactory

EASTERN = zoneinfo.ZoneInfo("America/New_York")
UTC = dt.UTC


def at(y, m, d, hh=12, mm=0, ss=0) -> dt.datetime:
    """A moment in Eastern time (the plan's time zone)."""
    return dt.datetime(y, m, d, hh, mm, ss, tzinfo=EASTERN)


def user_with_role(username: str, role: str, password: str | None = None) -> User:
    """A user in a role group. Without a password (tests sign in with force_login): hashing one takes a second."""
    user = User.objects.create_user(username=username, password=password)
    user.groups.add(Group.objects.get(name=role))
    return user


def participant(plan_code: str = "EDCP", *, username: str | None = None, email: str = "", **person_fields):
    """A participation whose person can sign in to the portal."""
    plan = Plan.objects.get(code=plan_code)
    person = PersonFactory(email=email, **person_fields)
    person.user = user_with_role(username or f"p{person.employee_number.lower()}", "participant")
    person.save()
    return ParticipationFactory(person=person, plan=plan)


def default_fund(plan_code: str = "EDCP", code: str = "SV"):
    return FundFactory(plan=Plan.objects.get(code=plan_code), code=code, name="Stable Value", is_default=True)


def set_provision(plan_code: str, key: str, value, effective: str | None = None) -> None:
    qs = Provision.objects.filter(version__plan__code=plan_code, key=key)
    if effective:
        qs = qs.filter(version__effective_date=effective)
    assert qs.update(value=value), f"no provision {key} in {plan_code}"
