"""Beneficiaries' taxpayer numbers are encrypted at rest (core/crypto.py, core/encrypted.py): the database holds a
token, the application reads the number, nobody can search by it, and the keys can be rotated."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.exceptions import FieldError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from core.crypto import TOKEN_PREFIX, UnreadableValue
from core.encrypted import field_keys_rotate
from core.models import AuditEvent
from participants.models import Beneficiary, BeneficiaryTaxInfo
from participants.services import beneficiaries_designate, beneficiary_tax_info_record
from tests.conftest import eastern
from tests.factories import ParticipationFactory

pytestmark = pytest.mark.django_db
TIN = "123456785"


@pytest.fixture
def tax_info(edcp) -> BeneficiaryTaxInfo:
    part = ParticipationFactory(plan=edcp)
    beneficiaries_designate(
        person=part.person,
        plan=edcp,
        actor="t",
        beneficiaries=[{"tier": "primary", "name": "Pell Marchbanks", "percent": 100}],
    )
    return beneficiary_tax_info_record(
        beneficiary=Beneficiary.objects.get(name="Pell Marchbanks"),
        taxpayer_number="123-45-6785",
        address_line1="4 Quarry Road",
        city="Richmond",
        state="VA",
        postal_code="23220",
        actor="t",
        now=eastern(2026, 2, 1),
    )


def stored(info: BeneficiaryTaxInfo) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT taxpayer_number FROM participants_beneficiarytaxinfo WHERE id = %s", [info.pk])
        return cursor.fetchone()[0]


def test_the_database_holds_a_token_and_the_application_reads_the_number(tax_info):
    token = stored(tax_info)
    assert token.startswith(TOKEN_PREFIX) and TIN not in token and "6785" not in token
    again = BeneficiaryTaxInfo.objects.get(pk=tax_info.pk)
    assert again.taxpayer_number == TIN and again.masked_number == "***-**-6785"
    assert BeneficiaryTaxInfo.objects.values_list("taxpayer_number", flat=True).get() == TIN
    # a fresh IV each time: the same number written twice is two different tokens
    again.save()
    assert stored(again) != token and BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN


def test_nobody_can_search_by_the_number(tax_info):
    with pytest.raises(FieldError):
        BeneficiaryTaxInfo.objects.filter(taxpayer_number=TIN).exists()
    with pytest.raises(FieldError):
        BeneficiaryTaxInfo.objects.filter(taxpayer_number__endswith="6785").exists()
    assert BeneficiaryTaxInfo.objects.filter(taxpayer_number__isnull=False).count() == 1


def test_rotation_puts_every_number_under_the_new_key_so_the_old_one_can_go(tax_info):
    old, new = settings.FIELD_ENCRYPTION_KEYS[0], Fernet.generate_key().decode()
    with override_settings(FIELD_ENCRYPTION_KEYS=[new, old]):
        assert BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN  # read with the old key, still listed
        assert field_keys_rotate(actor="t", now=eastern(2026, 3, 1), chunk=1) == {
            "participants.BeneficiaryTaxInfo.taxpayer_number": 1
        }
    with override_settings(FIELD_ENCRYPTION_KEYS=[new]):
        assert BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN
    with (
        override_settings(FIELD_ENCRYPTION_KEYS=[old]),
        pytest.raises(UnreadableValue, match="rotate_field_keys"),
    ):
        BeneficiaryTaxInfo.objects.get()
    event = AuditEvent.objects.get(action="field_keys_rotate")
    assert event.data == {"participants.BeneficiaryTaxInfo.taxpayer_number": 1}


def test_rotation_with_a_key_missing_is_refused_whole(tax_info, edcp):
    old = settings.FIELD_ENCRYPTION_KEYS[0]
    token = stored(tax_info)
    with override_settings(FIELD_ENCRYPTION_KEYS=[Fernet.generate_key().decode()]):
        with pytest.raises(CommandError, match="nothing rotated"):
            call_command("rotate_field_keys")
    assert stored(tax_info) == token and not AuditEvent.objects.filter(action="field_keys_rotate").exists()
    with override_settings(FIELD_ENCRYPTION_KEYS=[old]):
        assert BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN


def test_the_migration_encrypts_numbers_stored_in_clear_and_its_reverse_decrypts_them(tax_info):
    migration = importlib.import_module("participants.migrations.0007_beneficiary_tax_number_encrypted")
    editor = SimpleNamespace(connection=connection)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE participants_beneficiarytaxinfo SET taxpayer_number = %s", [TIN])
    migration.encrypt_numbers(None, editor)
    assert (
        stored(tax_info).startswith(TOKEN_PREFIX) and BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN
    )
    migration.encrypt_numbers(None, editor)  # a token is left as it is: run twice, still one layer
    assert BeneficiaryTaxInfo.objects.get().taxpayer_number == TIN
    migration.decrypt_numbers(None, editor)
    assert stored(tax_info) == TIN
