"""Issue 11, staff side: the menu shows only what a role may open, the 403 page says what is missing, the
dashboard is a work queue with counts and links, the audit log filters and pages, sample files import."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from core.audit import audit_record
from core.audit_links import audit_actions
from core.imports import import_file, importer_for
from core.imports.runner import IMPORTERS
from core.models import AuditEvent, ImportBatch, JobRun
from core.roles import Role
from core.templatetags.nav import link_allowed
from participants.models import Person
from tests.factories import FundFactory, ParticipationFactory, PersonFactory
from tests.pages.conftest import STAFF_ROLES, client_of, make_user

pytestmark = pytest.mark.django_db

MENU = re.compile(r'<nav class="mainnav"[^>]*>(.*?)</nav>', re.S)


def menu_links(html: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', MENU.search(html).group(1))


@pytest.mark.parametrize("role", STAFF_ROLES)
def test_no_menu_item_leads_to_a_403(role):
    client = client_of(make_user(f"m-{role.value}", role))
    links = menu_links(client.get(reverse("core:dashboard")).content.decode())
    assert len(links) >= 10
    for url in links:
        if url.startswith("/admin/"):
            continue  # the admin is linked only for its is_staff users (none here)
        assert client.get(url).status_code == 200, url


def test_the_menu_is_grouped_and_each_role_sees_its_own_items():
    committee = client_of(make_user("c", Role.COMMITTEE)).get(reverse("core:dashboard")).content.decode()
    admin = client_of(make_user("a", Role.ADMINISTRATOR)).get(reverse("core:dashboard")).content.decode()
    auditor = client_of(make_user("u", Role.AUDITOR)).get(reverse("core:dashboard")).content.decode()
    for area in ("Work", "People", "Money", "Claims", "Plans"):
        assert f"<summary>{area}</summary>" in auditor
    imports = f'href="{reverse("core:imports")}"'
    locks = f'href="{reverse("core:signin_locks")}"'
    assert imports in admin and imports not in committee and imports not in auditor
    assert locks in admin and locks in committee and locks not in auditor
    assert "Skip to main content" in auditor and 'id="main"' in auditor


def test_the_403_page_names_the_missing_capability_and_links_back():
    client = client_of(make_user("aud", Role.AUDITOR))
    response = client.get(reverse("core:imports"), HTTP_REFERER="http://testserver/staff/audit/")
    body = response.content.decode()
    assert response.status_code == 403
    assert "import_data" in body and "import participant, price and payroll files" in body
    assert "administrator" in body  # the role that holds it
    assert 'href="http://testserver/staff/audit/"' in body
    elsewhere = client.get(reverse("core:imports"), HTTP_REFERER="https://evil.example/").content.decode()
    assert "evil.example" not in elsewhere and f'href="{reverse("home")}"' in elsewhere


def _queue(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-queue="(\w+)".*?data-count>(?:<a [^>]*>)?(\d+)', html, re.S))


def test_the_dashboard_counts_the_work_waiting(edcp):
    now = timezone.now()
    JobRun.objects.create(
        kind="crediting", key="2026-01-15", status=JobRun.Status.FAILED, heartbeat_at=now, started_at=now
    )
    for i in range(2):
        ImportBatch.objects.create(
            kind="prices",
            file_name=f"p{i}.csv",
            sha256=str(i),
            status="refused",
            uploaded_by="x",
            uploaded_at=now,
        )
    ImportBatch.objects.create(
        kind="prices",
        file_name="old.csv",
        sha256="o",
        status="refused",
        uploaded_by="x",
        uploaded_at=now - dt.timedelta(days=90),
    )
    admin = client_of(make_user("adm", Role.ADMINISTRATOR))
    html = admin.get(reverse("core:dashboard")).content.decode()
    counts = _queue(html)
    assert counts == {
        "jobs": "1",
        "imports": "2",
        "runs": "0",
        "held": "0",
        "emergencies": "0",
        "claims": "0",
    }
    assert f'href="{reverse("core:imports")}?status=refused"' in html
    # the auditor sees the count of refused files but no link to the upload page they may not open
    auditor = client_of(make_user("aud", Role.AUDITOR)).get(reverse("core:dashboard")).content.decode()
    assert _queue(auditor)["imports"] == "2"
    assert f'href="{reverse("core:imports")}?status=refused"' not in auditor


def test_link_allowed_follows_the_views_capability():
    auditor = make_user("aud", Role.AUDITOR)
    assert link_allowed(auditor, reverse("core:audit_log"))
    assert not link_allowed(auditor, reverse("core:imports"))
    assert not link_allowed(auditor, reverse("admin:index"))


def test_the_audit_log_filters_by_actor_action_participant_and_dates_and_pages(edcp):
    person = PersonFactory(employee_number="A77")
    participation = ParticipationFactory(person=person, plan=edcp)
    other = PersonFactory(employee_number="B88")
    at = timezone.now() - dt.timedelta(days=3)
    audit_record(action="person.change", actor="ada", at=at, obj=person)
    audit_record(action="participation.enter", actor="bo", at=at, obj=participation)
    audit_record(action="person.change", actor="ada", at=at, obj=other)
    for i in range(60):
        audit_record(action="bulk.thing", actor="job", at=at - dt.timedelta(days=10, minutes=i))
    client = client_of(make_user("aud", Role.AUDITOR))
    url = reverse("core:audit_log")

    def shown(**query) -> set[str]:
        html = client.get(url, query).content.decode()
        return set(re.findall(r'data-event="(\d+)"', html))

    def ids(**filters) -> set[str]:
        return {str(pk) for pk in AuditEvent.objects.filter(**filters).values_list("pk", flat=True)}

    assert shown(actor="ADA") == ids(actor_label="ada")
    assert shown(action="participation.enter") == ids(action="participation.enter")
    assert shown(participant="A77") == ids(action__in=["participation.enter"]) | ids(
        object_id=str(person.pk), object_type="participants.Person"
    )
    day = timezone.localdate(at)
    assert shown(**{"from": day.isoformat(), "to": day.isoformat()}) == ids(at__date=day)
    assert len(shown(**{"from": day.isoformat(), "to": day.isoformat()})) == 3
    before = client.get(url, {"to": (day - dt.timedelta(days=1)).isoformat()}).content.decode()
    assert "60 events, page 1 of 2." in before
    first = client.get(url).content.decode()
    assert len(re.findall(r'data-event="', first)) == 50 and "page=2" in first
    second = client.get(url, {"page": 2}).content.decode()
    assert len(re.findall(r'data-event="', second)) == AuditEvent.objects.count() - 50 >= 13
    assert f'href="{reverse("participants_staff:detail", args=[person.pk])}"' in first
    assert f'href="{reverse("elections_staff:participant", args=[participation.pk])}"' in first
    assert "No participant has employee number ZZ" in client.get(url, {"participant": "ZZ"}).content.decode()


def test_every_import_kind_has_a_sample_file_that_imports_cleanly(edcp):
    FundFactory(plan=edcp, code="SV", name="Stable Value", is_default=True)
    client = client_of(make_user("aud", Role.AUDITOR))
    assert set(IMPORTERS) == {k for k in IMPORTERS if importer_for(k).sample}
    order = ["participants", "key_employees", "prices", "payroll", "pension_figures"]
    assert sorted(order) == sorted(IMPORTERS)
    for kind in order:
        response = client.get(reverse("core:import_sample", args=[kind]))
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        header = response.content.decode().splitlines()[0].split(",")
        importer = importer_for(kind)
        assert header == [*importer.required, *importer.optional]
        batch = import_file(
            kind=kind,
            file_name=f"sample-{kind}.csv",
            content=response.content,
            actor="test",
            now=timezone.now(),
        )
        assert batch.status == ImportBatch.Status.APPLIED, (kind, batch.errors)
        assert batch.rows_applied == len(importer.sample), kind
    assert Person.objects.get(employee_number="S1001").participations.get().plan.code == "EDCP"
    page = client.get(reverse("core:import_samples")).content.decode()
    for kind in order:
        assert reverse("core:import_sample", args=[kind]) in page
    assert client.get(reverse("core:import_sample", args=["nothing"])).status_code == 404


def test_the_audit_logs_action_filter_lists_each_action_once_in_order():
    """core.audit_links.audit_actions walks the (action) index; it must list what a DISTINCT would."""
    now = timezone.now()
    for action in ("zeta.done", "alpha.start", "zeta.done", "mid.step", "alpha.start", "alpha.startx"):
        audit_record(action=action, actor="test", at=now)
    expected = list(AuditEvent.objects.order_by("action").values_list("action", flat=True).distinct())
    assert audit_actions() == expected
    assert expected[:1] == ["alpha.start"] and "zeta.done" in expected
    body = client_of(make_user("a", Role.AUDITOR)).get(reverse("core:audit_log")).content.decode()
    assert body.count('<option value="zeta.done"') == 1 and body.count('<option value="alpha.startx"') == 1
