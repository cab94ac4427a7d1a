"""Tolling: an extension needed because the claimant has not submitted information stops the clock from the
notice until the claimant responds (29 CFR 2560.503-1(f)(4) initial, (i)(4) on review).

Dates used (claim received Friday January 10, 2025 = day 0):
  extension notice asking for information   day 80 = March 31, 2025 (100 days of the 180 remain)
  claimant's response                        day 100 = April 20, 2025 (20 days tolled)
  decision due                               day 180 + 20 = July 29, 2025; July 30 is late
  appeal received April 1 (after a denial)   review extension asking for information May 20 (day 49)
  response June 9 (20 days tolled)           review due July 30 + 20 = August 19; August 20 is late
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from hypothesis import given
from hypothesis import strategies as st

from claims.models import (
    AWAITING_CLAIMANT,
    Claim,
    ClaimDocument,
    ClaimExtension,
    ClaimFlag,
    ClaimTransition,
    State,
)
from claims.selectors import claim_deadlines, claims_queue, information_request_pending, tolled_due_on
from claims.services import (
    ClaimRefused,
    appeal_decide,
    appeal_extend,
    appeal_file,
    claim_approve,
    claim_assign,
    claim_extend,
    claim_information_receive,
    claims_flag_deadlines,
)
from tests.claims.factories import at, deny, file_claim, section, text_of, upload
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

DAY_80 = dt.date(2025, 3, 31)
DAY_100 = dt.date(2025, 4, 20)
DAY_180 = dt.date(2025, 7, 9)
DAY_200 = dt.date(2025, 7, 29)
W2 = "Your 2024 Form W-2, which shows the pay the company contribution is based on."


@pytest.fixture
def claim(alice):
    return file_claim(alice, now=at(2025, 1, 10, 9))


def _ask(claim, actor, *, now=None, what=W2, expected_on=DAY_180) -> ClaimExtension:
    return claim_extend(
        claim=claim,
        special_circumstances="You have not sent the pay records we need.",
        expected_on=expected_on,
        now=now or at(2025, 3, 31, 15),
        actor=actor,
        requests_information=True,
        information_requested=what,
    )


def _answer(claim, alice, *, now=None, **kwargs) -> ClaimExtension:
    kwargs.setdefault("response", "My W-2 is attached.")
    return claim_information_receive(
        claim=claim, now=now or at(2025, 4, 20, 11), actor=alice.user, filed_by=alice, **kwargs
    )


def _approve(claim, now, actor):
    return claim_approve(
        claim=claim,
        reasons="The contribution was omitted.",
        approved_benefit="A credit of $4,100.",
        now=now,
        actor=actor,
    )


# --- the arithmetic ---------------------------------------------------------------------------------------------
@given(
    notice_day=st.integers(min_value=0, max_value=90),
    waited=st.integers(min_value=0, max_value=400),
    received=st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2090, 12, 31)),
)
def test_the_decision_falls_due_later_by_exactly_the_days_between_the_notice_and_the_response(
    notice_day, waited, received
):
    limit = received + dt.timedelta(days=180)
    notice_on = received + dt.timedelta(days=notice_day)
    due = tolled_due_on(due_on=limit, notice_on=notice_on, response_on=notice_on + dt.timedelta(days=waited))
    assert due == received + dt.timedelta(days=180 + waited)


# --- the initial decision ------------------------------------------------------------------------------------
def test_a_request_on_day_80_answered_on_day_100_makes_the_decision_due_on_day_200_not_180(
    claim, alice, admin_user
):
    _ask(claim, admin_user)
    claim.refresh_from_db()
    assert claim.state == State.EXTENDED
    # While the claimant's response is awaited the clock stands still: no due date, nothing to count down.
    assert (claim.decision_due_on, claim.next_deadline_on, claim.next_deadline_kind) == (
        None,
        None,
        AWAITING_CLAIMANT,
    )
    waiting = claim_deadlines(claim=claim).decision
    assert (waiting.suspended_since, waiting.days_remaining, waiting.due_on) == (DAY_80, 100, None)

    extension = _answer(claim, alice)
    claim.refresh_from_db()
    assert (extension.information_received_on, extension.days_tolled) == (DAY_100, 20)
    assert (claim.state, claim.decision_due_on, claim.next_deadline_on, claim.next_deadline_kind) == (
        State.EXTENDED,
        DAY_200,
        DAY_200,
        "decision",
    )
    assert claim_deadlines(claim=claim).decision.days_tolled == 20


def test_a_decision_on_day_200_after_20_days_tolled_is_on_time(claim, alice, admin_user):
    _ask(claim, admin_user)
    _answer(claim, alice)
    decision = _approve(claim, at(2025, 7, 29, 23, 30), admin_user)
    assert (decision.due_on, decision.late, decision.days_taken) == (DAY_200, False, 200)


def test_a_decision_on_day_201_after_20_days_tolled_is_late(claim, alice, admin_user):
    _ask(claim, admin_user)
    _answer(claim, alice)
    decision = deny(claim, now=at(2025, 7, 30, 0, 5), actor=admin_user)
    assert (decision.due_on, decision.late, decision.days_late) == (DAY_200, True, 1)


def test_a_decision_made_while_the_information_is_awaited_is_not_late(claim, admin_user):
    _ask(claim, admin_user)
    # Day 250: long past day 180, but the clock has stood still since day 80 (100 days of the period remain).
    decision = deny(claim, now=at(2025, 9, 17, 10), actor=admin_user)
    assert decision.late is False
    assert decision.due_on == dt.date(2025, 9, 17) + dt.timedelta(days=100)
    claim.refresh_from_db()
    assert claim.decision_due_on == decision.due_on and claim.next_deadline_kind == "appeal"


def test_the_response_is_logged_without_changing_the_state_and_its_files_are_kept(claim, alice, admin_user):
    _ask(claim, admin_user)
    _answer(claim, alice, files=[upload("w2.pdf")])
    step = claim.transitions.last()
    assert (step.action, step.from_state, step.to_state, step.actor_label) == (
        "information_received",
        State.EXTENDED,
        State.EXTENDED,
        "alice",
    )
    assert "suspended for 20 days" in step.reason and "July 29, 2025" in step.reason
    assert "(EDCP 11.2; 29 CFR 2560.503-1(f)(4))" in step.reason
    assert [(d.kind, d.original_name) for d in claim.documents.all()] == [("information", "w2.pdf")]


def test_the_reviewer_is_told_when_the_information_arrives(
    claim, alice, admin_user, django_capture_on_commit_callbacks
):
    claim_assign(claim=claim, reviewer=admin_user, now=at(2025, 1, 13), actor=admin_user)
    _ask(claim, admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        _answer(claim, alice)
    message = mail.outbox[-1]
    assert message.to == ["delegate@example.com"] and "information arrived" in message.subject
    assert "due by July 29, 2025" in message.body


# --- refused, and nothing changes ----------------------------------------------------------------------------
def _nothing_recorded(claim, transitions: int, due: dt.date | None) -> None:
    claim.refresh_from_db()
    assert ClaimTransition.objects.filter(claim=claim).count() == transitions
    assert claim.decision_due_on == due
    assert not ClaimDocument.objects.filter(kind="information").exists()
    assert not ClaimExtension.objects.filter(information_received_on__isnull=False).exists()


def test_a_response_with_no_request_pending_is_refused(claim, alice, admin_user):
    with pytest.raises(
        ClaimRefused,
        match=r"no extension notice of C-\d+ asked the claimant for information.*"
        r"\(EDCP 11.2; 29 CFR 2560.503-1\(f\)\(4\)\)",
    ):
        _answer(claim, alice)
    _nothing_recorded(claim, 1, dt.date(2025, 4, 10))
    claim_extend(
        claim=claim,
        special_circumstances="The recordkeeper's files are late.",
        expected_on=DAY_180,
        now=at(2025, 3, 31),
        actor=admin_user,
    )  # an extension that asks the claimant for nothing
    with pytest.raises(ClaimRefused, match="asked the claimant for information"):
        _answer(claim, alice, files=[upload("w2.pdf")])
    _nothing_recorded(claim, 2, DAY_180)


def test_a_second_response_is_refused_and_the_first_date_stands(claim, alice, admin_user):
    _ask(claim, admin_user)
    _answer(claim, alice)
    count = claim.transitions.count()
    with pytest.raises(ClaimRefused, match="already received on April 20, 2025"):
        _answer(claim, alice, now=at(2025, 5, 1))
    claim.refresh_from_db()
    assert claim.transitions.count() == count and claim.decision_due_on == DAY_200


def test_a_response_after_the_decision_is_refused(claim, alice, admin_user):
    _ask(claim, admin_user)
    deny(claim, now=at(2025, 4, 15), actor=admin_user)
    with pytest.raises(ClaimRefused, match="is denied: no decision is pending"):
        _answer(claim, alice)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"received_on": dt.date(2025, 3, 30)},
            "requested on March 31, 2025: a response cannot be received before",
        ),
        ({"received_on": dt.date(2025, 4, 21)}, "cannot be received in the future"),
        ({"response": "  "}, "must give or attach the information requested: Your 2024 Form W-2"),
        ({"files": [upload("w2.txt", b"wages", "text/plain")]}, "is not accepted: send a PDF, PNG or JPEG"),
    ],
)
def test_a_response_out_of_time_empty_or_of_the_wrong_file_type_is_refused(
    claim, alice, admin_user, kwargs, message
):
    _ask(claim, admin_user)
    with pytest.raises(ClaimRefused, match=message):
        _answer(claim, alice, **kwargs)
    _nothing_recorded(claim, 2, None)
    assert information_request_pending(claim=Claim.objects.get(pk=claim.pk)) is not None


def test_only_the_claimant_or_representative_may_answer(claim, bob, admin_user):
    _ask(claim, admin_user)
    with pytest.raises(ClaimRefused, match="only the claimant or their duly authorized representative"):
        claim_information_receive(
            claim=claim, response="Mine", now=at(2025, 4, 20), actor=bob.user, filed_by=bob
        )
    _nothing_recorded(claim, 2, None)


def test_an_information_request_must_say_what_is_needed(claim, admin_user):
    with pytest.raises(
        ClaimRefused,
        match=r"must say what information is needed \(EDCP 11.2; 29 CFR "
        r"2560.503-1\(f\)\(4\)\)",
    ):
        _ask(claim, admin_user, what=" ")
    with pytest.raises(ClaimRefused, match="only when the extension is for their failure to submit it"):
        claim_extend(
            claim=claim,
            special_circumstances="Records",
            expected_on=DAY_180,
            now=at(2025, 3, 31),
            actor=admin_user,
            information_requested=W2,
        )
    claim.refresh_from_db()
    assert claim.state == State.RECEIVED and not ClaimExtension.objects.exists()


# --- the daily job and the queue -----------------------------------------------------------------------------
def test_the_job_does_not_flag_a_claim_whose_period_is_tolled(claim, alice, admin_user):
    claim_assign(claim=claim, reviewer=admin_user, now=at(2025, 1, 13), actor=admin_user)
    _ask(claim, admin_user)
    # July 28 is 19 days past day 180, and still nothing is due: the claimant has not answered.
    stats = claims_flag_deadlines(now=at(2025, 7, 28, 6, 15))
    assert (stats["approaching"], stats["overdue"], stats["emails"]) == (0, 0, 0)
    assert not ClaimFlag.objects.exists()
    _answer(claim, alice, now=at(2025, 7, 28, 9), received_on=DAY_100)  # a paper response recorded late
    assert claims_flag_deadlines(now=at(2025, 7, 29, 6, 15))["approaching"] == 1
    assert claims_flag_deadlines(now=at(2025, 7, 30, 6, 15))["overdue"] == 1
    assert list(ClaimFlag.objects.values_list("kind", "deadline_on").order_by("id")) == [
        ("approaching", DAY_200),
        ("overdue", DAY_200),
    ]


def test_the_queue_lists_a_tolled_claim_last_as_awaiting_the_claimants_information(claim, bob, admin_user):
    from django.test import Client
    from django.urls import reverse

    _ask(claim, admin_user)
    running = file_claim(bob, now=at(2025, 3, 1))
    rows = claims_queue(today=dt.date(2025, 4, 1))
    assert [r.claim.pk for r in rows] == [running.pk, claim.pk]
    assert (rows[1].awaiting_claimant_since, rows[1].days_left, rows[1].urgency) == (DAY_80, None, "")
    client = Client()
    sign_in(client, admin_user)
    html = client.get(reverse("claims_staff:queue")).content.decode()
    assert "awaiting claimant's information since Mar 31, 2025" in html


# --- on review -----------------------------------------------------------------------------------------------
def test_a_review_period_is_tolled_from_the_notice_to_the_response(claim, alice, admin_user, committee_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(
        claim=claim,
        issues="The contribution is missing.",
        now=at(2025, 4, 1),
        actor=alice.user,
        filed_by=alice,
    )
    appeal_extend(
        claim=claim,
        special_circumstances="You have not sent your 2024 statement.",
        expected_on=dt.date(2025, 7, 30),
        now=at(2025, 5, 20),
        actor=committee_user,
        requests_information=True,
        information_requested="Your 2024 year-end statement.",
    )
    claim.refresh_from_db()
    assert (claim.state, claim.review_due_on, claim.next_deadline_kind) == (
        State.APPEAL_EXTENDED,
        None,
        AWAITING_CLAIMANT,
    )
    claim_information_receive(
        claim=claim,
        response="Statement attached.",
        files=[upload("statement.pdf")],
        now=at(2025, 6, 9),
        actor=alice.user,
        filed_by=alice,
    )
    claim.refresh_from_db()
    assert (claim.review_due_on, claim.next_deadline_on) == (dt.date(2025, 8, 19), dt.date(2025, 8, 19))
    assert "29 CFR 2560.503-1(i)(4)" in claim.transitions.last().reason
    assert claim.documents.filter(kind="information").count() == 1
    decision = appeal_decide(
        claim=claim,
        outcome="denied",
        reasons="The statement confirms the credit.",
        provisions=[section("EDCP", "4.1")],
        now=at(2025, 8, 19, 22),
        actor=committee_user,
    )
    assert (decision.due_on, decision.late, decision.days_taken) == (dt.date(2025, 8, 19), False, 140)


def test_a_decision_on_review_the_day_after_the_tolled_date_is_late(claim, alice, admin_user, committee_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor=alice.user, filed_by=alice)
    appeal_extend(
        claim=claim,
        special_circumstances="Statement missing.",
        expected_on=dt.date(2025, 7, 30),
        now=at(2025, 5, 20),
        actor=committee_user,
        requests_information=True,
        information_requested="Your 2024 year-end statement.",
    )
    claim_information_receive(
        claim=claim, response="Sent.", now=at(2025, 6, 9), actor=alice.user, filed_by=alice
    )
    decision = appeal_decide(
        claim=claim,
        outcome="approved",
        reasons="Missing.",
        approved_benefit="Credit.",
        now=at(2025, 8, 20, 0, 5),
        actor=committee_user,
    )
    assert (decision.due_on, decision.late) == (dt.date(2025, 8, 19), True)


# --- the notice --------------------------------------------------------------------------------------------
def test_the_extension_notice_states_the_information_needed_and_that_the_period_is_suspended(
    claim, admin_user
):
    extension = _ask(claim, admin_user)
    text = text_of(extension.notice)
    for part in (
        "The information we need from you",
        W2,
        "the period for deciding your claim is suspended from the date of this notice, March 31, 2025, "
        "until the date we receive your response (EDCP 11.2; 29 CFR 2560.503-1(f)(4))",
        "100 days of the period remain",
        "no later than July 9, 2025, each date later by the number of days",
    ):
        assert part in text, part


def test_the_review_extension_notice_cites_i4(claim, alice, admin_user, committee_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor=alice.user, filed_by=alice)
    extension = appeal_extend(
        claim=claim,
        special_circumstances="Statement missing.",
        expected_on=dt.date(2025, 7, 30),
        now=at(2025, 5, 20),
        actor=committee_user,
        requests_information=True,
        information_requested="Your 2024 year-end statement.",
    )
    text = text_of(extension.notice)
    assert "Your 2024 year-end statement." in text
    assert (
        "the period for deciding your appeal is suspended from the date of this notice, May 20, 2025, until the "
        "date we receive your response (EDCP 11.4; 29 CFR 2560.503-1(i)(4))"
    ) in text
    assert "71 days of the period remain" in text


def test_an_extension_that_asks_for_nothing_says_nothing_of_suspension(claim, admin_user):
    extension = claim_extend(
        claim=claim,
        special_circumstances="The recordkeeper's files are late.",
        expected_on=DAY_180,
        now=at(2025, 3, 31),
        actor=admin_user,
    )
    text = text_of(extension.notice)
    assert "suspended" not in text and "The information we need from you" not in text


# --- the pages -----------------------------------------------------------------------------------------------
def _client(user):
    from django.test import Client

    client = Client()
    sign_in(client, user)
    return client


def test_staff_ask_for_information_with_the_extension_form_and_record_a_paper_response(
    alice, admin_user, committee_user
):
    from django.urls import reverse
    from django.utils import timezone

    today = timezone.localdate()
    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=30))
    client = _client(admin_user)
    extend = reverse("claims_staff:extend", args=[claim.pk])
    expected = (today + dt.timedelta(days=60)).isoformat()
    response = client.post(
        extend,
        {
            "special_circumstances": "Pay records missing.",
            "expected_on": expected,
            "requests_information": "on",
        },
    )
    assert (
        response.status_code == 400
        and "Say what information the claimant must send." in response.content.decode()
    )
    assert not ClaimExtension.objects.exists()
    response = client.post(
        extend,
        {
            "special_circumstances": "Pay records missing.",
            "expected_on": expected,
            "requests_information": "on",
            "information_requested": W2,
        },
    )
    assert response.status_code == 302
    page = client.get(reverse("claims_staff:detail", args=[claim.pk])).content.decode()
    assert 'id="information-form"' in page and "awaiting the claimant's information since" in page
    url = reverse("claims_staff:information_received", args=[claim.pk])
    assert (
        _client(committee_user).post(url, {"received_on": today.isoformat(), "response": "x"}).status_code
        == 403
    )
    response = client.post(
        url,
        {
            "received_on": today.isoformat(),
            "response": "W-2 received by mail.",
            "files": [upload("w2-scan.pdf")],
        },
    )
    assert response.status_code == 302
    claim.refresh_from_db()
    extension = claim.extensions.get()
    assert (extension.information_received_on, extension.information_response) == (
        today,
        "W-2 received by mail.",
    )
    assert claim.decision_due_on == claim.received_on + dt.timedelta(days=180)  # asked and answered today
    assert claim.documents.get().kind == "information"
    response = client.post(url, {"received_on": today.isoformat(), "response": "Again"})
    assert response.status_code == 400 and "already received on" in response.content.decode()
    assert (
        'id="information-form"'
        not in client.get(reverse("claims_staff:detail", args=[claim.pk])).content.decode()
    )


def test_the_claimant_sees_the_request_in_the_portal_and_sends_the_information(alice, bob, admin_user):
    from django.urls import reverse
    from django.utils import timezone

    claim = file_claim(alice, now=timezone.now() - dt.timedelta(days=40))
    _ask(claim, admin_user, now=timezone.now() - dt.timedelta(days=10), expected_on=timezone.localdate())
    detail, url = (
        reverse("claims_portal:detail", args=[claim.pk]),
        reverse("claims_portal:information", args=[claim.pk]),
    )
    client = _client(alice.user)
    page = client.get(detail).content.decode()
    assert (
        "We need information from you" in page
        and "Your 2024 Form W-2" in page
        and 'id="information-form"' in page
    )
    assert "suspended" in page
    response = client.post(url, {"response": "Here", "files": [upload("w2.txt", b"wages", "text/plain")]})
    assert (
        response.status_code == 400
        and "is not accepted: send a PDF, PNG or JPEG file" in response.content.decode()
    )
    response = client.post(url, {"response": " "})
    assert (
        response.status_code == 400
        and "Write the information requested or attach it." in response.content.decode()
    )
    assert _client(bob.user).post(url, {"response": "Mine"}).status_code == 404
    assert not ClaimDocument.objects.exists() and information_request_pending(claim=claim) is not None
    response = client.post(url, {"response": "My W-2 is attached.", "files": [upload("w2.pdf")]})
    assert response.status_code == 302
    claim.refresh_from_db()
    assert claim.extensions.get().days_tolled == 10
    assert claim.decision_due_on == claim.received_on + dt.timedelta(days=190)
    page = client.get(detail).content.decode()
    assert 'id="information-form"' not in page and "you sent it on" in page and "w2.pdf" in page
