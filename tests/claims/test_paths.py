"""The three paths of a claim, walked with explicit moments, each deadline checked at its boundary.

Dates used (claim received Friday January 10, 2025 = day 0):
  initial decision / last extension notice  day 90 = April 10, 2025; day 91 = April 11
  extended decision                         day 180 = July 9, 2025; day 181 = July 10
  denial posted to the portal March 3       appeal by May 2 (day 60); May 3 = day 61: abandoned
  denial mailed March 3 (received March 8)  appeal by May 7; May 8 = day 61
  appeal received April 1                   review by May 31 (day 60), extension notice by May 31;
                                            extended review by July 30 (day 120); July 31 = day 121
  decision on review July 30, 2025          legal action until July 30, 2026
"""

from __future__ import annotations

import datetime as dt

import pytest

from claims.models import Claim, ClaimAppeal, ClaimDecision, ClaimExtension, ClaimTransition, State
from claims.selectors import late_decisions
from claims.services import (
    ClaimRefused,
    appeal_decide,
    appeal_extend,
    appeal_file,
    appeal_start_review,
    claim_approve,
    claim_assign,
    claim_close,
    claim_extend,
    claim_start_review,
    claims_flag_deadlines,
)
from tests.claims.factories import at, deny, file_claim, section

pytestmark = pytest.mark.django_db


@pytest.fixture
def claim(alice):
    return file_claim(alice, now=at(2025, 1, 10, 9))


def _approve(claim, now, actor):
    return claim_approve(
        claim=claim,
        reasons="The contribution was omitted by mistake.",
        approved_benefit="Credit of the 2024 company contribution of $4,100.00.",
        now=now,
        actor=actor,
    )


# --- approved -----------------------------------------------------------------------------------------
def test_an_approved_claim_is_decided_by_day_90_and_closed(claim, admin_user):
    assert (claim.state, claim.received_on, claim.decision_due_on) == (
        State.RECEIVED,
        dt.date(2025, 1, 10),
        dt.date(2025, 4, 10),
    )
    assert (claim.next_deadline_on, claim.next_deadline_kind) == (dt.date(2025, 4, 10), "decision")
    claim_assign(claim=claim, reviewer=admin_user, now=at(2025, 1, 13), actor=admin_user)
    claim_start_review(claim=claim, now=at(2025, 1, 13), actor=admin_user)
    # 9 pm Eastern on day 90 is already day 91 in UTC: still on time.
    decision = _approve(claim, at(2025, 4, 10, 21), admin_user)
    claim.refresh_from_db()
    assert (claim.state, decision.late, decision.days_taken, decision.due_on) == (
        State.APPROVED,
        False,
        90,
        dt.date(2025, 4, 10),
    )
    assert claim.next_deadline_on is None
    assert decision.notice.kind == "claim_approval" and decision.notice.person == claim.claimant
    claim_close(claim=claim, reason="Credit posted.", now=at(2025, 4, 20), actor=admin_user)
    claim.refresh_from_db()
    assert claim.state == State.CLOSED
    moves = [(t.from_state, t.to_state) for t in claim.transitions.all() if t.from_state != t.to_state]
    assert moves == [
        ("", "received"),
        ("received", "under_review"),
        ("under_review", "approved"),
        ("approved", "closed"),
    ]
    assert claim.history.count() >= 4


def test_a_decision_on_day_91_is_recorded_as_late(claim, admin_user):
    decision = _approve(claim, at(2025, 4, 11, 0, 5), admin_user)
    assert (decision.late, decision.days_late, decision.days_taken) == (True, 1, 91)
    assert list(late_decisions()) == [decision]


