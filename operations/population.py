"""A large population, fast: the demo population copied set-based (PostgreSQL).

`python manage.py load_demo --participants 100000` first builds the demo population of load_demo through the real
services (thirty or so people with elections, pay, payments, claims, BRP benefits, two years of books), then, when
more participants are asked for, copies it as many times as needed with one INSERT ... SELECT per table
(generate_series over the copy numbers). Every table that belongs to a person is copied: the tables are found from
the models' foreign keys, starting from participants.Person and the users of the participants, so a new app's
tables are copied without touching this module. In each copy:

- every primary key is moved by the copy number times the table's span (its largest id + 1), and every foreign key
  to a copied row by the span of the table it points to; a foreign key to a shared row (a plan, a fund, a staff
  user, a payment run) is kept;
- a text column that must be unique on its own (an employee number, a username, an idempotency key) gets the suffix
  `-N`; the copies of a participant sign in with the demo password of the person copied (`alice-17`);
- daily valuations older than `history_days` Valuation Dates are not copied (--history-days; the demo's own people
  keep their whole history): two years of daily valuations for 100,000 participants with eight positions each
  would be 400 million rows.

History tables (django-simple-history) and the audit log are not copied: they record what happened to the demo's
people, and a copy did nothing. The sequences are moved past the copies and the tables analysed.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth.models import User
from django.db import connection, models, transaction

from participants.models import Person

NOT_COPIED = {"core.auditevent"}  # what happened to the demo's people; a copy did nothing
SUFFIX_TYPES = (models.CharField, models.TextField)


@dataclass
class Table:
    model: type[models.Model]
    table: str
    pk: str
    remapped: dict[str, str] = field(default_factory=dict)  # FK column -> table it points to (copied)
    suffixed: set[str] = field(default_factory=set)  # text columns unique on their own
    span: int = 0
    rows: int = 0


def _copied_models() -> dict[str, Table]:
    """Every model reachable from Person (or a participant's user) through foreign keys pointing at it."""
    found: dict[str, Table] = {}
    roots = {Person._meta.db_table, User._meta.db_table}
    candidates = [
        m
        for m in apps.get_models(include_auto_created=True)
        if not str(m._meta.model_name).startswith("historical")
        and m._meta.label_lower not in NOT_COPIED
        and not m._meta.proxy
        and m._meta.managed
    ]
    tables = {m._meta.db_table: m for m in candidates}
    copied = set(roots)
    user_table = User._meta.db_table

    def reaches(m: type[models.Model]) -> bool:
        for f in m._meta.concrete_fields:
            if f.remote_field is None or f.related_model is None or not (f.many_to_one or f.one_to_one):
                continue
            target = f.related_model._meta.db_table
            # Through a user only a participant's group membership belongs to a person: staff users act on
            # everyone's records (recorded_by, decided_by) without those rows being theirs.
            if target == user_table and m._meta.app_label != "auth":
                continue
            if target in copied:
                return True
        return False

    changed = True
    while changed:
        changed = False
        for m in candidates:
            if m._meta.db_table not in copied and reaches(m):
                copied.add(m._meta.db_table)
                changed = True
    for name in copied:
        model = tables[name]
        pk = model._meta.pk
        assert pk is not None
        t = Table(model=model, table=name, pk=str(pk.column))
        for f in model._meta.concrete_fields:
            if (
                f.remote_field is not None
                and f.related_model is not None
                and f.related_model._meta.db_table in copied
            ):
                t.remapped[str(f.column)] = f.related_model._meta.db_table
        t.suffixed = _unique_text(model, t)
        found[name] = t
    return found


def _unique_text(model: type[models.Model], t: Table) -> set[str]:
    """Text columns of a uniqueness that no moved key already keeps apart in the copies."""
    groups: list[list[models.Field]] = []
    for f in model._meta.concrete_fields:
        if f.unique and not f.primary_key:
            groups.append([f])
    for constraint in model._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint) and constraint.fields:
            groups.append([model._meta.get_field(name) for name in constraint.fields])  # type: ignore[misc]
    for together in model._meta.unique_together:
        groups.append([model._meta.get_field(name) for name in together])  # type: ignore[misc]
    out: set[str] = set()
    for group in groups:
        if any(f.column in t.remapped or f.primary_key for f in group):
            continue
        text = [str(f.column) for f in group if isinstance(f, SUFFIX_TYPES)]
        if not text:
            raise RuntimeError(
                f"{t.table}: {[f.name for f in group]} is unique and cannot be told apart in a copy"
            )
        out.update(text)
    return out


def _rows_sql(t: Table) -> str:
    """The rows of `t` that belong to a person: a foreign key to a copied row of another table."""
    if t.table == User._meta.db_table:
        return f"SELECT user_id FROM {Person._meta.db_table} WHERE user_id IS NOT NULL"
    if t.table == Person._meta.db_table:
        return f"SELECT {t.pk} FROM {t.table}"
    conditions = [f"{column} IN (SELECT id FROM _copy_{target})" for column, target in t.remapped.items()]
    return f"SELECT {t.pk} FROM {t.table} WHERE {' OR '.join(conditions) or 'false'}"


