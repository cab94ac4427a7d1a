"""Days left before a claims deadline, and the colour the staff queue gives it."""

from __future__ import annotations

import datetime as dt

from django import template
from django.contrib.auth import get_user_model

from claims.selectors import WARN_DAYS

register = template.Library()


@register.filter
def days_left(deadline, today: dt.date) -> int | None:
    if deadline is None or today is None or deadline.due_on is None:  # no due date while tolled
        return None
    return (deadline.due_on - today).days


@register.filter
def urgency(days: int | None) -> str:
    """A badge class: red when past, amber within WARN_DAYS (the daily job emails the reviewer then too)."""
    if days is None:
        return ""
    if days < 0:
        return "denied"
    if days <= WARN_DAYS:
        return "warning"
    return "pending"


# The claim file's log in words (issue 11): each step as the claimant reads it.
STEP_WORDS = {
    "filed": "Claim received",
    "assigned": "Reviewer assigned",
    "review_started": "Review of the claim started",
    "extended": "Time to decide extended",
    "information_received": "Information received from the claimant",
    "approved": "Claim approved",
    "denied": "Claim denied",
    "document_added": "Document added to the claim",
    "representative_verified": "Authorized representative verified",
    "representative_refused": "Authorized representative refused",
    "appeal_filed": "Appeal received",
    "appeal_review_started": "Review of the appeal started",
    "appeal_extended": "Time to decide the appeal extended",
    "appeal_decided": "Appeal decided",
    "abandoned": "Claim abandoned: no appeal in time",
    "closed": "Claim closed",
    "claim_file_requested": "Claim file requested",
    "claim_file_furnished": "Claim file furnished",
}


@register.filter
def step_words(action: str) -> str:
    return STEP_WORDS.get(action, action.replace("_", " ").replace(".", " ").capitalize())


@register.simple_tag
def label_words(label: str, claim) -> str:
    """A recorded actor label ("filed by", "requested by") in words, never a user name."""
    return actor_words(None, label, claim)


@register.simple_tag
def actor_words(user, label: str, claim) -> str:
    """Who took a step, by name or role, never a user name (the claimant reads the claim file)."""
    if user is None:
        user = (
            get_user_model().objects.filter(username=label).select_related("person").first()
            if label
            else None
        )
    if user is None:
        return (
            label if " " in label else "the plan's systems"
        )  # "deadline job" says itself; "system" does not
    person = getattr(user, "person", None)
    if claim is not None and person is not None and person.pk == claim.claimant_id:
        return f"{claim.claimant_name} (claimant)"
    if person is not None:
        return person.full_name
    return user.get_full_name() or "the Committee's staff"
