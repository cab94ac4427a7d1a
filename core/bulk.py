"""Inserting many new rows fast: on PostgreSQL with `COPY`, ids reserved from the table's sequence.

Django's bulk_create prepares every value of every row through the field's conversions and sends one `INSERT`
with all of them as parameters; simple-history's bulk_create_with_history then builds a historical model instance
per row and inserts those the same way. For the hundreds of thousands of rows of a conversion that is most of the
time. Here, on PostgreSQL:

- the ids are reserved first (`nextval` of the table's sequence, one statement per chunk) and set on the objects,
  so they come back saved, with their primary keys, as bulk_create returns them;
- the rows go in by `COPY ... FROM STDIN`, plain Python values (int, str, Decimal, date, aware datetime, bool,
  None) handed to the driver as they are, anything else through the field's own conversion;
- the history rows (`history=True`) are derived in SQL from the rows just written, one `INSERT ... SELECT` per
  chunk: the same columns, history type `+`, the history user and date simple-history would give them.

Other databases (SQLite in tests), and models with database defaults, use bulk_create / bulk_create_with_history. Rows are only ever inserted: the
books' append-only triggers fire on COPY as on INSERT. Whatever the objects carry that simple-history would read one
by one (`_history_user`, `_change_reason`, `_history_date`) sends them through simple-history instead.

`build` makes the new (unsaved) model instances themselves a third as dear as `Model(**values)`: the values are
placed in the order of the model's fields and handed to the model as positional arguments, the path Django takes for
rows read from the database; what is not given gets the field's default, as keyword construction gives it.
`build_like` makes the many rows that differ from a first one in a few fields (the payments of one benefit, the
entries of one batch of positions) by copying that one's values, as Django restores an unpickled instance, without
the model's `__init__`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any, TypeVar

from django.db import connection, models
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

M = TypeVar("M", bound=models.Model)

CHUNK = 10_000
_PLAIN = {int, str, Decimal, dt.date, bool, type(None)}
_PER_OBJECT = ("_history_user", "_change_reason", "_history_date")


_NO_DEFAULT = object()
_LAYOUTS: dict[type[models.Model], list[tuple[str, str, str, Any, Any]]] = {}


def _layout(model: type[models.Model]) -> list[tuple[str, str, str, Any, Any]]:
    """Per concrete field, in the model's order: (name, attname, the related model's field a relation holds or "",
    constant default or _NO_DEFAULT, the field when its default is computed per instance)."""
    layout = _LAYOUTS.get(model)
    if layout is None:
        layout = []
        for f in model._meta.concrete_fields:
            target = f.target_field.attname if isinstance(f, models.ForeignKey) else ""
            if f.has_default() and callable(f.default):
                layout.append((f.name, f.attname, target, _NO_DEFAULT, f))
            else:
                layout.append((f.name, f.attname, target, f.get_default(), None))
        _LAYOUTS[model] = layout
    return layout


def build(model: type[M], /, **values: Any) -> M:
    """A new, unsaved `model(**values)`, built through the positional path. A related object is given by field name
    (`schedule=...`, kept as the cached related object) or its id by attname (`schedule_id=...`); a related object
    not saved yet, or a name that is no field, sends the whole construction by keyword."""
    args = []
    related = []
    given = len(values)
    used = 0
    for name, attname, target, default, computed in _layout(model):
        if target and name in values:
            obj = values[name]
            key = getattr(obj, target) if obj is not None else None
            if obj is not None and key is None:
                return model(**values)  # not saved yet: its id is read when it is written, as Django does
            args.append(key)
            related.append((name, obj))
            used += 1
        elif attname in values:
            args.append(values[attname])
            used += 1
        elif name in values:
            args.append(values[name])
            used += 1
        else:
            args.append(computed.get_default() if computed is not None else default)
    if used != given:
        return model(**values)
    instance = model(*args)
    for name, obj in related:
        model._meta.get_field(name).set_cached_value(instance, obj)  # type: ignore[union-attr]
    return instance


_RELATIONS: dict[type[models.Model], dict[str, tuple[str, str, str]]] = {}


def _relations(model: type[models.Model]) -> dict[str, tuple[str, str, str]]:
    """name or attname of each foreign key -> (name, attname, the related model's field it holds)."""
    found = _RELATIONS.get(model)
    if found is None:
        found = {}
        for f in model._meta.concrete_fields:
            if isinstance(f, models.ForeignKey):
                found[f.name] = found[f.attname] = (f.name, f.attname, f.target_field.attname)
        _RELATIONS[model] = found
    return found


def build_like(template: M, /, **values: Any) -> M:
    """A new, unsaved instance with `template`'s values and `values` over them: a related object by field name (kept
    as the cached related object), anything else by attname. Built without the model's `__init__`, so only for models
    no `pre_init`/`post_init` receiver listens to (checked: otherwise through `build`)."""
    model = type(template)
    relations = _relations(model)
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        fields = {f.attname: template.__dict__[f.attname] for f in model._meta.concrete_fields}
        fields[model._meta.pk.attname] = None
        for name, value in values.items():
            if name in relations and relations[name][0] == name:
                fields.pop(relations[name][1])
            fields[name] = value
        return build(model, **fields)
    state = ModelState()
    state.fields_cache = dict(template._state.fields_cache)
    attrs = dict(template.__dict__)
    attrs["_state"] = state
    attrs[model._meta.pk.attname] = None
    for name, value in values.items():
        relation = relations.get(name)
        if relation is None:
            attrs[name] = value
        elif name == relation[0]:  # the related object
            attrs[relation[1]] = getattr(value, relation[2]) if value is not None else None
            state.fields_cache[name] = value
        else:  # its id: the cached object no longer holds
            attrs[name] = value
            state.fields_cache.pop(relation[0], None)
    instance = model.__new__(model)
    instance.__dict__ = attrs
    return instance


def insert_new(
    *, objs: Sequence[M], model: type[M], history: bool = False, batch_size: int = 2000
) -> list[M]:
    """Insert `objs` (new, unsaved) and return them saved, with their ids, in order; `history`: with a history row
    each, as bulk_create_with_history."""
    objs = list(objs)
    if not objs:
        return objs
    fields = [f for f in model._meta.concrete_fields if not f.generated]
    if (
        connection.vendor != "postgresql"
        or any(f.has_db_default() for f in fields)  # bulk_create leaves those to the database
        or (history and not _history_derivable(model, objs))
    ):
        if history:
            return list(bulk_create_with_history(objs, model, batch_size=batch_size))
        return list(model._default_manager.bulk_create(objs, batch_size=batch_size))
    _prepare(objs=objs, fields=fields)
    _copy(objs=objs, model=model, fields=fields)
    alias = connection.alias
    for o in objs:
        state = o._state
        state.adding = False
        state.db = alias
    if history:
        _history_from_rows(model=model, ids=[o.pk for o in objs], sample=objs[0])
    return objs


def insert_values(
    *, model: type[M], columns: Sequence[str], rows: Sequence[tuple], history: bool = False
) -> list[int]:
    """Insert new rows given as plain tuples of the attnames `columns` (every other field takes its default), as
    `insert_new` would insert the instances: returns their new ids, in order. For the many rows that differ from
    each other in a few values (the payments a take-over records as made), with no model instance built for each
    on PostgreSQL: the tuples go to COPY as they are, so each value must already be what the database takes (int,
    str, Decimal, date, aware datetime, bool, None; `column_values` prepares the constant ones). Elsewhere (and for
    a model whose history is not derivable) through model instances and `insert_new`, with the same result."""
    if not rows:
        return []
    fields = [f for f in model._meta.concrete_fields if not f.generated]
    by_attname = {f.attname: f for f in fields}
    named = [by_attname[c] for c in columns]
    omitted = [f for f in fields if f.attname not in set(columns) and not f.primary_key]
    sample = build(model, **dict(zip(columns, rows[0], strict=True)))
    if (
        connection.vendor != "postgresql"
        or any(f.has_db_default() for f in fields)
        or any(getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) for f in omitted)
        or any(f.has_default() and callable(f.default) for f in omitted)
        or (history and not _history_derivable(model, [sample]))
    ):
        objs = [build(model, **dict(zip(columns, row, strict=True))) for row in rows]
        return [o.pk for o in insert_new(objs=objs, model=model, history=history)]
    pk = model._meta.pk
    assert pk is not None
    rest = tuple(column_values(model=model, values={f.attname: sample.__dict__[f.attname] for f in omitted}))
    names = ", ".join(f'"{f.column}"' for f in [pk, *named, *omitted])
    table = model._meta.db_table
    ids: list[int] = []
    with connection.wrap_database_errors, connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [f'"{table}"', pk.column])
        sequence = cursor.fetchone()[0]
        for start in range(0, len(rows), CHUNK):
            cursor.execute(
                "SELECT nextval(%s) FROM generate_series(1, %s)", [sequence, len(rows[start : start + CHUNK])]
            )
            ids += [new_id for (new_id,) in cursor.fetchall()]
        with cursor.cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
            write = copy.write_row
            for new_id, row in zip(ids, rows, strict=True):
                write((new_id, *row, *rest))
    if history:
        _history_from_rows(model=model, ids=ids, sample=sample)
    return ids


