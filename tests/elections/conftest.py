from __future__ import annotations

import pytest

from tests.elections.factories import participant, user_with_role
from tests.factories import consent_to_email


@pytest.fixture
def alice(db):
    alice = participant(username="alice", first_name="Alice", last_name="Archer", email="alice@example.com")
    consent_to_email(alice.person)  # notices by email (core.notices: paper is the default)
    return alice


@pytest.fixture
def bob(db):
    bob = participant(username="bob", first_name="Bob", last_name="Baker", email="bob@example.com")
    consent_to_email(bob.person)
    return bob


@pytest.fixture
def administrator(db):
    return user_with_role("admin1", "administrator")


@pytest.fixture
def committee(db):
    return user_with_role("committee1", "committee")


@pytest.fixture
def auditor(db):
    return user_with_role("auditor1", "auditor")


@pytest.fixture(autouse=True)
def _documents_in_a_temporary_folder(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
