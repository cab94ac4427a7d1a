from __future__ import annotations

import pytest

from tests.claims.factories import participant, user_in
from tests.factories import consent_to_email


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    """Uploads and notices go to a fresh MEDIA_ROOT per test; test passwords hash fast."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def admin_user(db):
    return user_in("administrator", username="delegate", email="delegate@example.com")


@pytest.fixture
def committee_user(db):
    return user_in("committee", username="committee", email="committee@example.com")


@pytest.fixture
def auditor_user(db):
    return user_in("auditor", username="auditor")


@pytest.fixture
def alice(db):
    alice = participant(
        "EDCP", username="alice", first_name="Alice", last_name="Claimant", email="alice@example.com"
    )
    consent_to_email(alice)  # notices by email (core.notices)
    return alice


@pytest.fixture
def bob(db):
    return participant("EDCP", username="bob", first_name="Bob", last_name="Other")
