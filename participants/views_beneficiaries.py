"""Beneficiary designations: the participant's own page in the portal and the staff page (a paper designation).

URL lines for participants/urls.py (owned by the participants engineer):

    from participants import views_beneficiaries
    portal_urlpatterns += [path("beneficiaries/<str:plan_code>/", views_beneficiaries.portal_beneficiaries,
                                name="beneficiaries")]
    staff_urlpatterns += [path("participations/<int:pk>/beneficiaries/", views_beneficiaries.staff_beneficiaries,
                               name="beneficiaries")]
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from core.decorators import capability_required, participant_required
from core.inputs import int_or_none
from core.roles import Cap, has_cap
from participants.models import Beneficiary, Participation
from participants.selectors import beneficiaries_in_force
from participants.services import ParticipantError, beneficiaries_designate
from plans.selectors import beneficiary_definition

ROWS = 6


def _rows_from(data) -> list[dict]:
    rows = []
    for i in range(1, ROWS + 1):
        name = (data.get(f"name_{i}") or "").strip()
        percent = (data.get(f"percent_{i}") or "").strip()
        if not name and not percent:
            continue
        whole = int_or_none(percent)
        value: object = percent if whole is None else whole
        rows.append(
            {
                "tier": data.get(f"tier_{i}") or "primary",
                "name": name,
                "relationship": (data.get(f"relationship_{i}") or "").strip()[:60],
                "percent": value,
            }
        )
    return rows


def _context(participation: Participation, rows: list[dict] | None = None, error: str = "") -> dict:
    current = beneficiaries_in_force(person=participation.person, plan=participation.plan)
    if rows is None:
        rows = (
            [
                {"tier": b.tier, "name": b.name, "relationship": b.relationship, "percent": b.percent}
                for b in current.beneficiaries.all()
            ]
            if current
            else []
        )
    padded = rows + [
        {"tier": "primary" if not rows else "contingent", "name": "", "relationship": "", "percent": ""}
        for _ in range(ROWS - len(rows))
    ]
    married = participation.person.marital_status == participation.person.MaritalStatus.MARRIED
    return {
        "participation": participation,
        "plan": participation.plan,
        "person": participation.person,
        "current": current,
        "rows": [{"i": i, **r} for i, r in enumerate(padded[:ROWS], start=1)],
        "tiers": Beneficiary.Tier.choices,
        "error": error,
        "married": married,
        "definition": beneficiary_definition(plan=participation.plan, as_of=timezone.localdate()),
    }


def _designate(request, participation: Participation, template: str, redirect_to):
    rows = _rows_from(request.POST)
    try:
        beneficiaries_designate(
            person=participation.person,
            plan=participation.plan,
            beneficiaries=rows,
            actor=request.user,
            now=timezone.now(),
        )
    except ParticipantError as exc:
        return render(request, template, _context(participation, rows, str(exc)), status=422)
    messages.success(request, "Your beneficiary designation is recorded; it replaces any earlier one.")
    return redirect_to


@participant_required
def portal_beneficiaries(request, plan_code: str):
    participation = get_object_or_404(
        Participation.objects.select_related("plan", "person"),
        person=request.user.person,
        plan__code=plan_code,
    )
    template = "participants/beneficiaries_portal.html"
    if request.method == "POST":
        return _designate(request, participation, template, redirect(request.path))
    return render(request, template, _context(participation))


@capability_required(Cap.VIEW_STAFF)
def staff_beneficiaries(request, pk: int):
    participation = get_object_or_404(Participation.objects.select_related("plan", "person"), pk=pk)
    template = "participants/beneficiaries_staff.html"
    if request.method == "POST":
        if not has_cap(request.user, Cap.RECORD_EVENTS):
            raise PermissionDenied("recording a paper designation needs the record_events capability")
        return _designate(request, participation, template, redirect(request.path))
    return render(request, template, _context(participation))


staff_beneficiaries.access_model = Participation  # tests/test_access.py: the URL's pk is a Participation
