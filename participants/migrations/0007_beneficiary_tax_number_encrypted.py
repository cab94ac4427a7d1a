"""Beneficiaries' taxpayer numbers encrypted at rest (core/crypto.py): the column becomes text wide enough for a
Fernet token, and every number already stored in clear is encrypted with the first key of FIELD_ENCRYPTION_KEYS
(reversed: decrypted back). Raw SQL, because the field reads what it finds as a token."""

from django.db import migrations

import core.crypto
import core.encrypted

TABLE = "participants_beneficiarytaxinfo"


def _rewrite(apps, schema_editor, change, wanted) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT id, taxpayer_number FROM {TABLE}")
        rows = [(change(value), pk) for pk, value in cursor.fetchall() if value and wanted(value)]
        cursor.executemany(f"UPDATE {TABLE} SET taxpayer_number = %s WHERE id = %s", rows)


def encrypt_numbers(apps, schema_editor) -> None:
    _rewrite(apps, schema_editor, core.crypto.encrypt, lambda v: not v.startswith(core.crypto.TOKEN_PREFIX))


def decrypt_numbers(apps, schema_editor) -> None:
    _rewrite(apps, schema_editor, core.crypto.decrypt, lambda v: v.startswith(core.crypto.TOKEN_PREFIX))


class Migration(migrations.Migration):
    dependencies = [
        ("participants", "0006_person_search_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="beneficiarytaxinfo",
            name="taxpayer_number",
            field=core.encrypted.EncryptedTextField(help_text="SSN or ITIN, 9 digits; stored encrypted"),
        ),
        migrations.RunPython(encrypt_numbers, decrypt_numbers, elidable=False),
    ]
