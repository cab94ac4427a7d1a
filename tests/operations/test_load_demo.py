"""manage.py load_demo: a demo population through the real services, idempotent."""

from __future__ import annotations

import base64
import io
import re

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django_otp.plugins.otp_totp.models import TOTPDevice

from books.models import DailyValuation, Forfeiture, LedgerEntry, PendingTransaction
from core.models import JobRun
from participants.models import EmploymentEvent, Person

pytestmark = pytest.mark.django_db

ARGS = ["--participants", "6", "--months", "3", "--as-of", "2026-06-30"]


def counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for m in apps.get_models()}


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_load_demo_builds_credited_books_and_a_second_run_changes_nothing():
    out = io.StringIO()
    call_command("load_demo", *ARGS, stdout=out)
    first = counts()
    text = out.getvalue()
    for login in ("committee", "committee2", "administrator", "auditor"):
        assert f"\n  {login} " in text
    # Staff sign in with a second factor: the third column is the base32 key of the enrolled authenticator.
    for login in ("committee", "committee2", "administrator", "auditor"):
        secret = re.search(rf"\n  {login} +\S+ +([A-Z2-7]{{32}}) ", text).group(1)
        device = TOTPDevice.objects.get(user__username=login, confirmed=True)
        assert base64.b32decode(secret) == device.bin_key
    participant_line = next(line for line in text.splitlines() if "participant: " in line)
    assert re.search(r"[A-Z2-7]{32}", participant_line) is None
    assert text.count("participant: ") >= 4
    assert Person.objects.filter(employee_number__startswith="D").count() == 6
    assert set(EmploymentEvent.objects.values_list("kind", flat=True)) == {"separation", "death"}
    assert Forfeiture.objects.exists()  # EDCP 4.2: the unvested company contribution of the early leaver
    assert not PendingTransaction.objects.filter(status="pending").exists()
    assert JobRun.objects.filter(kind="crediting").exclude(status="done").count() == 0
    assert DailyValuation.objects.filter(valuation_date="2026-06-30").exists()
    assert LedgerEntry.objects.exists()

    again = io.StringIO()
    call_command("load_demo", *ARGS, stdout=again)
    assert counts() == first
    assert "0 new pay lines, 0 new elections, 0 new employment events" in again.getvalue()
    assert secret in again.getvalue()  # the same key on a second run


def test_a_run_on_a_later_day_adds_only_the_days_since():
    call_command("load_demo", *ARGS, stdout=io.StringIO())
    events = list(EmploymentEvent.objects.values_list("person__employee_number", "kind", "effective_date"))
    later = io.StringIO()
    call_command("load_demo", *ARGS[:-1], "2026-07-31", stdout=later)
    assert "0 new elections, 0 new employment events" in later.getvalue()
    assert (
        list(EmploymentEvent.objects.values_list("person__employee_number", "kind", "effective_date"))
        == events
    )
    assert DailyValuation.objects.filter(valuation_date="2026-07-31").exists()
    assert JobRun.objects.filter(kind="crediting").exclude(status="done").count() == 0


def test_load_demo_refuses_to_run_outside_a_development_setup(settings):
    settings.DEBUG = settings.TESTING = False
    with pytest.raises(CommandError, match="only with DEBUG=true"):
        call_command("load_demo", *ARGS)
    assert not Person.objects.exists()
