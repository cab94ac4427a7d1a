"""Notice of eligibility and reminders to those who have not elected (Django mail)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail

from core.models import Notice
from core.pdf import pdf_text
from core.schedules import all_schedules
from elections.models import ElectionNotice
from elections.selectors import confirmation_of
from elections.services import (
    deferral_election_submit,
    election_confirmation_send,
    election_reminders_send,
    eligibility_notice_send,
    enrollment_window_open,
)
from elections.tasks import election_confirmation_task, send_reminders_task
from plans.models import Plan
from tests.elections.factories import at, participant

pytestmark = pytest.mark.django_db


@pytest.fixture
def window(db):
    return enrollment_window_open(
        plan=Plan.objects.get(code="EDCP"),
        plan_year=2027,
        opens_at=at(2026, 11, 1, 0, 0),
        closes_at=at(2026, 11, 30, 23, 59),
        reminder_days=[7, 1],
        actor="committee",
        now=at(2026, 10, 1),
    )


def test_the_notice_of_eligibility_is_emailed_with_its_thirty_day_deadline(alice):
    eligibility_notice_send(
        participation=alice, notice_on=dt.date(2026, 3, 2), actor="committee", now=at(2026, 3, 2, 9)
    )
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.com"]
    assert "eligible to defer" in message.subject
    assert "within 30 days" in message.body and "April 1, 2026, 11:59 PM" in message.body
    assert "EDCP 3.2(a)" in message.body and "Base salary: up to 75%" in message.body


def test_a_window_opening_is_announced_to_eligible_participants_on_its_first_day(alice, bob, window):
    stats = election_reminders_send(today=dt.date(2026, 11, 1), actor="beat", now=at(2026, 11, 1, 8))
    assert stats["opened"] == 2
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.com", "bob@example.com"]
    assert "is open" in mail.outbox[0].subject


def test_reminders_go_only_to_those_who_have_not_elected_on_the_reminder_days(alice, bob, window):
    deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 5},
        accounts=None,
        submitted_at=at(2026, 11, 5),
        channel="portal",
        actor="alice",
    )
    assert (
        election_reminders_send(today=dt.date(2026, 11, 22), actor="beat", now=at(2026, 11, 22, 8))[
            "reminders"
        ]
        == 0
    )
    stats = election_reminders_send(today=dt.date(2026, 11, 23), actor="beat", now=at(2026, 11, 23, 8))
    assert stats["reminders"] == 1
    assert [m.to for m in mail.outbox] == [["bob@example.com"]]
    assert "7 days left" in mail.outbox[0].subject


def test_a_rerun_the_same_day_sends_nothing_twice(alice, window):
    election_reminders_send(today=dt.date(2026, 11, 29), actor="beat", now=at(2026, 11, 29, 8))
    again = election_reminders_send(today=dt.date(2026, 11, 29), actor="beat", now=at(2026, 11, 29, 9))
    assert again["reminders"] == 0 and len(mail.outbox) == 1


def test_a_reminder_mentions_the_election_that_carries_forward(alice, window):
    deferral_election_submit(
        participation=alice,
        plan_year=2026,
        percentages={"base_salary": 8},
        accounts=None,
        submitted_at=at(2025, 12, 1),
        channel="portal",
        actor="alice",
    )
    election_reminders_send(today=dt.date(2026, 11, 29), actor="beat", now=at(2026, 11, 29, 8))
    assert "8% of base salary" in mail.outbox[0].body and "stays in force" in mail.outbox[0].body


def test_someone_without_consent_gets_the_notice_on_paper(window):
    p = participant(email="carol@example.com")
    stats = election_reminders_send(today=dt.date(2026, 11, 1), actor="beat", now=at(2026, 11, 1, 8))
    assert stats["undeliverable"] == 0 and mail.outbox == []
    assert ElectionNotice.objects.get(participation=p).delivered is True
    notice = Notice.objects.get(person=p.person)
    assert (notice.channel, notice.status, notice.queued_on) == ("paper", "queued", dt.date(2026, 11, 1))


def test_someone_with_no_address_and_no_consent_is_recorded_as_not_reached(window):
    p = participant(email="", address_line1="")
    stats = election_reminders_send(today=dt.date(2026, 11, 1), actor="beat", now=at(2026, 11, 1, 8))
    assert stats["undeliverable"] == 1 and mail.outbox == []
    assert ElectionNotice.objects.get(participation=p).delivered is False


def test_those_no_longer_eligible_are_not_reminded(alice, window):
    alice.eligible = False
    alice.save()
    election_reminders_send(today=dt.date(2026, 11, 1), actor="beat", now=at(2026, 11, 1, 8))
    assert mail.outbox == []


def test_the_daily_task_is_scheduled_and_calls_the_service(alice, window, monkeypatch):
    assert any(s.task == "elections.send_reminders" for s in all_schedules())
    from django.utils import timezone

    monkeypatch.setattr(timezone, "now", lambda: at(2026, 11, 1, 8))
    assert send_reminders_task()["opened"] == 1


def test_an_accepted_election_is_confirmed_by_email_with_its_pdf_once(alice):
    election = deferral_election_submit(
        participation=alice,
        plan_year=2026,
        percentages={"base_salary": 8},
        accounts=None,
        submitted_at=at(2025, 12, 1),
        channel="portal",
        actor="alice",
    )
    election_confirmation_task.apply(args=[election._meta.label, election.pk])
    election_confirmation_task.apply(args=[election._meta.label, election.pk])  # a retried task sends nothing
    [message] = mail.outbox
    assert message.to == ["alice@example.com"] and "confirmed" in message.subject
    assert f"/portal/elections/election/deferral/{election.pk}/" in message.body
    [(name, data, mimetype)] = message.attachments
    assert mimetype == "application/pdf" and "8%" in pdf_text(data)
    notice = Notice.objects.get(kind="election_confirmation")
    assert notice.document == confirmation_of(election=election) and notice.status == "sent"


def test_a_confirmation_to_someone_on_paper_puts_the_pdf_in_the_print_queue(window):
    carol = participant(email="carol@example.com")
    election = deferral_election_submit(
        participation=carol,
        plan_year=2027,
        percentages={"base_salary": 5},
        accounts=None,
        submitted_at=at(2026, 11, 2),
        channel="portal",
        actor="carol",
    )
    election_confirmation_send(election=election, actor="test", now=at(2026, 11, 2, 9))
    notice = Notice.objects.get(kind="election_confirmation")
    assert mail.outbox == [] and notice.status == "queued"
    assert notice.print_document == confirmation_of(election=election)


# --- the closing notice (issue 13): on the window's last day, what will be in force -----------------------------


def test_on_the_last_day_each_participant_is_told_what_will_be_in_force_once(alice, bob, window, monkeypatch):
    deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 5},
        accounts=None,
        submitted_at=at(2026, 11, 5),
        channel="portal",
        actor="alice",
    )
    # the day before: a reminder to Bob, no closing notice
    before = election_reminders_send(today=dt.date(2026, 11, 29), actor="beat", now=at(2026, 11, 29, 8))
    assert (before["reminders"], before["closing"]) == (1, 0)
    mail.outbox.clear()
    from django.utils import timezone

    monkeypatch.setattr(timezone, "now", lambda: at(2026, 11, 30, 8))
    stats = send_reminders_task()  # the daily beat task
    assert (stats["closing"], stats["reminders"], stats["opened"]) == (2, 0, 0)
    by_to = {m.to[0]: m for m in mail.outbox}
    assert sorted(by_to) == ["alice@example.com", "bob@example.com"]
    to_alice, to_bob = by_to["alice@example.com"], by_to["bob@example.com"]
    assert "closes today" in to_alice.subject and "November 30, 2026, 11:59 PM" in to_alice.body
    assert "filed on November 5, 2026 (5% of base salary)" in to_alice.body and "EDCP 3.2" in to_alice.body
    assert "no earlier election carries forward" in to_bob.body and "Bob" in to_bob.body
    assert "Alice" not in to_bob.body and "5% of base salary" not in to_bob.body  # only their own
    assert "/portal/elections/" in to_bob.body
    notices = Notice.objects.filter(kind="window_closing").order_by("person__last_name")
    assert [(n.person, n.status, n.object_id) for n in notices] == [
        (alice.person, "sent", str(window.pk)),
        (bob.person, "sent", str(window.pk)),
    ]
    assert ElectionNotice.objects.filter(kind="closing", window=window).count() == 2
    # a rerun the same day (or a retried task) sends nothing twice
    again = election_reminders_send(today=dt.date(2026, 11, 30), actor="beat", now=at(2026, 11, 30, 9))
    assert again["closing"] == 0 and len(mail.outbox) == 2


def test_the_closing_notice_of_a_window_already_closed_confirms_the_election_carried_forward(alice):
    deferral_election_submit(
        participation=alice,
        plan_year=2026,
        percentages={"base_salary": 8},
        accounts=None,
        submitted_at=at(2025, 12, 1),
        channel="portal",
        actor="alice",
    )
    window = enrollment_window_open(
        plan=Plan.objects.get(code="EDCP"),
        plan_year=2027,
        opens_at=at(2026, 11, 1, 0, 0),
        closes_at=at(2026, 11, 30, 6, 0),
        reminder_days=[0],
        actor="committee",
        now=at(2026, 10, 1),
    )
    stats = election_reminders_send(today=dt.date(2026, 11, 30), actor="beat", now=at(2026, 11, 30, 8))
    assert (stats["closing"], stats["reminders"]) == (1, 0)  # the closing notice replaces a last-day reminder
    [message] = mail.outbox
    assert "has closed" in message.subject and "closed on November 30, 2026, 6:00 AM" in message.body
    assert "You made no election in this window" in message.body and "8% of base salary" in message.body
    assert ElectionNotice.objects.get(kind="closing").window == window
