"""Issue 12, finding 6: one bad import must not fill the database nor slow every staff page.

A file over the byte or row limit is refused before it is read; a file of bad rows stores at most the first
IMPORT_MAX_ERRORS_STORED problems (and says how many more there were); the dashboard does not read them; a
price of 1e400 is a row problem, not a crash.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from core.models import ImportBatch
from tests.imports.conftest import reasons, run
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
PRICES = ImportBatch.Kind.PRICES


def test_a_file_over_the_byte_limit_is_refused_unread(funds, settings):
    settings.IMPORT_MAX_BYTES = 1000
    batch = run(PRICES, "fund,date,price", *["SV,2024-05-30,10.00"] * 100)
    assert batch.status == ImportBatch.Status.REFUSED and batch.rows_total == 0
    assert len(batch.errors) == 1 and "the limit is 0 MB" not in batch.errors[0]["message"]
    assert "Split it into smaller files" in batch.errors[0]["message"]


def test_a_file_over_the_row_limit_is_refused_unread(funds, settings):
    settings.IMPORT_MAX_ROWS = 50
    batch = run(PRICES, "fund,date,price", *["XX,2024-05-30,10.00"] * 51)
    assert batch.status == ImportBatch.Status.REFUSED
    assert [e["message"] for e in batch.errors] == [
        "The file has 51 rows: the limit is 50. Split it into smaller files; nothing was applied."
    ]


def test_only_the_first_errors_are_stored_with_a_count_of_the_rest(funds, settings):
    settings.IMPORT_MAX_ERRORS_STORED = 20
    batch = run(PRICES, "fund,date,price", *[f"XX,2024-05-30,{n}" for n in range(1, 501)])
    assert batch.status == ImportBatch.Status.REFUSED and batch.rows_total == 500
    assert len(batch.errors) == 21
    assert batch.errors[0]["line"] == 2
    assert batch.errors[-1]["message"].startswith("... and 480 more problems not listed")


def test_a_price_of_1e400_is_a_row_problem(funds):
    batch = run(PRICES, "fund,date,price", "SV,2024-05-30,1e400")
    assert batch.status == ImportBatch.Status.REFUSED
    assert reasons(batch) == {2: ["Line 2: price 1e400 is too large"]}


def test_the_dashboard_does_not_read_a_refused_files_errors(funds, settings):
    from core.roles import Role
    from tests.pages.conftest import make_user

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    run(PRICES, "fund,date,price", *[f"XX,2024-05-30,{n}" for n in range(1, 300)])
    client = Client()
    sign_in(client, make_user("dash", Role.ADMINISTRATOR))
    for url in ("/staff/", "/staff/imports/"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        reads = [q["sql"] for q in queries.captured_queries if "core_importbatch" in q["sql"]]
        assert reads and all('"errors"' not in sql for sql in reads), reads
