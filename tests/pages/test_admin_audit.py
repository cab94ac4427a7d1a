"""Issue 12, finding 4: the audit trail cannot be edited, and every admin change is in it.

An admin edit of a deferral election line (18% -> 50%) leaves history and an audit event with the old and
new values; moving an account to another person is an audit event; SQL UPDATE and DELETE on audit events and
history tables are refused by the database, like the ledger's.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import timezone

from books.models import Account
from core.append_only import audit_tables
from core.audit import audit_record
from core.models import AuditEvent
from elections.models import DeferralElection, DeferralElectionLine
from participants.models import Participation
from tests.factories import ParticipationFactory, PersonFactory
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):
    sign_in(client, get_user_model().objects.create_superuser("root", "root@example.com", "x"))
    return client


def _post_change(client, obj, **changes):
    data = {k: ("" if v is None else v) for k, v in model_to_dict(obj).items()}
    data.update(changes)
    opts = obj._meta
    return client.post(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]), data)


@pytest.fixture
def line(edcp):
    election = DeferralElection.objects.create(
        participation=ParticipationFactory(plan=edcp),
        plan_year=2026,
        submitted_at=timezone.now(),
        status="accepted",
        channel="portal",
        actor="test",
    )
    return DeferralElectionLine.objects.create(
        election=election, component="base_salary", percent=Decimal("18")
    )


def test_an_admin_edit_of_an_election_line_leaves_history_and_an_audit_event(superuser_client, line):
    response = _post_change(superuser_client, line, percent="50")
    assert response.status_code == 302
    line.refresh_from_db()
    assert line.percent == Decimal("50")
    assert [h.percent for h in line.history.order_by("history_date")][-1] == Decimal("50")
    event = AuditEvent.objects.get(action="admin.change")
    assert (event.actor.username, event.object_type, event.object_id) == (
        "root",
        "elections.DeferralElectionLine",
        str(line.pk),
    )
    assert event.data["changes"] == {"percent": ["18.0000", "50"]}


def test_an_inline_edit_of_a_line_on_the_election_page_is_audited(superuser_client, line):
    election = line.election
    data = {k: ("" if v is None else v) for k, v in model_to_dict(election).items()}
    data["request_data"] = "{}"
    data.update(
        {
            "submitted_at_0": election.submitted_at.date().isoformat(),
            "submitted_at_1": "12:00:00",
            "lines-TOTAL_FORMS": "1",
            "lines-INITIAL_FORMS": "1",
            "lines-0-id": str(line.pk),
            "lines-0-election": str(election.pk),
            "lines-0-component": "base_salary",
            "lines-0-percent": "50",
            "allocations-TOTAL_FORMS": "0",
            "allocations-INITIAL_FORMS": "0",
        }
    )
    response = superuser_client.post(
        reverse("admin:elections_deferralelection_change", args=[election.pk]), data
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    event = AuditEvent.objects.get(action="admin.change", object_type="elections.DeferralElection")
    assert {
        "model": "elections.DeferralElectionLine",
        "id": str(line.pk),
        "changes": {"percent": ["18.0000", "50"]},
    } in (event.data["inlines"])


def test_moving_an_account_to_another_person_is_an_audit_event(superuser_client, edcp):
    account = Account.objects.create(
        participation=ParticipationFactory(plan=edcp), kind="retirement", opened_on=dt.date(2026, 1, 2)
    )
    old = account.participation
    other = Participation.objects.create(person=PersonFactory(), plan=edcp, entered_on=dt.date(2026, 1, 1))
    response = _post_change(superuser_client, account, participation=other.pk)
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="admin.change", object_type="books.Account")
    assert event.data["changes"]["participation"] == [str(old.pk), str(other.pk)]
    assert account.history.count() == 2


def test_an_admin_deletion_records_the_values_deleted(superuser_client, line):
    opts = line._meta
    response = superuser_client.post(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[line.pk]), {"post": "yes"}
    )
    assert response.status_code == 302 and not DeferralElectionLine.objects.exists()
    event = AuditEvent.objects.get(action="admin.delete")
    assert event.data["values"]["percent"] == "18.0000"


def test_sql_update_and_delete_of_audit_events_and_history_rows_are_refused(line):
    audit_record(action="test.event", actor="system", at=timezone.now(), reason="kept")
    line.percent = Decimal("20")
    line.save()
    tables = audit_tables()
    assert "core_auditevent" in tables and "elections_historicaldeferralelectionline" in tables
    assert len(tables) > 40
    for table in ("core_auditevent", "elections_historicaldeferralelectionline"):  # tables with rows
        for statement in (f"UPDATE {table} SET id = id", f"DELETE FROM {table}"):
            with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(statement)
    assert AuditEvent.objects.filter(action="test.event").exists()
    assert line.history.count() == 2