# --- denied, not appealed, abandoned on day 61 ----------------------------------------------------------
def test_a_denied_claim_not_appealed_is_abandoned_on_day_61(claim, admin_user):
    decision = deny(claim, now=at(2025, 3, 3, 10), actor=admin_user)
    claim.refresh_from_db()
    assert (claim.state, decision.claimant_receives_on, claim.appeal_due_on) == (
        State.DENIED,
        dt.date(2025, 3, 3),
        dt.date(2025, 5, 2),
    )
    assert (claim.next_deadline_on, claim.next_deadline_kind) == (dt.date(2025, 5, 2), "appeal")

    claims_flag_deadlines(now=at(2025, 5, 2, 23, 59))  # day 60: the window is still open
    claim.refresh_from_db()
    assert claim.state == State.DENIED

    stats = claims_flag_deadlines(now=at(2025, 5, 3, 0, 1))  # day 61
    claim.refresh_from_db()
    assert (claim.state, stats["abandoned"]) == (State.ABANDONED, 1)
    last = claim.transitions.last()
    assert (last.action, last.actor_label) == ("abandoned", "system") and "EDCP 11.3" in last.reason
    assert claims_flag_deadlines(now=at(2025, 5, 4))["abandoned"] == 0

    with pytest.raises(ClaimRefused, match="abandoned: it may not be reasserted"):
        appeal_file(claim=claim, issues="Too late", now=at(2025, 5, 4), actor="alice")
    with pytest.raises(ClaimRefused, match=r"precluded from reasserting it \(EDCP 11.3\)"):
        file_claim(claim.claimant, now=at(2025, 6, 1))


def test_an_appeal_on_day_60_is_received(claim, admin_user, alice):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal = appeal_file(
        claim=claim,
        issues="The contribution is missing from my statement.",
        now=at(2025, 5, 2, 23, 59),
        actor=alice.user,
        filed_by=alice,
    )
    claim.refresh_from_db()
    assert (claim.state, appeal.received_on) == (State.APPEAL_RECEIVED, dt.date(2025, 5, 2))


def test_an_appeal_on_day_61_is_refused_and_the_claim_is_abandoned(claim, admin_user, alice):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    with pytest.raises(
        ClaimRefused, match=r"appeal window closed on May 2, 2025 .* abandoned .* \(EDCP 11.3\)"
    ):
        appeal_file(claim=claim, issues="Late", now=at(2025, 5, 3, 8), actor=alice.user, filed_by=alice)
    claim.refresh_from_db()
    assert claim.state == State.ABANDONED
    assert not ClaimAppeal.objects.exists()
    assert "A notice of appeal received May 3, 2025 came after the window" in claim.transitions.last().reason


def test_a_mailed_denial_is_received_five_days_after_its_date(alice, bob, admin_user):
    on_time = file_claim(alice, now=at(2025, 1, 10), delivery="mail")
    too_late = file_claim(bob, now=at(2025, 1, 10), delivery="mail")
    for c in (on_time, too_late):
        decision = deny(c, now=at(2025, 3, 3), actor=admin_user)
        assert decision.claimant_receives_on == dt.date(2025, 3, 8)
    on_time.refresh_from_db()
    assert on_time.appeal_due_on == dt.date(2025, 5, 7)
    appeal_file(claim=on_time, issues="Issues", now=at(2025, 5, 7, 17), actor="alice")
    with pytest.raises(ClaimRefused, match="closed on May 7, 2025"):
        appeal_file(claim=too_late, issues="Issues", now=at(2025, 5, 8, 9), actor="bob")


