"""The ways in: management commands, the API, the staff upload page; the API schema and its vendored UI."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from core.models import ImportBatch
from core.roles import Role
from plans.models import FundPrice
from tests.imports.conftest import csv_bytes, user_with
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
GOOD = csv_bytes("fund,date,price", "SV,2024-05-30,10.00", "EQ,2024-05-30,20.00")
BAD = csv_bytes("fund,date,price", "SV,2024-05-30,10.00", "XX,2024-05-30,1", "EQ,2024-05-30,0")


def client_for(role: Role | None, name: str) -> Client:
    client = Client()
    sign_in(client, user_with(role, name))
    return client


def test_import_command_exits_1_on_refusal_printing_every_bad_row(funds, tmp_path):
    path = tmp_path / "prices.csv"
    path.write_bytes(BAD)
    err = io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_prices", str(path), stderr=err, stdout=io.StringIO())
    assert refused.value.returncode == 1
    assert "prices.csv was refused (2 problems); nothing was applied" in str(refused.value)
    assert err.getvalue().splitlines() == [
        "Line 3: there is no fund 'XX'",
        "Line 4: price must be more than zero, not 0",
    ]
    assert FundPrice.objects.count() == 0


def test_import_command_applies_a_good_file_and_says_so_once(funds, tmp_path):
    path = tmp_path / "prices.csv"
    path.write_bytes(GOOD)
    out = io.StringIO()
    call_command("import_prices", str(path), stdout=out)
    call_command("import_prices", str(path), stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("prices.csv: 2 lines applied, 0 already on file")
    assert "already applied" in lines[1]
    assert FundPrice.objects.count() == 2


@pytest.mark.parametrize("command", ["import_participants", "import_payroll", "import_key_employees"])
def test_every_import_command_refuses_a_bad_file_with_exit_1(command, tmp_path, db):
    path = tmp_path / "x.csv"
    path.write_bytes(csv_bytes("employee_number,nonsense", "E1,2"))
    with pytest.raises(CommandError) as refused:
        call_command(command, str(path), stderr=io.StringIO(), stdout=io.StringIO())
    assert refused.value.returncode == 1


def test_the_api_applies_a_multipart_upload_and_refuses_a_bad_one_listing_each_line(funds):
    api = client_for(Role.ADMINISTRATOR, "admin1")
    from django.core.files.uploadedfile import SimpleUploadedFile

    good = api.post("/api/plans/imports/prices/", {"file": SimpleUploadedFile("p.csv", GOOD)})
    assert good.status_code == 201, good.content
    assert (good.json()["status"], good.json()["rows_applied"]) == ("applied", 2)
    again = api.post("/api/plans/imports/prices/", {"file": SimpleUploadedFile("p.csv", GOOD)})
    assert (again.status_code, again.json()["status"]) == (200, "duplicate")
    bad = api.post("/api/plans/imports/prices/", {"file": SimpleUploadedFile("bad.csv", BAD)})
    assert bad.status_code == 400
    assert [e["message"] for e in bad.json()["errors"]] == [
        "Line 3: there is no fund 'XX'",
        "Line 4: price must be more than zero, not 0",
    ]
    detail = api.get(f"/api/plans/imports/prices/{bad.json()['id']}/")
    assert detail.json()["status"] == "refused"
    assert FundPrice.objects.count() == 2


def test_the_api_takes_a_csv_body(funds):
    api = client_for(Role.ADMINISTRATOR, "admin1")
    response = api.post("/api/plans/imports/prices/?name=may.csv", data=GOOD, content_type="text/csv")
    assert response.status_code == 201, response.content
    assert response.json()["file_name"] == "may.csv"


@pytest.mark.parametrize(
    "url",
    [
        "/api/participants/imports/participants/",
        "/api/participants/imports/key-employees/",
        "/api/plans/imports/prices/",
        "/api/books/imports/payroll/",
    ],
)
def test_an_auditor_reads_imports_but_cannot_post_one(url, funds):
    from django.core.files.uploadedfile import SimpleUploadedFile

    auditor = client_for(Role.AUDITOR, "auditor1")
    assert auditor.get(url).status_code == 200
    assert auditor.post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}).status_code == 403
    committee = client_for(Role.COMMITTEE, "committee1")
    assert committee.post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}).status_code == 403
    assert Client().post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}).status_code in (401, 403)
    assert ImportBatch.objects.count() == 0


def test_the_staff_upload_page_shows_the_refusal_table_with_line_numbers(funds):
    from django.core.files.uploadedfile import SimpleUploadedFile

    admin = client_for(Role.ADMINISTRATOR, "admin1")
    assert admin.get("/staff/imports/").status_code == 200
    response = admin.post(
        "/staff/imports/", {"kind": "prices", "file": SimpleUploadedFile("bad.csv", BAD)}, follow=True
    )
    html = response.content.decode()
    assert "The file was refused and nothing was applied" in html
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td>(\w*)</td>\s*<td>([^<]*)</td></tr>', html)
    assert [(line, reason) for line, _, reason in rows] == [
        ("3", "there is no fund &#x27;XX&#x27;"),
        ("4", "price must be more than zero, not 0"),
    ]
    auditor = client_for(Role.AUDITOR, "auditor1")
    assert auditor.get("/staff/imports/").status_code == 403
    assert auditor.get(response.redirect_chain[-1][0]).status_code == 200


def test_the_openapi_schema_is_valid_and_lists_the_endpoints(db, tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = out.read_text()
    for path in (
        "/api/plans/imports/prices/",
        "/api/books/me/accounts/{id}/",
        "/api/participants/people/",
        "/api/books/accounts/{id}/entries/",
        "/api/books/job-runs/",
        "/api/claims/claims/",
        "/api/claims/claims/{id}/appeal/",
    ):
        assert f"{path}:" in schema


def test_the_swagger_ui_is_served_from_vendored_files_without_any_external_host(db, settings):
    staff = client_for(Role.AUDITOR, "auditor1")
    response = staff.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in html
    assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html) == []
    # The start-up script is a file (no inline script under the CSP); Swagger UI would otherwise call
    # validator.swagger.io.
    script = staff.get("/api/docs/?script=").content.decode()
    assert '"validatorUrl": null' in script
    assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", script) == []
    from django.contrib.staticfiles import finders

    for asset in (
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
        "swagger-ui.css",
        "favicon-32x32.png",
    ):
        assert finders.find(f"vendor/swagger-ui/{asset}"), asset
