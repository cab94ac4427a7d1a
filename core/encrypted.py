"""The model field stored encrypted (core/crypto.py) and the rotation of its keys (`manage.py rotate_field_keys`).

A token is random, so an encrypted field cannot be searched: `EncryptedTextField` refuses every lookup but
`isnull` instead of silently matching nothing.
"""

from __future__ import annotations

import datetime as dt

from django.apps import apps
from django.db import models, transaction

from core.audit import Actor, audit_record
from core.crypto import decrypt, encrypt


class EncryptedTextField(models.TextField):
    """Text stored encrypted (a Fernet token) and read back in clear; "" is stored as "". Not searchable."""

    def from_db_value(self, value, expression, connection):
        return decrypt(value) if value else value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return encrypt(value) if value else value

    def get_lookup(self, lookup_name):
        # A token is random: `exact` and the rest would compare against a fresh token and match nothing.
        return super().get_lookup(lookup_name) if lookup_name == "isnull" else None


def field_keys_rotate(*, actor: Actor, now: dt.datetime, chunk: int = 1000) -> dict[str, int]:
    """Every value stored encrypted, read with whichever key opens it and written again under the first key of
    FIELD_ENCRYPTION_KEYS, in one transaction, with an audit event counting them by field; after it the older
    keys can be removed. Refused whole (UnreadableValue) if any value opens with no key."""
    counts: dict[str, int] = {}
    with transaction.atomic():
        for model, field in encrypted_fields():
            # Chunks by primary key, not a server-side cursor: a refusal part-way must leave no cursor behind.
            # Every row, "" too (it stays ""): the field has no lookup to leave it out with.
            rows = model._default_manager.select_for_update().order_by("pk")
            done, last = 0, None
            while batch := list((rows if last is None else rows.filter(pk__gt=last))[:chunk]):
                done += model._default_manager.bulk_update(batch, [field.name])
                last = batch[-1].pk
            counts[f"{model._meta.label}.{field.name}"] = done
        audit_record(action="field_keys_rotate", actor=actor, at=now, data=counts)
    return counts


def encrypted_fields() -> list[tuple[type[models.Model], EncryptedTextField]]:
    """Every (model, field) stored encrypted, for rotate_field_keys."""
    return [
        (model, field)
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, EncryptedTextField)
    ]