# --- denied, appealed, extended, decided -----------------------------------------------------------------
def test_a_denied_claim_is_appealed_extended_and_decided_on_review(claim, alice, admin_user, committee_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(
        claim=claim,
        issues="The contribution is missing.",
        evidence="My 2024 statement.",
        now=at(2025, 4, 1, 10),
        actor=alice.user,
        filed_by=alice,
    )
    claim.refresh_from_db()
    assert (claim.state, claim.review_due_on, claim.next_deadline_kind) == (
        State.APPEAL_RECEIVED,
        dt.date(2025, 5, 31),
        "review",
    )
    appeal_start_review(claim=claim, now=at(2025, 4, 2), actor=committee_user)
    extension = appeal_extend(
        claim=claim,
        special_circumstances="The Committee meets quarterly.",
        expected_on=dt.date(2025, 7, 15),
        now=at(2025, 5, 31, 22),
        actor=committee_user,
    )
    claim.refresh_from_db()
    assert (claim.state, claim.review_due_on, extension.issued_on) == (
        State.APPEAL_EXTENDED,
        dt.date(2025, 7, 30),
        dt.date(2025, 5, 31),
    )
    decision = appeal_decide(
        claim=claim,
        outcome="denied",
        reasons="The records show the credit was made.",
        provisions=[section("EDCP", "4.1"), section("EDCP", "4.2")],
        now=at(2025, 7, 30, 20),
        actor=committee_user,
    )
    claim.refresh_from_db()
    assert (claim.state, decision.late, decision.days_taken) == (State.APPEAL_DENIED, False, 120)
    assert claim.legal_action_until == dt.date(2026, 7, 30)
    assert claim.next_deadline_on is None
    moves = [(t.from_state, t.to_state) for t in claim.transitions.all() if t.from_state != t.to_state]
    assert moves == [
        ("", "received"),
        ("received", "denied"),
        ("denied", "appeal_received"),
        ("appeal_received", "appeal_under_review"),
        ("appeal_under_review", "appeal_extended"),
        ("appeal_extended", "appeal_denied"),
    ]


def _appealed(claim, alice, admin_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor=alice.user, filed_by=alice)
    claim.refresh_from_db()
    return claim


def test_a_review_extension_on_day_61_is_refused_and_nothing_changes(
    claim, alice, admin_user, committee_user
):
    claim = _appealed(claim, alice, admin_user)
    count = ClaimTransition.objects.count()
    with pytest.raises(ClaimRefused, match=r"period ended on May 31, 2025.*too late.*EDCP 11.4"):
        appeal_extend(
            claim=claim,
            special_circumstances="More time",
            expected_on=dt.date(2025, 7, 1),
            now=at(2025, 6, 1, 0, 1),
            actor=committee_user,
        )
    claim.refresh_from_db()
    assert (claim.state, claim.review_due_on) == (State.APPEAL_RECEIVED, dt.date(2025, 5, 31))
    assert ClaimTransition.objects.count() == count and not ClaimExtension.objects.exists()


def test_a_decision_on_review_on_day_121_is_late(claim, alice, admin_user, committee_user):
    claim = _appealed(claim, alice, admin_user)
    appeal_extend(
        claim=claim,
        special_circumstances="More time",
        expected_on=dt.date(2025, 7, 30),
        now=at(2025, 5, 20),
        actor=committee_user,
    )
    decision = appeal_decide(
        claim=claim,
        outcome="approved",
        reasons="On review the credit is missing.",
        approved_benefit="Credit of $4,100.00.",
        now=at(2025, 7, 31, 9),
        actor=committee_user,
    )
    assert (decision.late, decision.days_taken, decision.due_on) == (True, 121, dt.date(2025, 7, 30))
    claim.refresh_from_db()
    assert claim.state == State.APPEAL_APPROVED and claim.legal_action_until == dt.date(2026, 7, 31)


def test_a_decision_on_review_on_day_60_without_extension_is_on_time_and_day_61_late(
    alice, bob, admin_user, committee_user
):
    for person, moment, late in ((alice, at(2025, 5, 31, 23, 59), False), (bob, at(2025, 6, 1, 0, 1), True)):
        c = _appealed(file_claim(person, now=at(2025, 1, 10)), person, admin_user)
        decision = appeal_decide(
            claim=c,
            outcome="denied",
            reasons="Reasons",
            provisions=[section("EDCP", "4.1")],
            now=moment,
            actor=committee_user,
        )
        assert decision.late is late


# --- initial extension ----------------------------------------------------------------------------------
def test_an_extension_sent_on_day_90_moves_the_decision_to_day_180(claim, admin_user):
    extension = claim_extend(
        claim=claim,
        special_circumstances="We need the payroll records for 2024.",
        expected_on=dt.date(2025, 6, 30),
        now=at(2025, 4, 10, 23, 59),
        actor=admin_user,
    )
    claim.refresh_from_db()
    assert (claim.state, claim.decision_due_on, extension.issued_on) == (
        State.EXTENDED,
        dt.date(2025, 7, 9),
        dt.date(2025, 4, 10),
    )
    assert extension.notice.kind == "claim_extension"
    on_time = _approve(claim, at(2025, 7, 9, 23), admin_user)
    assert (on_time.late, on_time.days_taken) == (False, 180)


def test_an_extended_decision_on_day_181_is_late(claim, admin_user):
    claim_extend(
        claim=claim,
        special_circumstances="Records",
        expected_on=dt.date(2025, 7, 9),
        now=at(2025, 2, 1),
        actor=admin_user,
    )
    decision = deny(claim, now=at(2025, 7, 10, 0, 1), actor=admin_user)
    assert (decision.late, decision.days_taken, decision.due_on) == (True, 181, dt.date(2025, 7, 9))


def test_an_extension_after_day_90_is_refused_and_nothing_changes(claim, admin_user):
    with pytest.raises(ClaimRefused, match=r"before the period ended on April 10, 2025.*too late.*EDCP 11.2"):
        claim_extend(
            claim=claim,
            special_circumstances="Records",
            expected_on=dt.date(2025, 6, 1),
            now=at(2025, 4, 11, 0, 0),
            actor=admin_user,
        )
    claim.refresh_from_db()
    assert (claim.state, claim.decision_due_on) == (State.RECEIVED, dt.date(2025, 4, 10))
    assert not ClaimExtension.objects.exists() and claim.transitions.count() == 1


def test_only_one_extension_is_allowed(claim, admin_user):
    claim_extend(
        claim=claim,
        special_circumstances="Records",
        expected_on=dt.date(2025, 6, 1),
        now=at(2025, 2, 1),
        actor=admin_user,
    )
    with pytest.raises(ClaimRefused, match="only one extension is allowed"):
        claim_extend(
            claim=claim,
            special_circumstances="More",
            expected_on=dt.date(2025, 7, 1),
            now=at(2025, 2, 2),
            actor=admin_user,
        )
    assert ClaimExtension.objects.count() == 1


def test_the_expected_date_of_an_extension_cannot_pass_day_180(claim, admin_user):
    with pytest.raises(ClaimRefused, match="July 9, 2025"):
        claim_extend(
            claim=claim,
            special_circumstances="Records",
            expected_on=dt.date(2025, 7, 10),
            now=at(2025, 2, 1),
            actor=admin_user,
        )
    with pytest.raises(ClaimRefused, match="special circumstances"):
        claim_extend(
            claim=claim,
            special_circumstances=" ",
            expected_on=dt.date(2025, 5, 1),
            now=at(2025, 2, 1),
            actor=admin_user,
        )
    assert not ClaimExtension.objects.exists()


def test_a_state_that_does_not_allow_the_action_is_refused(claim, admin_user, committee_user):
    _approve(claim, at(2025, 2, 1), admin_user)
    with pytest.raises(ClaimRefused, match=r"is approved: it cannot be denied now \(EDCP 11.2\)"):
        deny(claim, now=at(2025, 2, 2), actor=admin_user)
    with pytest.raises(ClaimRefused, match="cannot be appealed"):
        appeal_file(claim=claim, issues="x", now=at(2025, 2, 2), actor="alice")
    with pytest.raises(ClaimRefused, match="cannot be decided on review"):
        appeal_decide(
            claim=claim,
            outcome="approved",
            reasons="x",
            approved_benefit="y",
            now=at(2025, 2, 2),
            actor=committee_user,
        )
    assert ClaimDecision.objects.count() == 1
    assert Claim.objects.get().state == State.APPROVED
