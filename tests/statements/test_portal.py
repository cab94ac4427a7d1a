"""The portal lists a participant's own statements and serves their PDFs; staff see them on the participant page."""

from __future__ import annotations

import pytest
from django.test import Client

from core.pdf import pdf_text
from tests.elections.factories import participant
from tests.signin import sign_in
from tests.statements.factories import statement_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def test_a_participant_finds_and_downloads_only_their_own_statements():
    alice = participant(username="alice-s", first_name="Alice", last_name="Archer")
    bob = participant(username="bob-s", first_name="Bob", last_name="Baker")
    mine, theirs = statement_for(alice, ending="1234.56"), statement_for(bob, ending="9876.54")
    client = Client()
    client.force_login(alice.person.user)
    page = client.get("/portal/statements/").content.decode()
    assert f"/documents/{mine.document_id}/" in page and "1,234.56" in page
    assert f"/documents/{theirs.document_id}/" not in page and "9,876.54" not in page
    pdf = client.get(f"/documents/{mine.document_id}/")
    assert pdf.status_code == 200 and pdf["X-Content-SHA256"] == mine.sha256
    assert "1,234.56" in pdf_text(pdf.content)
    assert client.get(f"/documents/{theirs.document_id}/").status_code == 404


def test_staff_see_a_participants_statements(django_user_model):
    from tests.elections.factories import user_with_role

    alice = participant(username="alice-t", first_name="Alice", last_name="Archer")
    statement = statement_for(alice)
    staff = user_with_role("admin-s", "administrator")
    client = sign_in(Client(), staff)
    detail = client.get(f"/staff/participants/{alice.person.pk}/").content.decode()
    assert f"/documents/{statement.document_id}/" in detail
    listing = client.get(f"/staff/statements/participant/{alice.person.pk}/").content.decode()
    assert f"/documents/{statement.document_id}/" in listing and "Quarterly account statement" in listing