# The valuation rows a copy keeps: the last `history_days` Valuation Dates and every day a ledger entry was valued.
# Over the gaps, a kept row's flow is the entries since the previous kept row and its earnings the rest of the
# change of value, so verify_books proves the copies' balances from their entries as it does the demo's.
_VALUATIONS_KEPT = """(
    SELECT y.id, y.position_id, y.account_id, y.fund_id, y.valuation_date, y.units, y.price, y.value,
           y.flow_since AS flow, y.value - coalesce(y.previous_value, 0) - y.flow_since AS earnings
    FROM (
        SELECT x.*,
               coalesce((SELECT sum(e.amount) FROM books_ledgerentry e
                         WHERE e.position_id = x.position_id AND e.valuation_date <= x.valuation_date
                           AND e.valuation_date > coalesce(x.previous_date, DATE '0001-01-01')), 0) AS flow_since
        FROM (
            SELECT v.*, lag(v.value) OVER p AS previous_value, lag(v.valuation_date) OVER p AS previous_date
            FROM books_dailyvaluation v
            WHERE v.id IN (SELECT id FROM _copy_books_dailyvaluation)
              AND (v.valuation_date >= %s OR EXISTS (SELECT 1 FROM books_ledgerentry e
                                                     WHERE e.position_id = v.position_id
                                                       AND e.valuation_date = v.valuation_date))
            WINDOW p AS (PARTITION BY v.position_id ORDER BY v.valuation_date)
        ) x
    ) y
)"""


def _copy_select(t: Table, tables: dict[str, Table], cutoff: dt.date) -> tuple[list[str], str, str, list]:
    """The columns of `t`, the expression of each in a copy numbered `c` (from rows `s`), the source, the params."""
    columns = [str(f.column) for f in t.model._meta.concrete_fields]
    values = []
    for column in columns:
        if column in t.remapped:
            target = tables[t.remapped[column]]
            values.append(
                f'CASE WHEN s."{column}" IN (SELECT id FROM _copy_{target.table}) '
                f'THEN s."{column}" + c * {target.span} ELSE s."{column}" END'
            )
        elif column == t.pk:
            values.append(f's."{column}" + c * {t.span}')
        elif column in t.suffixed:
            values.append(f"""CASE WHEN s."{column}" = '' THEN '' ELSE s."{column}" || '-' || c END""")
        else:
            values.append(f's."{column}"')
    if t.model._meta.label_lower == "books.dailyvaluation":
        return columns, ", ".join(values), _VALUATIONS_KEPT, [cutoff]
    return (
        columns,
        ", ".join(values),
        f"(SELECT * FROM {t.table} WHERE {t.pk} IN (SELECT id FROM _copy_{t.table}))",
        [],
    )


def population_copy(
    *, copies: int, history_days: int, as_of: dt.date, say: Callable[[str], None] = lambda _: None
) -> dict[str, int]:
    """Copy every person's rows `copies` times; returns the rows added per table."""
    from core import valuation_calendar as cal  # on use: the calendar loads the exchange sessions

    if connection.vendor != "postgresql":
        raise RuntimeError("copying a population is set-based SQL for PostgreSQL (generate_series)")
    tables = _copied_models()
    cutoff = cal.valuation_dates_between(as_of - dt.timedelta(days=history_days * 2 + 10), as_of)[
        -history_days:
    ][0]
    added: dict[str, int] = {}
    with transaction.atomic(), connection.cursor() as cursor:  # the temporary id tables live until the commit
        cursor.execute(
            "SET LOCAL session_replication_role = replica"
        )  # the copies are consistent by construction
        # The rows of each table that belong to a person, to a fixed point (a row may belong through another).
        for t in tables.values():
            cursor.execute(f"CREATE TEMP TABLE _copy_{t.table} (id bigint PRIMARY KEY) ON COMMIT DROP")
        changed = True
        while changed:
            changed = False
            for t in tables.values():
                cursor.execute(f"INSERT INTO _copy_{t.table} {_rows_sql(t)} ON CONFLICT DO NOTHING")
                changed = changed or cursor.rowcount > 0
        for t in tables.values():
            cursor.execute(
                f"SELECT coalesce(max({t.pk}), 0) + 1, (SELECT count(*) FROM _copy_{t.table}) FROM {t.table}"
            )
            t.span, t.rows = cursor.fetchone()
        for t in sorted(tables.values(), key=lambda x: x.table):
            if not t.rows:
                continue
            started = time.monotonic()
            columns, values, source, params = _copy_select(t, tables, cutoff)
            quoted = ", ".join(f'"{c}"' for c in columns)
            cursor.execute(
                f"INSERT INTO {t.table} ({quoted}) SELECT {values} "
                f"FROM {source} s CROSS JOIN generate_series(1, {copies}) c",
                params,
            )
            added[t.table] = cursor.rowcount
            say(f"{t.table}: {cursor.rowcount} rows ({time.monotonic() - started:.1f} s)")
        for t in tables.values():
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{t.table}', '{t.pk}'), (SELECT max({t.pk}) FROM {t.table}))"
            )
    return added


__all__ = ["population_copy"]