def column_values(*, model: type[models.Model], values: dict[str, Any]) -> list[Any]:
    """`values` (attname -> value) as `insert_values` hands them to COPY, in their order: a choice as its str, a
    JSON value as the driver's JSON, anything not plain through the field's own conversion."""
    fields = {f.attname: f for f in model._meta.concrete_fields}
    out = []
    for name, value in values.items():
        field = fields[name]
        out.append(
            value
            if type(value) in _PLAIN and not isinstance(field, models.JSONField)
            else _converter(field)(value)
        )
    return out


def _prepare(*, objs: list[Any], fields: list[Any]) -> None:
    """What bulk_create does to the objects before writing: auto_now dates, and the ids of related objects saved
    after they were assigned."""
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            for o in objs:
                f.pre_save(o, True)
        if f.is_relation:
            attname = f.attname
            for o in objs:
                if o.__dict__.get(attname) is None:
                    related = f.get_cached_value(o, None)
                    if related is not None:
                        setattr(o, attname, related.pk)


def _copy(*, objs: list[Any], model: type[models.Model], fields: list[Any]) -> None:
    """Reserve the ids of the unsaved objects from the table's sequence, then write every row with COPY."""
    table = model._meta.db_table
    pk = model._meta.pk
    assert pk is not None
    with connection.wrap_database_errors, connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [f'"{table}"', pk.column])
        sequence = cursor.fetchone()[0]
        unsaved = [o for o in objs if o.pk is None]
        for start in range(0, len(unsaved), CHUNK):
            chunk = unsaved[start : start + CHUNK]
            cursor.execute("SELECT nextval(%s) FROM generate_series(1, %s)", [sequence, len(chunk)])
            for o, (new_id,) in zip(chunk, cursor.fetchall(), strict=True):
                setattr(o, pk.attname, new_id)
        converters = [_converter(f) for f in fields]
        # a JSON value that is a str is still converted
        always = [isinstance(f, models.JSONField) for f in fields]
        values_of = itemgetter(*[f.attname for f in fields])
        names = ", ".join(f'"{f.column}"' for f in fields)
        raw = cursor.cursor  # the driver's cursor: Django's wrapper has no COPY
        plain = _PLAIN
        with raw.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
            for o in objs:
                try:
                    values = values_of(o.__dict__) if len(fields) > 1 else (o.__dict__[fields[0].attname],)
                except KeyError:  # a deferred field: through the descriptor
                    values = tuple(getattr(o, f.attname) for f in fields)
                copy.write_row(
                    [
                        v if type(v) in plain and not j else c(v)
                        for v, c, j in zip(values, converters, always, strict=True)
                    ]
                )


