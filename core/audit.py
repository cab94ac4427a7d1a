from __future__ import annotations

import datetime as dt
from typing import TypeAlias

from django.contrib.auth.models import User
from django.db import models

from core.models import AuditEvent

# Who acts: a signed-in user, the name of a job or process ("crediting job", "system"), or None (the system).
Actor: TypeAlias = User | str | None


def actor_label(actor: Actor) -> str:
    if actor is None:
        return "system"
    if isinstance(actor, str):
        return actor
    return actor.get_username()


def audit_record(
    *,
    action: str,
    actor: Actor,
    at: dt.datetime,
    obj: models.Model | None = None,
    reason: str = "",
    data: dict | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        at=at,
        actor=None if actor is None or isinstance(actor, str) else actor,
        actor_label=actor_label(actor),
        action=action,
        object_type=obj._meta.label if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        reason=reason,
        data=data or {},
    )
