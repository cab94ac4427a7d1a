"""The database refuses UPDATE and DELETE of posted entries (and of applied pending transactions).

PostgreSQL: a trigger function raising an exception; SQLite (embedded demo): RAISE(ABORT).
A BRIN index on the daily valuation date keeps "yesterday's rows" cheap to find as the table grows.
"""
from django.db import migrations

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION books_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'posted entries are append-only: % on % refused (post a reversing entry instead)',
        TG_OP, TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION books_refuse_applied_change() RETURNS trigger AS $$
BEGIN
    IF OLD.status = 'applied' THEN
        RAISE EXCEPTION 'applied transaction % is posted: % refused', OLD.id, TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""
TABLES = ["books_ledgerentry", "books_dailyvaluation"]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    def run(sql):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(sql)
    if vendor == "postgresql":
        run(PG_FUNCTION)
        for table in TABLES:
            run(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION books_refuse_change()")
        run("CREATE TRIGGER books_pending_applied_frozen BEFORE UPDATE OR DELETE ON books_pendingtransaction "
            "FOR EACH ROW EXECUTE FUNCTION books_refuse_applied_change()")
        run("CREATE INDEX books_dailyvaluation_date_brin ON books_dailyvaluation USING brin (valuation_date) WITH (pages_per_range = 32)")
    elif vendor == "sqlite":
        for table in TABLES:
            for op in ("UPDATE", "DELETE"):
                run(f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} BEGIN "
                    f"SELECT RAISE(ABORT, 'posted entries are append-only: {op} on {table} refused'); END")
        for op in ("UPDATE", "DELETE"):
            run(f"CREATE TRIGGER books_pending_applied_no_{op.lower()} BEFORE {op} ON books_pendingtransaction "
                f"WHEN OLD.status = 'applied' BEGIN "
                f"SELECT RAISE(ABORT, 'applied transaction is posted: {op} refused'); END")
        run("CREATE INDEX books_dailyvaluation_date ON books_dailyvaluation (valuation_date)")


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    def run(sql):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(sql)
    if vendor == "postgresql":
        for table in TABLES:
            run(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        run("DROP TRIGGER IF EXISTS books_pending_applied_frozen ON books_pendingtransaction")
        run("DROP INDEX IF EXISTS books_dailyvaluation_date_brin")
    elif vendor == "sqlite":
        for table in TABLES:
            for op in ("update", "delete"):
                run(f"DROP TRIGGER IF EXISTS {table}_no_{op}")
        for op in ("update", "delete"):
            run(f"DROP TRIGGER IF EXISTS books_pending_applied_no_{op}")
        run("DROP INDEX IF EXISTS books_dailyvaluation_date")


class Migration(migrations.Migration):
    dependencies = [("books", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
