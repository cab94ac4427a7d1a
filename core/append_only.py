"""The database refuses UPDATE and DELETE of audit events and of every simple-history table, like the ledger
(books/migrations/0002_append_only.py): PostgreSQL a trigger function that raises, SQLite RAISE(ABORT).

Installed after every migrate (post_migrate), idempotently, so a history table created by a later migration
is covered without anyone remembering to add it here.
"""

from __future__ import annotations

from django.apps import apps as global_apps
from django.db import DEFAULT_DB_ALIAS, connections
from simple_history.models import HistoricalChanges

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION core_refuse_audit_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def audit_tables() -> list[str]:
    """core_auditevent and every history table (simple-history, including many-to-many history)."""
    tables = [global_apps.get_model("core", "AuditEvent")._meta.db_table]
    tables += sorted(m._meta.db_table for m in global_apps.get_models() if issubclass(m, HistoricalChanges))
    return tables


def install_audit_triggers(sender=None, using: str = DEFAULT_DB_ALIAS, **kwargs) -> None:
    if sender is not None and getattr(sender, "name", "") != "core":
        return  # post_migrate fires once per app; install once, after core's
    connection = connections[using]
    existing = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(PG_FUNCTION)
        for table in audit_tables():
            if table not in existing:
                continue
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                    f"FOR EACH ROW EXECUTE FUNCTION core_refuse_audit_change()"
                )
            elif connection.vendor == "sqlite":
                for op in ("UPDATE", "DELETE"):
                    cursor.execute(
                        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} BEGIN "
                        f"SELECT RAISE(ABORT, 'the audit trail is append-only: {op} on {table} refused'); END"
                    )
