from __future__ import annotations

import pytest

from tests.elections.factories import participant, user_with_role


@pytest.fixture
def alice(db):
    return participant(username="alice", first_name="Alice", last_name="Archer", email="alice@example.com")


@pytest.fixture
def bob(db):
    return participant(username="bob", first_name="Bob", last_name="Baker", email="bob@example.com")


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
