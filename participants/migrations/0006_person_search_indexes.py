"""Indexes behind the staff lists' search (issue 15, core.lists): a prefix of a person's last name, first name or
employee number, ignoring case.

Django's `istartswith` reads `UPPER(col::text) LIKE UPPER('word%')` on PostgreSQL: an expression index on
exactly that, with text_pattern_ops so that LIKE can use it under any collation. On SQLite it reads
`col LIKE 'word%'`, which SQLite serves from an index whose collation is NOCASE. The indexes are SQL of their own
because neither form can be said portably in Meta.indexes (an operator class is PostgreSQL's)."""

from django.db import migrations, models

COLUMNS = ("last_name", "first_name", "employee_number")
TABLE = "participants_person"


def _name(column: str) -> str:
    return f"person_{column}_prefix"


class PersonSearchIndexes(migrations.operations.base.Operation):
    reversible = True
    reduces_to_sql = True

    def state_forwards(self, app_label, state):
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        for column in COLUMNS:
            if schema_editor.connection.vendor == "postgresql":
                expression = f'(UPPER("{column}"::text) text_pattern_ops)'
            else:
                expression = f'("{column}" COLLATE NOCASE)'
            schema_editor.execute(f'CREATE INDEX "{_name(column)}" ON "{TABLE}" {expression}')

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        for column in COLUMNS:
            schema_editor.execute(f'DROP INDEX IF EXISTS "{_name(column)}"')

    def describe(self):
        return "Prefix-search indexes on the person's names and employee number"


class Migration(migrations.Migration):
    dependencies = [("participants", "0005_beneficiary_birth_date")]

    operations = [
        PersonSearchIndexes(),
        migrations.AddIndex(
            model_name="person",
            index=models.Index(
                fields=["last_name", "first_name", "employee_number"], name="person_name_order"
            ),
        ),
    ]
