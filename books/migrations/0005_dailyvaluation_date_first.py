"""DailyValuation's unique index leads with the date (was: position first, plus a BRIN index on the date).

Each Valuation Date's rows then go to the end of the index instead of into every leaf of it, and
the crediting job finds the previous day's rows through the same index, so the BRIN index goes.
"""
from django.db import migrations, models


def drop_date_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "postgresql":
            cursor.execute("DROP INDEX IF EXISTS books_dailyvaluation_date_brin")
        elif schema_editor.connection.vendor == "sqlite":
            cursor.execute("DROP INDEX IF EXISTS books_dailyvaluation_date")


def restore_date_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "postgresql":
            cursor.execute("CREATE INDEX books_dailyvaluation_date_brin ON books_dailyvaluation "
                           "USING brin (valuation_date) WITH (pages_per_range = 32)")
        elif schema_editor.connection.vendor == "sqlite":
            cursor.execute("CREATE INDEX books_dailyvaluation_date ON books_dailyvaluation (valuation_date)")


class Migration(migrations.Migration):
    dependencies = [("books", "0004_declaration_kind_length")]
    operations = [
        migrations.AddConstraint(
            model_name="dailyvaluation",
            constraint=models.UniqueConstraint(fields=("valuation_date", "position"),
                                               name="one_valuation_per_date_and_position"),
        ),
        migrations.RemoveConstraint(model_name="dailyvaluation", name="one_valuation_per_position_and_date"),
        migrations.RunPython(drop_date_index, restore_date_index),
    ]
