"""Fewer writes for each credit posted on a payday (measured by `manage.py bench crediting --paid 1`).

- Pending transactions: the (status, effective_date) index becomes an index of effective_date over the
  pending rows only. Every query that filters by status asks for 'pending' (the crediting job and its
  checks, the staff and participant pages, payments), so an applied row need not stay in it, and the
  crediting job's pending -> applied UPDATE writes one index entry fewer per row.
- PostgreSQL: a ledger entry's references (its (position, account) pair, books/migrations/0007, and its
  pending transaction) were checked by per-row foreign-key triggers at commit, one lookup and one row
  lock per entry and reference. They are now checked once per INSERT statement by one trigger over all
  the rows it inserted (a transition table): an anti-join against books_position and
  books_pendingtransaction, which raises foreign_key_violation and so refuses the whole statement.
  The referenced side keeps its guard: deleting a position or a pending transaction, or changing its
  key, is refused while a ledger entry references it. That trigger first takes a SHARE lock on
  books_ledgerentry, so it waits for every transaction still inserting entries and then sees them
  (READ COMMITTED reads with a fresh snapshot per statement); an inserting statement that waited for
  such a delete likewise sees it. Under REPEATABLE READ or SERIALIZABLE a snapshot can be older than a
  concurrent commit, so there the insert check also locks the referenced rows (FOR KEY SHARE, as a
  foreign key does) and the delete guard refuses to run. SQLite (the embedded demo) keeps its foreign
  key and the triggers of 0007 (state-only change there: no table rebuild).
- PostgreSQL: the unique index of ledger_entry.reverses_id covers only the rows that reverse an entry
  (WHERE reverses_id IS NOT NULL): the same rule (NULLs never collide), one index entry fewer per
  ordinary entry.
"""

from django.db import migrations, models
import django.db.models.deletion

PG_FORWARDS = r"""
DO $$
DECLARE c text;
BEGIN
    SELECT conname INTO c FROM pg_constraint WHERE conrelid = 'books_ledgerentry'::regclass AND contype = 'f'
        AND confrelid = 'books_pendingtransaction'::regclass;
    IF c IS NOT NULL THEN EXECUTE format('ALTER TABLE books_ledgerentry DROP CONSTRAINT %I', c); END IF;
    SELECT conname INTO c FROM pg_constraint WHERE conrelid = 'books_ledgerentry'::regclass AND contype = 'u'
        AND conkey = ARRAY[(SELECT attnum FROM pg_attribute WHERE attrelid = 'books_ledgerentry'::regclass
                            AND attname = 'reverses_id')];
    IF c IS NOT NULL THEN
        EXECUTE format('ALTER TABLE books_ledgerentry DROP CONSTRAINT %I', c);
        EXECUTE format('CREATE UNIQUE INDEX %I ON books_ledgerentry (reverses_id) WHERE reverses_id IS NOT NULL', c);
    END IF;
END $$;
ALTER TABLE books_ledgerentry DROP CONSTRAINT IF EXISTS books_ledgerentry_position_account_fk;

CREATE OR REPLACE FUNCTION books_ledgerentry_check_references() RETURNS trigger AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        PERFORM 1 FROM books_position p WHERE p.id IN (SELECT position_id FROM inserted) FOR KEY SHARE OF p;
        PERFORM 1 FROM books_pendingtransaction t WHERE t.id IN (SELECT pending_id FROM inserted) FOR KEY SHARE OF t;
    END IF;
    IF EXISTS (SELECT 1 FROM inserted e WHERE NOT EXISTS (
                   SELECT 1 FROM books_position p WHERE p.id = e.position_id AND p.account_id = e.account_id)) THEN
        RAISE EXCEPTION 'insert into books_ledgerentry refused: no position with this id and account'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM inserted e WHERE e.pending_id IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM books_pendingtransaction t WHERE t.id = e.pending_id)) THEN
        RAISE EXCEPTION 'insert into books_ledgerentry refused: no pending transaction with this id'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER books_ledgerentry_references AFTER INSERT ON books_ledgerentry
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION books_ledgerentry_check_references();

CREATE OR REPLACE FUNCTION books_refuse_referenced_change() RETURNS trigger AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION '% on % refused: run it READ COMMITTED (the ledger''s reference check needs a fresh snapshot)',
            TG_OP, TG_TABLE_NAME USING ERRCODE = 'serialization_failure';
    END IF;
    -- waits for the transactions inserting ledger entries; the next statement sees what they committed
    LOCK TABLE books_ledgerentry IN SHARE MODE;
    IF TG_TABLE_NAME = 'books_position' AND EXISTS (
           SELECT 1 FROM books_ledgerentry e WHERE e.position_id = OLD.id AND e.account_id = OLD.account_id) THEN
        RAISE EXCEPTION '% on books_position refused: ledger entries reference position %', TG_OP, OLD.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF TG_TABLE_NAME = 'books_pendingtransaction' AND EXISTS (
           SELECT 1 FROM books_ledgerentry e WHERE e.pending_id = OLD.id) THEN
        RAISE EXCEPTION '% on books_pendingtransaction refused: ledger entries reference pending transaction %',
            TG_OP, OLD.id USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER books_position_referenced_delete AFTER DELETE ON books_position
    FOR EACH ROW EXECUTE FUNCTION books_refuse_referenced_change();
CREATE TRIGGER books_position_referenced_update AFTER UPDATE ON books_position
    FOR EACH ROW WHEN (OLD.id <> NEW.id OR OLD.account_id <> NEW.account_id)
    EXECUTE FUNCTION books_refuse_referenced_change();
CREATE TRIGGER books_pending_referenced_delete AFTER DELETE ON books_pendingtransaction
    FOR EACH ROW EXECUTE FUNCTION books_refuse_referenced_change();
CREATE TRIGGER books_pending_referenced_update AFTER UPDATE ON books_pendingtransaction
    FOR EACH ROW WHEN (OLD.id <> NEW.id) EXECUTE FUNCTION books_refuse_referenced_change();
"""

