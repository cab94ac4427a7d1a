"""Portal menu helpers of the payments app."""

from __future__ import annotations

from django import template
from django.utils import timezone

from payments import selectors

register = template.Library()


@register.simple_tag
def offers_emergency(user) -> bool:
    """Issue 11: "Emergency payment" only for a person in a plan that pays unforeseeable emergencies (EDCP 5.6),
    or who has a request on file to follow."""
    person = getattr(user, "person", None)
    if person is None:
        return False
    return bool(
        selectors.emergency_participations(person=person, on=timezone.localdate())
        or selectors.person_emergencies(person=person).exists()
    )
