"""Updating many rows with different values in one statement per chunk, with their history rows.

Django's bulk_update writes one CASE per field and row, which is slow for thousands of rows; on
PostgreSQL this writes `UPDATE ... FROM (VALUES ...)` instead. The history (simple-history) gets one
row per object, as bulk_update_with_history would.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models
from simple_history.utils import bulk_update_with_history

CHUNK = 1000


def bulk_update_fast(*, objs: Sequence[models.Model], model: type[models.Model], fields: list[str]) -> None:
    if not objs:
        return
    if connection.vendor != "postgresql":
        bulk_update_with_history(objs, model, fields, batch_size=CHUNK)
        return
    meta = model._meta
    columns: list[models.Field] = []
    for name in fields:
        column = meta.get_field(name)
        if not isinstance(column, models.Field):  # a reverse relation has no column to update
            raise ValueError(f"{name} is not a column of {meta.label}")
        columns.append(column)
    table = meta.db_table
    sets = ", ".join(f'"{c.column}" = v."{c.column}"' for c in columns)
    casts = [c.db_type(connection) for c in columns]
    with connection.cursor() as cursor:
        for i in range(0, len(objs), CHUNK):
            chunk = objs[i : i + CHUNK]
            row = "(" + ", ".join(["%s::bigint"] + [f"%s::{t}" for t in casts]) + ")"
            values = ", ".join([row] * len(chunk))
            params: list = []
            for obj in chunk:
                params.append(obj.pk)
                for c in columns:
                    params.append(c.get_db_prep_save(getattr(obj, c.attname), connection))
            names = ", ".join(['"id"'] + [f'"{c.column}"' for c in columns])
            cursor.execute(
                f'UPDATE "{table}" AS t SET {sets} FROM (VALUES {values}) AS v({names}) WHERE t.id = v.id',
                params,
            )
    model.history.bulk_history_create(objs, update=True)  # type: ignore[attr-defined]  # django-simple-history adds `history` to each registered model
