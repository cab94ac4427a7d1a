"""Encryption at rest for the values that must never sit in the database in clear: beneficiaries' taxpayer numbers
(participants.BeneficiaryTaxInfo, RULES.md "FICA special timing and year-end tax reporting").

A value is stored as a Fernet token (cryptography: AES-128-CBC with an HMAC-SHA256, a fresh IV each time) made
with the first key of settings.FIELD_ENCRYPTION_KEYS; any key of the list reads it (MultiFernet). To rotate: put
the new key first, run `manage.py rotate_field_keys` (every stored token made again with it), then drop the old
key. The model field and the rotation are in core/encrypted.py; this module is what settings may import.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

TOKEN_PREFIX = "gAAAAA"  # every Fernet token: version byte 0x80 and a timestamp's high bytes, base64


class UnreadableValue(Exception):
    """A stored token that no key of FIELD_ENCRYPTION_KEYS opens (a key removed too early, or a changed value)."""


def checked_keys(keys: list[str]) -> list[str]:
    """The keys as given, or ImproperlyConfigured naming the first that is not a Fernet key (settings)."""
    for n, key in enumerate(keys, start=1):
        try:
            Fernet(key.strip())
        except ValueError:
            raise ImproperlyConfigured(
                f"FIELD_ENCRYPTION_KEYS: key {n} is not a Fernet key (32 url-safe base64-encoded bytes; make one "
                "with python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
            ) from None
    return [key.strip() for key in keys]


def development_key(path: Path) -> str:
    """A random key kept in `path` (var/, never in git) for a machine without FIELD_ENCRYPTION_KEYS. Made once:
    the processes `make run` starts together all read the same file (written aside and linked into place)."""
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        aside.write_text(Fernet.generate_key().decode())
        aside.chmod(0o600)
        try:
            os.link(aside, path)  # fails if another process made it first: theirs is kept
        except FileExistsError:
            pass
        finally:
            aside.unlink()
    return path.read_text().strip()


def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.FIELD_ENCRYPTION_KEYS])


def encrypt(text: str) -> str:
    return _fernet().encrypt(text.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UnreadableValue(
            "an encrypted value that no key of FIELD_ENCRYPTION_KEYS opens: was a key removed before "
            "`manage.py rotate_field_keys` ran?"
        ) from None
