"""Fewer writes for each credit posted (measured by `manage.py bench crediting --paid 1`).

- Ledger entries and pending transactions lose their single-column account index: the
  (account, valuation_date) and (account, status) indexes already serve every lookup by account.
- Their idempotency keys stay unique through a UniqueConstraint instead of unique=True, which on
  PostgreSQL also builds a varchar_pattern_ops index (for LIKE 'prefix%') that nothing queries.
  The new constraint is added before the old one goes, so a key is never unguarded.
- PostgreSQL: the trigger freezing applied pending transactions runs AFTER the change, and only
  WHEN OLD.status = 'applied': the same refusal (the statement fails, nothing is changed), but a
  BEFORE row trigger makes the server lock (and WAL-log) every row before updating it, and call
  PL/pgSQL for each; the crediting job updates every pending credit of a payday.
"""
import django.db.models.deletion
from django.db import migrations, models

TRIGGER = ("CREATE TRIGGER books_pending_applied_frozen {when} UPDATE OR DELETE ON books_pendingtransaction "
           "FOR EACH ROW {condition}EXECUTE FUNCTION books_refuse_applied_change()")


def _retrigger(when: str, condition: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS books_pending_applied_frozen ON books_pendingtransaction")
            cursor.execute(TRIGGER.format(when=when, condition=condition))
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('books', '0006_pension_figures_spouse'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='ledgerentry',
            constraint=models.UniqueConstraint(fields=('idempotency_key',), name='one_ledger_entry_per_key'),
        ),
        migrations.AddConstraint(
            model_name='pendingtransaction',
            constraint=models.UniqueConstraint(fields=('idempotency_key',), name='one_pending_per_key'),
        ),
        migrations.AlterField(
            model_name='ledgerentry',
            name='account',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='books.account'),
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
        migrations.RunPython(_retrigger("AFTER", "WHEN (OLD.status = 'applied') "), _retrigger("BEFORE", "")),
    ]
