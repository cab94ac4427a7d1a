"""Fewer writes for each credit posted (measured by `manage.py bench crediting --paid 1`).

- Ledger entries and pending transactions lose their single-column account index: the
  (account, valuation_date) and (account, status) indexes already serve every lookup by account.
- Their idempotency keys stay unique through a UniqueConstraint instead of unique=True, which on
  PostgreSQL also builds a varchar_pattern_ops index (for LIKE 'prefix%') that nothing queries.
  The new constraint is added before the old one goes, so a key is never unguarded.
- A ledger entry's position and account are one foreign key, (position_id, account_id) referencing
  books_position (id, account_id), instead of two: one check (and one row lock) per entry at commit
  instead of two, and the database now also refuses an entry whose account is not its position's.
  SQLite (the embedded demo) has no ALTER TABLE ... ADD FOREIGN KEY: triggers do the same there.
- PostgreSQL: the trigger freezing applied pending transactions runs AFTER the change, and only
  WHEN OLD.status = 'applied': the same refusal (the statement fails, nothing is changed), without
  a PL/pgSQL call for every pending credit the crediting job applies.
- SQLite rebuilds a table to change its constraints, and a rebuilt table has lost its triggers: the
  append-only triggers of 0002 are created again at the end (books_dailyvaluation's too, which 0005's
  rebuild had dropped).
"""
import django.db.models.deletion
from django.db import migrations, models

PG_PENDING_TRIGGER = ("CREATE TRIGGER books_pending_applied_frozen {when} UPDATE OR DELETE ON books_pendingtransaction "
                      "FOR EACH ROW {condition}EXECUTE FUNCTION books_refuse_applied_change()")
PG_PAIR_FK = ("ALTER TABLE books_ledgerentry ADD CONSTRAINT books_ledgerentry_position_account_fk "
              "FOREIGN KEY (position_id, account_id) REFERENCES books_position (id, account_id) "
              "DEFERRABLE INITIALLY DEFERRED")

SQLITE_APPEND_ONLY = [
    *(f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} BEGIN "
      f"SELECT RAISE(ABORT, 'posted entries are append-only: {op} on {table} refused'); END"
      for table in ("books_ledgerentry", "books_dailyvaluation") for op in ("UPDATE", "DELETE")),
    *(f"CREATE TRIGGER IF NOT EXISTS books_pending_applied_no_{op.lower()} BEFORE {op} ON books_pendingtransaction "
      f"WHEN OLD.status = 'applied' BEGIN SELECT RAISE(ABORT, 'applied transaction is posted: {op} refused'); END"
      for op in ("UPDATE", "DELETE")),
]
SQLITE_PAIR_FK = {
    "books_ledgerentry_position_account_fk":
        "CREATE TRIGGER books_ledgerentry_position_account_fk BEFORE INSERT ON books_ledgerentry "
        "WHEN NOT EXISTS (SELECT 1 FROM books_position p WHERE p.id = NEW.position_id AND p.account_id = NEW.account_id) "
        "BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no position with this id and account'); END",
    "books_position_entries_no_delete":
        "CREATE TRIGGER books_position_entries_no_delete BEFORE DELETE ON books_position "
        "WHEN EXISTS (SELECT 1 FROM books_ledgerentry e WHERE e.position_id = OLD.id) "
        "BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: the position has ledger entries'); END",
    "books_position_entries_no_move":
        "CREATE TRIGGER books_position_entries_no_move BEFORE UPDATE OF id, account_id ON books_position "
        "WHEN (NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id) "
        "AND EXISTS (SELECT 1 FROM books_ledgerentry e WHERE e.position_id = OLD.id) "
        "BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: the position has ledger entries'); END",
}


def _execute(schema_editor, statements):
    with schema_editor.connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def restore_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _execute(schema_editor, SQLITE_APPEND_ONLY)


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _execute(schema_editor, [
            PG_PAIR_FK,
            "DROP TRIGGER IF EXISTS books_pending_applied_frozen ON books_pendingtransaction",
            PG_PENDING_TRIGGER.format(when="AFTER", condition="WHEN (OLD.status = 'applied') "),
        ])
    elif vendor == "sqlite":
        _execute(schema_editor, [*SQLITE_PAIR_FK.values(), *SQLITE_APPEND_ONLY])


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _execute(schema_editor, [
            "ALTER TABLE books_ledgerentry DROP CONSTRAINT IF EXISTS books_ledgerentry_position_account_fk",
            "DROP TRIGGER IF EXISTS books_pending_applied_frozen ON books_pendingtransaction",
            PG_PENDING_TRIGGER.format(when="BEFORE", condition=""),
        ])
    elif vendor == "sqlite":
        _execute(schema_editor, [f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_PAIR_FK])


class Migration(migrations.Migration):

    dependencies = [
        ('books', '0006_pension_figures_spouse'),
    ]

    operations = [
        # (reversed: runs last, after SQLite has rebuilt the tables)
        migrations.RunPython(migrations.RunPython.noop, restore_sqlite_triggers),
        migrations.AddConstraint(
            model_name='ledgerentry',
            constraint=models.UniqueConstraint(fields=('idempotency_key',), name='one_ledger_entry_per_key'),
        ),
        migrations.AddConstraint(
            model_name='pendingtransaction',
            constraint=models.UniqueConstraint(fields=('idempotency_key',), name='one_pending_per_key'),
        ),
        migrations.AddConstraint(
            model_name='position',
            constraint=models.UniqueConstraint(fields=('id', 'account'), name='position_with_its_account'),
        ),
        migrations.AlterField(
            model_name='ledgerentry',
            name='account',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='books.account'),
        ),
        migrations.AlterField(
            model_name='ledgerentry',
            name='position',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='books.position'),
        ),
        migrations.AlterField(
            model_name='ledgerentry',
            name='idempotency_key',
            field=models.CharField(max_length=220),
        ),
        migrations.AlterField(
            model_name='pendingtransaction',
            name='account',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='pending', to='books.account'),
        ),
        migrations.AlterField(
            model_name='pendingtransaction',
            name='idempotency_key',
            field=models.CharField(max_length=200),
        ),
        migrations.RunPython(forwards, backwards),
    ]
