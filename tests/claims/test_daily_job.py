"""The daily job: abandoned claims marked, approaching and past deadlines flagged once, reviewers emailed."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail

from claims.models import ClaimFlag, State
from claims.services import appeal_file, claim_assign, claims_flag_deadlines
from claims.tasks import flag_deadlines_task
from core.schedules import all_schedules
from tests.claims.factories import at, deny, file_claim

pytestmark = pytest.mark.django_db


@pytest.fixture
def claim(alice):
    return file_claim(alice, now=at(2025, 1, 10))  # decision due April 10, 2025


def test_a_deadline_15_days_away_is_not_flagged_and_14_days_away_is(claim, admin_user):
    claim_assign(claim=claim, reviewer=admin_user, now=at(2025, 1, 11), actor=admin_user)
    assert claims_flag_deadlines(now=at(2025, 3, 26, 6, 15))["approaching"] == 0
    assert not mail.outbox
    stats = claims_flag_deadlines(now=at(2025, 3, 27, 6, 15))
    assert (stats["approaching"], stats["emails"]) == (1, 1)
    flag = ClaimFlag.objects.get()
    assert (flag.kind, flag.deadline_kind, flag.deadline_on, flag.flagged_on) == (
        "approaching",
        "decision",
        dt.date(2025, 4, 10),
        dt.date(2025, 3, 27),
    )
    message = mail.outbox[0]
    assert message.to == ["delegate@example.com"]
    assert claim.number in message.subject and "April 10, 2025 (14 days left)" in message.body
    assert "EDCP 11.2" in message.body


def test_a_rerun_emails_nobody_twice_and_a_passed_deadline_is_flagged_again(claim, admin_user):
    claim_assign(claim=claim, reviewer=admin_user, now=at(2025, 1, 11), actor=admin_user)
    claims_flag_deadlines(now=at(2025, 4, 1))
    claims_flag_deadlines(now=at(2025, 4, 2))
    assert len(mail.outbox) == 1
    assert claims_flag_deadlines(now=at(2025, 4, 10, 23, 59))["overdue"] == 0  # day 90 is not past
    stats = claims_flag_deadlines(now=at(2025, 4, 11, 0, 1))
    assert (stats["overdue"], len(mail.outbox)) == (1, 2)
    assert "was due on April 10, 2025 (1 day ago)" in mail.outbox[1].body
    assert claims_flag_deadlines(now=at(2025, 4, 12))["overdue"] == 0
    assert ClaimFlag.objects.filter(claim=claim).count() == 2


def test_an_unassigned_claim_is_flagged_to_every_delegate(claim, admin_user, committee_user):
    claims_flag_deadlines(now=at(2025, 4, 1))
    assert mail.outbox[0].to == ["delegate@example.com"]


def test_an_appeal_is_flagged_to_the_committee_against_the_review_deadline(
    claim, alice, admin_user, committee_user
):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor="alice")  # review due May 31
    claims_flag_deadlines(now=at(2025, 5, 17))
    assert mail.outbox[0].to == ["committee@example.com"] and "EDCP 11.4" in mail.outbox[0].body
    assert ClaimFlag.objects.get().deadline_kind == "review"


def test_the_job_marks_abandoned_claims_once(claim, admin_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)  # appeal by May 2
    assert claims_flag_deadlines(now=at(2025, 5, 2, 23, 59))["abandoned"] == 0
    assert claims_flag_deadlines(now=at(2025, 5, 3, 0, 1))["abandoned"] == 1
    assert claims_flag_deadlines(now=at(2025, 5, 3, 12))["abandoned"] == 0
    claim.refresh_from_db()
    assert claim.state == State.ABANDONED
    assert ClaimFlag.objects.get(kind="abandoned").deadline_on == dt.date(2025, 5, 2)
    assert claim.transitions.filter(action="abandoned").count() == 1


def test_the_celery_task_runs_the_job_and_is_scheduled_daily(claim, admin_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    stats = flag_deadlines_task()  # today is long after May 2, 2025
    assert stats["abandoned"] == 1
    schedule = next(s for s in all_schedules() if s.task == "claims.flag_deadlines")
    assert schedule.crontab == "15 6 * * *"
    from config.celery import app

    app.loader.import_default_modules()
    assert "claims.flag_deadlines" in app.tasks
