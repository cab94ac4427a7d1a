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
from core.roles import Cap, has_cap
from participants.models import Beneficiary, Participation
from participants.selectors import beneficiaries_in_force
from participants.services import ParticipantError, beneficiaries_designate
from participants.validators import RELATIONSHIP_LABELS, RELATIONSHIPS, DesignationCheck, designation_check
from plans.selectors import beneficiary_definition

ROWS = 6
FIELDS = ("tier", "name", "relationship", "birth_date", "percent")


def _in_force_rows(current) -> list[dict]:
    """The designation in force as the form's rows (issue 11: the form starts from what is in force)."""
    if current is None:
        return []
    return [
        {
            "tier": b.tier,
            "name": b.name,
            "relationship": b.relationship,
            "birth_date": f"{b.birth_date:%Y-%m-%d}" if b.birth_date else "",
            "percent": str(b.percent),
        }
        for b in current.beneficiaries.all()
    ]


def _form_rows(rows: list[dict], errors: dict[str, list[str]]) -> list[dict]:
    blank = {
        "tier": "contingent" if rows else "primary",
        "name": "",
        "relationship": "",
        "birth_date": "",
        "percent": "",
    }
    padded = [*rows, *[dict(blank) for _ in range(ROWS - len(rows))]][:ROWS]
    out = []
    for i, r in enumerate(padded, start=1):
        row = {**r, "i": i, "errors": {f: errors.get(f"{f}_{i}", []) for f in FIELDS}}
        row["total_error"] = bool(errors.get(f"total_{r['tier']}")) and r.get("percent", "") != ""
        row["legacy_relationship"] = r["relationship"] not in RELATIONSHIP_LABELS and r["relationship"]
        out.append(row)
    return out


def _context(
    participation: Participation,
    rows: list[dict] | None = None,
    errors: dict[str, list[str]] | None = None,
    error: str = "",
) -> dict:
    current = beneficiaries_in_force(person=participation.person, plan=participation.plan)
    errors = errors or {}
    married = participation.person.marital_status == participation.person.MaritalStatus.MARRIED
    return {
        "participation": participation,
        "plan": participation.plan,
        "person": participation.person,
        "current": current,
        "rows": _form_rows(_in_force_rows(current) if rows is None else rows, errors),
        "tiers": Beneficiary.Tier.choices,
        "relationships": RELATIONSHIPS,
        "errors": errors,
        "error_count": sum(len(v) for v in errors.values()),
        "general_errors": errors.get("__all__", []),
        "total_errors": [
            (tier, errors[f"total_{tier}"])
            for tier, _l in Beneficiary.Tier.choices
            if f"total_{tier}" in errors
        ],
        "error": error,
        "married": married,
        "definition": beneficiary_definition(plan=participation.plan, as_of=timezone.localdate()),
    }


def _typed(check: DesignationCheck) -> list[dict]:
    """The rows typed, blank ones dropped (kept in order so the form reads as it was filled)."""
    return [
        {f: r[f] for f in FIELDS}
        for r in check.typed
        if r["name"] or r["percent"] or r["relationship"] or r["birth_date"]
    ]


def _check(request) -> DesignationCheck:
    return designation_check(data=request.POST, rows=ROWS, as_of=timezone.localdate())


def _record(request, participation: Participation, check: DesignationCheck, template: str):
    """Store the designation the form checked; a refusal of the service shows the form again, nothing stored."""
    try:
        beneficiaries_designate(
            person=participation.person,
            plan=participation.plan,
            beneficiaries=check.rows,
            actor=request.user,
            now=timezone.now(),
        )
    except ParticipantError as exc:
        return render(request, template, _context(participation, _typed(check), error=str(exc)), status=422)
    messages.success(request, "Your beneficiary designation is recorded; it replaces any earlier one.")
    return redirect(request.path)


def _review(participation: Participation, check: DesignationCheck) -> dict:
    """Old against new: the designation in force and the one about to be filed, by tier."""
    current = beneficiaries_in_force(person=participation.person, plan=participation.plan)
    new = [
        {**r, "relationship_label": RELATIONSHIP_LABELS.get(r["relationship"], r["relationship"])}
        for r in check.rows
    ]
    old = (
        [
            {
                "tier": b.tier,
                "name": b.name,
                "relationship_label": RELATIONSHIP_LABELS.get(b.relationship, b.relationship),
                "birth_date": b.birth_date,
                "percent": b.percent,
            }
            for b in current.beneficiaries.all()
        ]
        if current
        else []
    )
    tiers = [
        (label, [r for r in old if r["tier"] == tier], [r for r in new if r["tier"] == tier])
        for tier, label in Beneficiary.Tier.choices
    ]
    hidden = [(f"{f}_{n}", r[f]) for n, r in enumerate(_typed(check), start=1) for f in FIELDS if r[f] != ""]
    return {
        "plan": participation.plan,
        "current": current,
        "tiers": [(label, o, n) for label, o, n in tiers if o or n],
        "hidden": hidden,
        "definition": beneficiary_definition(plan=participation.plan, as_of=timezone.localdate()),
    }


@participant_required
def portal_beneficiaries(request, plan_code: str):
    """The designation form prefilled with the one in force; every problem at once beside its field; then a
    review page (old against new) with "Change it" and "Submit" (issue 11, as the deferral election)."""
    participation = get_object_or_404(
        Participation.objects.select_related("plan", "person"),
        person=request.user.person,
        plan__code=plan_code,
    )
    template = "participants/beneficiaries_portal.html"
    if request.method != "POST":
        return render(request, template, _context(participation))
    action = request.POST.get("action", "review")
    check = _check(request)
    if action == "edit":
        return render(request, template, _context(participation, _typed(check)))
    if not check.ok:
        return render(request, template, _context(participation, _typed(check), check.errors), status=400)
    if action == "submit":
        return _record(request, participation, check, template)
    return render(request, "participants/beneficiaries_review.html", _review(participation, check))


@capability_required(Cap.VIEW_STAFF)
def staff_beneficiaries(request, pk: int):
    participation = get_object_or_404(Participation.objects.select_related("plan", "person"), pk=pk)
    template = "participants/beneficiaries_staff.html"
    if request.method == "POST":
        if not has_cap(request.user, Cap.RECORD_EVENTS):
            raise PermissionDenied("recording a paper designation needs the record_events capability")
        check = _check(request)
        if not check.ok:
            return render(request, template, _context(participation, _typed(check), check.errors), status=400)
        return _record(request, participation, check, template)
    return render(request, template, _context(participation))


staff_beneficiaries.access_model = Participation  # tests/test_access.py: the URL's pk is a Participation