PG_BACKWARDS = r"""
DROP TRIGGER IF EXISTS books_ledgerentry_references ON books_ledgerentry;
DROP TRIGGER IF EXISTS books_position_referenced_delete ON books_position;
DROP TRIGGER IF EXISTS books_position_referenced_update ON books_position;
DROP TRIGGER IF EXISTS books_pending_referenced_delete ON books_pendingtransaction;
DROP TRIGGER IF EXISTS books_pending_referenced_update ON books_pendingtransaction;
DROP FUNCTION IF EXISTS books_ledgerentry_check_references();
DROP FUNCTION IF EXISTS books_refuse_referenced_change();
ALTER TABLE books_ledgerentry ADD CONSTRAINT books_ledgerentry_position_account_fk
    FOREIGN KEY (position_id, account_id) REFERENCES books_position (id, account_id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE books_ledgerentry ADD CONSTRAINT books_ledgerentry_pending_id_fk_books_pendingtransaction_id
    FOREIGN KEY (pending_id) REFERENCES books_pendingtransaction (id) DEFERRABLE INITIALLY DEFERRED;
DROP INDEX IF EXISTS books_ledgerentry_reverses_id_key;
ALTER TABLE books_ledgerentry ADD CONSTRAINT books_ledgerentry_reverses_id_key UNIQUE (reverses_id);
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(PG_FORWARDS)  # no parameters: the % of format() and RAISE are the server's


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(PG_BACKWARDS)


class Migration(migrations.Migration):

    dependencies = [
        ("books", "0009_parallel_run"),
    ]

    operations = [
        # the new index first, so pending rows are never without one
        migrations.AddIndex(
            model_name="pendingtransaction",
            index=models.Index(
                condition=models.Q(("status", "pending")), fields=["effective_date"], name="pending_due_by_date"
            ),
        ),
        migrations.RemoveIndex(
            model_name="pendingtransaction",
            name="books_pendi_status_c9f693_idx",
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="ledgerentry",
                    name="pending",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="entries",
                        to="books.pendingtransaction",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
