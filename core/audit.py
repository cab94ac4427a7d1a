from __future__ import annotations

import datetime as dt

from django.db import models

from core.models import AuditEvent


def actor_label(actor) -> str:
    if actor is None:
        return "system"
    if isinstance(actor, str):
        return actor
    return actor.get_username()


def audit_record(
    *,
    action: str,
    actor,
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
