"""Links from an audit event to the staff page of its object, and the events about one participant.

Core imports no app above it: the staff pages of each model are found by walking the URL patterns (a
staff page `…/<int:pk>/` whose view declares `access_model`), and the models by their label.
"""

from __future__ import annotations

import functools

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import connection
from django.db.models import Q, QuerySet
from django.urls import URLPattern, URLResolver, get_resolver, reverse

# Staff pages whose view declares no access_model (checked by tests/core/test_audit_log.py).
EXTRA_PAGES = {
    "claims.Claim": "claims_staff:detail",
    "payments.PaymentRun": "payments_staff:run",
    "core.Document": "document_download",
}
# How a model reaches the person it is about, tried in order (the first field path the model has).
PERSON_PATHS = ("person", "participation__person", "participant", "election__participation__person")


def _walk(patterns, prefix: str, namespace: str, found: dict[str, str]) -> None:
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(n for n in (namespace, p.namespace or "") if n)
            _walk(p.url_patterns, prefix + str(p.pattern), ns, found)
        elif isinstance(p, URLPattern) and p.name:
            route = prefix + str(p.pattern)
            model = getattr(p.callback, "access_model", None)
            if model is not None and route.startswith("staff/") and route.endswith("<int:pk>/"):
                if route.count("<") == 1:
                    found.setdefault(model._meta.label, f"{namespace}:{p.name}" if namespace else p.name)


@functools.cache
def _pages() -> dict[str, str]:
    found: dict[str, str] = {}
    _walk(get_resolver().url_patterns, "", "", found)
    return {**found, **EXTRA_PAGES}


def object_url(object_type: str, object_id: str) -> str:
    """The staff page of the object an event is about, or "" when it has none."""
    name = _pages().get(object_type)
    if not name or not object_id.isdigit():
        return ""
    return reverse(name, args=[int(object_id)])


def _person_path(model) -> str | None:
    for path in PERSON_PATHS:
        try:
            opts = model._meta
            for part in path.split("__"):
                field = opts.get_field(part)
                if field.related_model is None:
                    raise FieldDoesNotExist(part)
                opts = field.related_model._meta
        except FieldDoesNotExist:
            continue
        if opts.label == "participants.Person":
            return path
    return None


def events_about_person(events: QuerySet, *, person_pk: int) -> QuerySet:
    """The events whose object is the person or one of their records (participations, elections, claims,
    payments, documents...): every model that names the events' object types and reaches a person."""
    condition = Q(object_type="participants.Person", object_id=str(person_pk))
    for label in events.order_by().values_list("object_type", flat=True).distinct():
        if not label or label == "participants.Person":
            continue
        try:
            model = apps.get_model(label)
        except (LookupError, ValueError):
            continue
        path = _person_path(model)
        if path is None:
            continue
        pks = model._default_manager.filter(**{path: person_pk}).values_list("pk", flat=True)
        condition |= Q(object_type=label, object_id__in=[str(pk) for pk in pks])
    return events.filter(condition)


def person_by_number(number: str):
    """The participant with this employee number, or None (the model by its label: core imports no app)."""
    return apps.get_model("participants", "Person").objects.filter(employee_number=number).first()


# Each distinct action read from the (action) index one step at a time: a few index probes per action instead of
# reading every event ever recorded (1,000,000 events: 2 ms instead of 200 ms).
_ACTIONS_SQL = """
WITH RECURSIVE a(action) AS (
    (SELECT action FROM core_auditevent ORDER BY action LIMIT 1)
    UNION ALL
    SELECT (SELECT e.action FROM core_auditevent e WHERE e.action > a.action ORDER BY e.action LIMIT 1)
    FROM a WHERE a.action IS NOT NULL
)
SELECT action FROM a WHERE action IS NOT NULL
"""


def audit_actions() -> list[str]:
    """Every action the audit log holds, in order (the audit log's filter)."""
    if connection.vendor != "postgresql":  # SQLite (make run): its compound selects take no LIMIT per part
        events = apps.get_model("core", "AuditEvent").objects
        return list(events.order_by("action").values_list("action", flat=True).distinct())
    with connection.cursor() as cursor:
        cursor.execute(_ACTIONS_SQL)
        return [row[0] for row in cursor.fetchall()]
