"""Celery tasks of the elections: load by key, call one service."""

from __future__ import annotations

from celery import shared_task
from django.apps import apps
from django.utils import timezone

from elections import services

ACTOR = "elections worker"


@shared_task(name="elections.render_confirmation", acks_late=True, reject_on_worker_lost=True)
def election_confirmation_task(model_label: str, pk: int) -> dict:
    """Render (or find again: same bytes, same document) the confirmation PDF of an accepted election and send
    it to the participant (once: a retry finds the notice already sent)."""
    election = (
        apps.get_model(model_label)
        .objects.select_related("participation__person", "participation__plan")
        .get(pk=pk)
    )
    document = services.election_confirmation_send(election=election, actor=ACTOR, now=timezone.now())
    return {"document": document.pk, "sha256": document.sha256}


@shared_task(name="elections.send_reminders", acks_late=True, reject_on_worker_lost=True)
def send_reminders_task() -> dict:
    """Daily: window-opening notices and reminders to those who have not elected."""
    now = timezone.now()
    return services.election_reminders_send(today=timezone.localdate(now), actor=ACTOR, now=now)