def _history_derivable(model: type[models.Model], objs: list[Any]) -> bool:
    """Whether the history rows are the same for every object, so SQL can write them from the rows."""
    historical = model.history.model  # type: ignore[attr-defined]  # django-simple-history adds `history`
    if hasattr(historical, "history_relation"):
        return False
    return not any(hasattr(o, a) for o in objs for a in _PER_OBJECT)


def _converter(field: models.Field) -> Callable[[Any], Any]:
    if isinstance(field, models.JSONField):
        return lambda v: field.get_db_prep_save(v, connection)

    def convert(v: Any) -> Any:
        if type(v) in _PLAIN:
            return v
        if type(v) is dt.datetime and v.tzinfo is not None:
            return v
        if isinstance(v, str):  # a choice (TextChoices member)
            return str(v)
        return field.get_db_prep_save(v, connection)

    return convert


def _history_from_rows(
    *, model: type[models.Model], ids: list[int], sample: models.Model, update: bool = False
) -> None:
    """The history row of each new row, as simple-history writes on creation, derived from the row itself;
    `update`: of each updated row, as simple-history's bulk_history_create(update=True) writes it (type `~`, the
    change reason empty), in the order of `ids`."""
    historical = model.history.model  # type: ignore[attr-defined]  # django-simple-history adds `history`
    tracked = historical.tracked_fields
    to_cols = ", ".join(f'"{_column(historical, f.name)}"' for f in tracked)
    from_cols = ", ".join(f't."{_column(model, f.name)}"' for f in tracked)
    key = _column(model, "pk")
    user = historical.get_default_history_user(sample)
    rows = (
        f'FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(id, n) JOIN "{model._meta.db_table}" t ON t."{key}" = u.id '
        f"ORDER BY u.n"
        if update
        else f'FROM "{model._meta.db_table}" t WHERE t."{key}" = ANY(%s) ORDER BY t."{key}"'
    )
    with connection.cursor() as cursor:
        for start in range(0, len(ids), CHUNK):
            cursor.execute(
                f'INSERT INTO "{historical._meta.db_table}" ({to_cols}, "history_date", "history_change_reason", '
                f'"history_type", "history_user_id") SELECT {from_cols}, %s, %s, %s, %s {rows}',
                [
                    timezone.now(),
                    "" if update else None,
                    "~" if update else "+",
                    user.pk if user is not None else None,
                    ids[start : start + CHUNK],
                ],
            )


