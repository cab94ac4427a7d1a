"""The statements in the portal (the participant's own) and on the staff side (any participant's)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from core.decorators import capability_required, participant_required
from core.roles import Cap
from participants.models import Person
from statements.selectors import statements_of


@participant_required
def portal_list(request):
    person = request.user.person
    return render(request, "statements/portal_list.html", {"statements": statements_of(person=person)})


@capability_required(Cap.VIEW_STAFF)
def staff_participant(request, pk: int):
    person = get_object_or_404(Person, pk=pk)
    return render(
        request,
        "statements/staff_participant.html",
        {"person": person, "statements": statements_of(person=person)},
    )


staff_participant.access_model = Person
