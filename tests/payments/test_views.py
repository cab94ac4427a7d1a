"""Pages: the portal calendar shows only the participant's own payments; staff pages need their capability."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from core.models import Document
from core.pdf import document_bytes
from core.report_files import report_file_run
from participants.models import Person
from tests.payments.factories import deferrals, replayed_once, scenario, simulate, staff_user
from tests.report_pages import computed
from tests.signin import sign_in

pytestmark = pytest.mark.django_db


def _two_people_history() -> None:
    people = {p: {"birth_date": "1968-04-10", "hire_date": "2012-03-01"} for p in ("P1", "P2")}
    events = (
        deferrals("P1", gross="20000.00")
        + deferrals("P2", gross="12000.00")
        + [
            {"on": "2026-04-10", "type": "separation", "participant": p, "reason": "resignation"}
            for p in ("P1", "P2")
        ]
    )
    simulate(scenario(participants=people, events=events, through="2026-05-08"))


@pytest.fixture
def two_people(db):
    """TestTwoSeparatedPeople's history (replayed once for the class)."""


def _participant_client(client, employee_number: str):
    user = get_user_model().objects.create_user(
        username=f"u{employee_number}", password="a-long-test-password"
    )
    user.groups.add(Group.objects.get_or_create(name="participant")[0])
    Person.objects.filter(employee_number=employee_number).update(user=user)
    sign_in(client, user)
    return client


class TestTwoSeparatedPeople:
    """P1 and P2 separated 2026-04-10 (_two_people_history), replayed once for the class."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _replayed(cls, django_db_setup, django_db_blocker):
        with replayed_once(django_db_blocker, _two_people_history):
            yield

    def test_the_portal_calendar_shows_each_payment_with_its_reason_and_section_and_nobody_elses(
        self, client, two_people
    ):
        page = _participant_client(client, "P1").get("/portal/payments/").content.decode()
        assert (
            "$60,000.00" in page
            and "EDCP 5.1(b)" in page
            and "the 15th of the month after separation" in page
        )
        assert "36,000.00" not in page  # P2's lump sum

    def test_staff_pages_answer_for_staff_and_refuse_participants(self, client, two_people):
        sign_in(client, staff_user("audrey", "auditor"))
        for url in (
            "/staff/payments/?start=2026-05-01&end=2026-05-31",
            "/staff/payments/held/",
            "/staff/payments/runs/",
            "/staff/payments/forecast/",
            "/staff/payments/participant/?q=P1",
            "/staff/payments/withholding/",
        ):
            assert client.get(url).status_code == 200, url
        # The CSV is the file the report job prepared (core.report_files), from today; until then, the page.
        response = client.get("/staff/payments/forecast/?format=csv&by=year")
        assert response.status_code == 302 and response["Location"] == "/staff/payments/forecast/"
        run = report_file_run(
            name="forecast_by_year", args=[timezone.localdate().isoformat()], now=timezone.now()
        )
        response = client.get("/staff/payments/forecast/?format=csv&by=year")
        assert response["Location"] == f"/documents/{run.stats['document']}/"
        csv_text = document_bytes(Document.objects.get(pk=run.stats["document"])).decode()
        assert csv_text.startswith("year,gross") and csv_text.count("\n") == 11  # ten years
        assert client.post("/staff/payments/runs/prepare", {"period_end": "2026-05-15"}).status_code == 403
        _participant_client(client, "P2")
        assert client.get("/staff/payments/").status_code == 403

    def test_the_forecast_chart_is_server_rendered_svg(
        self, client, two_people, eager_jobs, django_capture_on_commit_callbacks
    ):
        sign_in(client, staff_user("audrey", "auditor"))
        before = client.get("/staff/payments/forecast/").content.decode()
        assert "Compute the report" in before and "<svg" not in before  # not computed in the request
        page = computed(client, "/staff/payments/forecast/", django_capture_on_commit_callbacks)
        assert "the forecast from" in page and "CSV by month" in page
        main = page.split("<main", 1)[1].split("</main>", 1)[0]  # base.html loads ui.js after </main>
        assert page.count("<svg") == 2 and "<script" not in main