def update_existing(*, objs: Sequence[models.Model], model: type[models.Model], fields: list[str]) -> None:
    """Write `fields` of saved objects, with a history row each as simple-history's bulk_update_with_history gives
    them. On PostgreSQL one `UPDATE ... FROM (VALUES ...)` per chunk, the history rows derived in SQL from the rows
    just written (`INSERT ... SELECT`), not built as a historical instance per object; elsewhere (and when the
    objects carry what simple-history reads one by one) through simple-history itself."""
    objs = list(objs)
    if not objs:
        return
    if connection.vendor != "postgresql" or not _history_derivable(model, objs):
        bulk_update_with_history(objs, model, fields, batch_size=1000)
        return
    meta = model._meta
    columns: list[models.Field] = []
    for name in fields:
        column = meta.get_field(name)
        if not isinstance(column, models.Field) or column.column is None:
            raise ValueError(f"{name} is not a column of {meta.label}")
        columns.append(column)
    sets = ", ".join(f'"{c.column}" = v."{c.column}"' for c in columns)
    names = ", ".join(['"id"'] + [f'"{c.column}"' for c in columns])
    types = ["bigint"] + [c.db_type(connection) for c in columns]
    row = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
    arrays = ", ".join(f"%s::{t}[]" for t in types)
    converters = [_converter(c) for c in columns]
    attnames = [c.attname for c in columns]
    step = 1000
    with connection.cursor() as cursor:
        for start in range(0, len(objs), step):
            chunk = objs[start : start + step]
            rows = [
                (o.pk, *[c(getattr(o, a)) for c, a in zip(converters, attnames, strict=True)]) for o in chunk
            ]
            values = [list(col) for col in zip(*rows, strict=True)]
            if all(len({type(v) for v in col if v is not None}) <= 1 for col in values):
                # a column an array: one short statement whatever the rows (the driver cannot dump an array of
                # mixed types, which the VALUES below take)
                cursor.execute(
                    f'UPDATE "{meta.db_table}" AS t SET {sets} FROM unnest({arrays}) AS v({names}) '
                    f'WHERE t."id" = v."id"',
                    values,
                )
                continue
            cursor.execute(
                f'UPDATE "{meta.db_table}" AS t SET {sets} FROM (VALUES {", ".join([row] * len(chunk))}) '
                f'AS v({names}) WHERE t."id" = v."id"',
                [v for r in rows for v in r],
            )
    _history_from_rows(model=model, ids=[o.pk for o in objs], sample=objs[0], update=True)


def analyze(*, models: Sequence[type[models.Model]], grown: float | None = None) -> list[str]:
    """Refresh the planner's statistics of the tables of `models` (and of their many-to-many tables), on PostgreSQL.

    Why: a conversion writes its tables in one transaction, and autovacuum's ANALYZE cannot see rows not yet
    committed, so every later statement of that transaction is planned on the statistics the tables had when it
    began (empty or nearly): lookups of a few keys become scans of the whole table, or of an index on a column that
    was rare then (the status of the payments), and the cost grows with the square of the rows. An ANALYZE run in
    the transaction itself counts its own rows; it reads a sample (300 x default_statistics_target rows) whatever
    the table's size. Other databases plan otherwise: nothing to do there.

    `grown`: only the tables whose size has reached `grown` times their size (in pages) at their last ANALYZE (a
    table never analyzed counts none, and is analyzed once it has a page): a caller writing into tables that
    already hold many rows refreshes them as they double, not on a count of its own calls. Returns the tables
    analyzed."""
    if connection.vendor != "postgresql":
        return []
    tables: list[str] = []
    for model in models:
        for table in [model._meta.db_table] + [
            f.remote_field.through._meta.db_table  # type: ignore[union-attr]
            for f in model._meta.local_many_to_many
        ]:
            if table not in tables:
                tables.append(table)
    with connection.cursor() as cursor:
        if grown is not None:
            # relpages: the size the last ANALYZE (or VACUUM) saw; pg_relation_size: the size now, this
            # transaction's rows included
            cursor.execute(
                "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relkind = 'r' "
                "AND pg_relation_size(oid) / current_setting('block_size')::int >= GREATEST(%s * relpages, 1)",
                [tables, grown],
            )
            due = {name for (name,) in cursor.fetchall()}
            tables = [t for t in tables if t in due]
        for table in tables:
            cursor.execute(f'ANALYZE "{table}"')
    return tables


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    assert isinstance(field, models.Field) and field.column is not None
    return field.column
