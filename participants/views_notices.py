"""Portal pages of the notices a participant receives: their own history, and their delivery choice (electronic
with consent, or paper) made in two steps, a form and a review (core.notices)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone

from core import notices
from core.decorators import participant_required
from participants.forms import DeliveryForm


def _client(request) -> tuple[str | None, str]:
    return request.META.get("REMOTE_ADDR") or None, request.META.get("HTTP_USER_AGENT", "")[:300]


@participant_required
def portal_notices(request):
    person = request.user.person
    return render(
        request,
        "participants/portal_notices.html",
        {
            "person": person,
            "choice": notices.delivery_in_force(person=person),
            "electronic": notices.delivers_electronically(person=person),
            "notices": notices.notices_labelled(person=person),
        },
    )


@participant_required
def portal_delivery(request):
    """Step 1 (GET, or POST without `confirm`): the form; step 2: the review; `confirm` records the choice."""
    person = request.user.person
    context = {"person": person, "consent_text": notices.consent_text(), "version": notices.CONSENT_VERSION}
    if request.method != "POST":
        choice = notices.delivery_in_force(person=person)
        form = DeliveryForm(
            initial={
                "delivery": choice.delivery if choice else "paper",
                "consent_version": notices.CONSENT_VERSION,
            }
        )
        return render(request, "participants/portal_delivery.html", {**context, "form": form})
    form = DeliveryForm(request.POST)
    if not form.is_valid():
        return render(request, "participants/portal_delivery.html", {**context, "form": form}, status=400)
    data = form.cleaned_data
    if "confirm" not in request.POST:
        return render(
            request, "participants/portal_delivery_review.html", {**context, "form": form, "data": data}
        )
    ip, agent = _client(request)
    try:
        notices.delivery_choose(
            person=person,
            delivery=data["delivery"],
            consented=bool(data.get("consent")),
            consent_version=data["consent_version"],
            actor=request.user,
            as_of=timezone.now(),
            ip_address=ip,
            user_agent=agent,
        )
    except notices.NoticeError as exc:
        form.add_error(None, str(exc))
        return render(request, "participants/portal_delivery.html", {**context, "form": form}, status=400)
    messages.success(
        request,
        "From now on you receive notices by email."
        if data["delivery"] == "electronic"
        else "From now on you receive notices on paper.",
    )
    return redirect("participants_portal:notices")
