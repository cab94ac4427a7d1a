"""Portal and staff pages and the API: they use the same services; a participant reaches only their own
elections (someone else's answer 404); staff pages need their capability."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import Document
from core.pdf import document_bytes
from core.report_files import report_file_run
from elections.models import (
    DeferralElection,
    DistributionElection,
    EnrollmentWindow,
    InvestmentElection,
    Status,
)
from elections.services import (
    deferral_election_submit,
    distribution_election_submit,
    election_confirmation_render,
    investment_election_submit,
    schedule_change_submit,
)
from tests.elections.factories import at, default_fund, participant
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

NOW = at(2026, 11, 10, 10)


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch):
    """The pages read the clock (only views may); pin it to a day when the 2027 enrollment is open."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)


@pytest.fixture
def fund(db):
    return default_fund()


@pytest.fixture
def alice_elections(alice, fund):
    d = deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 10},
        accounts=None,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    r = deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 80},
        accounts=None,
        submitted_at=at(2026, 11, 2),
        channel="portal",
        actor="alice",
    )
    p = distribution_election_submit(
        participation=alice,
        account="retirement_termination",
        form="lump_sum",
        installments=None,
        lump_sum_percent=None,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    distribution_election_submit(
        participation=alice,
        account="specified_date:2030-03",
        form="lump_sum",
        installments=None,
        lump_sum_percent=None,
        submitted_at=at(2026, 10, 1),
        channel="portal",
        actor="alice",
    )
    s = schedule_change_submit(
        participation=alice,
        account="specified_date:2030-03",
        new_month=dt.date(2035, 3, 1),
        submitted_at=at(2026, 11, 3),
        channel="portal",
        actor="alice",
    )
    i = investment_election_submit(
        participation=alice,
        allocation={fund.pk: 100},
        applies_to="both",
        submitted_at=at(2026, 11, 3),
        channel="portal",
        actor="alice",
    )
    doc = election_confirmation_render(election=d, actor="w", now=at(2026, 11, 1))
    return {
        "deferral": d,
        "refused": r,
        "distribution": p,
        "schedule_change": s,
        "investment": i,
        "document": doc,
    }


def client_for(client, user):
    sign_in(client, user)
    return client


# --- the portal ------------------------------------------------------------------------------------------------


def test_the_elections_page_shows_what_is_in_force_and_the_defaults(client, alice, fund):
    page = client_for(client, alice.person.user).get(reverse("elections_portal:home")).content.decode()
    assert "Plan year 2027" in page and "December 31, 2026" in page
    assert "default" in page and "no election made: this applies" in page  # the lump sum default, EDCP 5.1
    assert "EDCP 1.2" in page and "Surviving Spouse" in page  # who takes with no beneficiary


def test_enrolling_in_the_portal_stores_an_accepted_election_and_shows_its_confirmation(client, alice, fund):
    c = client_for(client, alice.person.user)
    form = c.get(
        reverse("elections_portal:enrol", args=["EDCP"]), {"year": 2027, "kind": "annual"}
    ).content.decode()
    assert "0% to 75%" in form and "EDCP 1.12" in form
    response = c.post(
        reverse("elections_portal:enrol", args=["EDCP"]),
        {
            "plan_year": "2027",
            "kind": "annual",
            "pct_base_salary": "12",
            "pct_monthly_bonus": "",
            "alloc_default": "60",
            "sd_month_1": "2031-03",
            "sd_percent_1": "40",
            "sd_1_form": "installments",
            "sd_1_installments": "3",
            "default_form": "installments",
            "default_installments": "5",
        },
    )
    election = DeferralElection.objects.get()
    assert response.status_code == 302 and election.status == Status.ACCEPTED and election.channel == "portal"
    assert {(d.account_kind, d.form, d.installments) for d in DistributionElection.objects.all()} == {
        ("retirement_termination", "installments", 5),
        ("specified_date", "installments", 3),
    }
    page = c.get(response["Location"]).content.decode()
    assert "Becomes irrevocable on" in page and "December 31, 2026, 11:59 p.m. Eastern Time" in page
    pdf = c.get(reverse("elections_portal:election_pdf", args=["deferral", election.pk]))
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert Document.objects.filter(kind="election_confirmation", object_id=str(election.pk)).count() == 1


def test_a_refusal_in_the_portal_names_the_section_and_what_would_be_accepted(client, alice, fund):
    c = client_for(client, alice.person.user)
    response = c.post(
        reverse("elections_portal:enrol", args=["EDCP"]),
        {"plan_year": "2027", "kind": "annual", "pct_base_salary": "80"},
        follow=True,
    )
    page = response.content.decode()
    assert "Refused under" in page and "EDCP 1.12" in page and "Choose 75% or less." in page
    assert "Nothing from this election is in force." in page


def test_a_refused_payment_schedule_refuses_the_whole_enrolment(client, alice, fund):
    c = client_for(client, alice.person.user)
    c.post(
        reverse("elections_portal:enrol", args=["EDCP"]),
        {
            "plan_year": "2027",
            "kind": "annual",
            "pct_base_salary": "10",
            "default_form": "installments",
            "default_installments": "12",
        },
    )
    election = DeferralElection.objects.get()
    assert (election.status, election.rule) == (Status.REJECTED, "EDCP 5.1(c)")
    assert "Payment schedule of Retirement/Termination Account" in election.message
    assert not DistributionElection.objects.exists()


def test_the_schedule_change_page_shows_the_earliest_accepted_date_before_submitting(
    client, alice, alice_elections
):
    c = client_for(client, alice.person.user)
    page = c.get(
        reverse("elections_portal:schedule_change", args=["EDCP"]), {"account": "specified_date:2030-03"}
    ).content.decode()
    # The account's current first payment is March 15, 2035 (after the accepted change): five years later is 2040.
    assert "March 15, 2040" in page and "March 15, 2034" in page and "EDCP 6.3" in page


def test_investments_and_payment_forms_are_elected_in_the_portal(client, alice, fund):
    c = client_for(client, alice.person.user)
    c.post(
        reverse("elections_portal:investments", args=["EDCP"]),
        {f"fund_{fund.pk}": "100", "applies_to": "future"},
    )
    c.post(
        reverse("elections_portal:payment", args=["EDCP"]),
        {
            "account": "retirement_termination",
            "dist_form": "lump_sum_and_installments",
            "dist_installments": "4",
            "dist_lump_sum_percent": "25",
        },
    )
    assert InvestmentElection.objects.get().applies_to == "future"
    assert DistributionElection.objects.get().lump_sum_percent == 25


def test_a_brp_participant_elects_the_form_of_benefit(client, db):
    p = participant("BRP", marital_status="single")
    c = client_for(client, p.person.user)
    page = c.get(reverse("elections_portal:annuity", args=["BRP"])).content.decode()
    assert "Single Life Annuity" in page and "the default" in page
    c.post(reverse("elections_portal:annuity", args=["BRP"]), {"form": "js_50", "defer_years": "0"})
    assert p.annuity_elections.get().status == Status.ACCEPTED


def test_the_blank_form_downloads_for_a_plan_the_participant_is_in(client, alice):
    response = client_for(client, alice.person.user).get(
        reverse("elections_portal:blank_form", args=["EDCP", 2027])
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"


# --- another participant -----------------------------------------------------------------------------------------


def _portal_urls(e) -> list[str]:
    urls = []
    for kind in ("deferral", "refused", "distribution", "schedule_change", "investment"):
        name = "deferral" if kind == "refused" else kind
        urls.append(reverse("elections_portal:election", args=[name, e[kind].pk]))
        urls.append(reverse("elections_api:mine_detail", args=[name, e[kind].pk]))
    urls.append(reverse("elections_portal:election_pdf", args=["deferral", e["deferral"].pk]))
    urls.append(reverse("document_download", args=[e["document"].pk]))
    return urls


def test_every_election_page_and_endpoint_answers_404_to_another_participant(client, alice_elections, bob):
    c = client_for(client, bob.person.user)
    for url in _portal_urls(alice_elections):
        assert c.get(url).status_code == 404, url


def test_the_owner_reaches_the_same_pages(client, alice, alice_elections):
    c = client_for(client, alice.person.user)
    for url in _portal_urls(alice_elections):
        assert c.get(url).status_code == 200, url


@pytest.mark.parametrize("name", ["enrol", "payment", "schedule_change", "investments", "annuity"])
def test_the_plan_pages_of_a_plan_one_is_not_in_answer_404(client, db, name):
    carol = participant("RRP")
    c = client_for(client, carol.person.user)
    assert (
        c.get(
            reverse(f"elections_portal:{name}", args=["EDCP"]), {"account": "retirement_termination"}
        ).status_code
        == 404
    )
    assert (
        c.post(reverse(f"elections_portal:{name}", args=["EDCP"]), {"plan_year": "2027"}).status_code == 404
    )
    assert not DeferralElection.objects.exists()


@pytest.mark.parametrize(
    "endpoint, body",
    [
        ("deferral", {"plan_year": 2027, "percentages": {"base_salary": "10"}}),
        ("distribution", {"account": "retirement_termination", "form": "lump_sum"}),
        ("investment", {"allocation": {"SV": "100"}}),
        ("schedule-change", {"account": "specified_date:2030-03", "new_month": "2035-03"}),
        ("annuity", {"form": "lump_sum", "defer_years": 5}),
    ],
)
def test_the_api_refuses_to_elect_in_a_plan_one_is_not_in(client, fund, endpoint, body):
    carol = participant("RRP")
    c = client_for(client, carol.person.user)
    plan = "BRP" if endpoint == "annuity" else "EDCP"
    response = c.post(
        f"/api/elections/mine/{endpoint}/", {"plan": plan, **body}, content_type="application/json"
    )
    assert response.status_code == 404
    preview = c.get(
        "/api/elections/mine/schedule-change/preview/", {"plan": "EDCP", "account": "retirement_termination"}
    )
    assert preview.status_code == 404
    assert not any(m.objects.exists() for m in (DeferralElection, DistributionElection, InvestmentElection))


def test_the_confirmation_is_queued_after_the_election_commits_and_the_task_renders_it(
    client, alice, fund, monkeypatch, django_capture_on_commit_callbacks
):
    from elections import tasks

    queued = []
    monkeypatch.setattr(tasks.election_confirmation_task, "delay", lambda *args: queued.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        client_for(client, alice.person.user).post(
            "/api/elections/mine/deferral/",
            {"plan": "EDCP", "plan_year": 2027, "percentages": {"base_salary": 10}},
            content_type="application/json",
        )
    election = DeferralElection.objects.get()
    assert queued == [("elections.DeferralElection", election.pk)]
    result = tasks.election_confirmation_task(*queued[0])
    assert Document.objects.get(pk=result["document"]).object_id == str(election.pk)


def test_staff_pages_are_closed_to_participants(client, alice, alice_elections):
    c = client_for(client, alice.person.user)
    for url in [
        reverse("elections_staff:windows"),
        reverse("elections_staff:participant", args=[alice.pk]),
        reverse("elections_staff:election", args=["deferral", alice_elections["deferral"].pk]),
        reverse("elections_staff:export", args=["EDCP", 2027]),
        "/api/elections/deferral/",
    ]:
        assert c.get(url).status_code == 403, url


def test_portal_pages_are_closed_to_staff_without_a_person(client, administrator):
    assert client_for(client, administrator).get(reverse("elections_portal:home")).status_code == 403


# --- the API -----------------------------------------------------------------------------------------------------


def test_the_api_accepts_with_201_and_refuses_with_422_and_the_section(client, alice, fund):
    c = client_for(client, alice.person.user)
    ok = c.post(
        "/api/elections/mine/deferral/",
        {"plan": "EDCP", "plan_year": 2027, "percentages": {"base_salary": 10}},
        content_type="application/json",
    )
    bad = c.post(
        "/api/elections/mine/deferral/",
        {"plan": "EDCP", "plan_year": 2027, "percentages": {"base_salary": "10.5"}},
        content_type="application/json",
    )
    assert ok.status_code == 201 and ok.json()["irrevocable_at"].startswith("2026-12-31T23:59:59")
    assert (
        bad.status_code == 422
        and bad.json()["rule"] == "EDCP 1.12"
        and "whole number" in bad.json()["message"]
    )
    assert DeferralElection.objects.filter(status=Status.REJECTED).count() == 1
    mine = c.get("/api/elections/mine/").json()
    assert {e["status"] for e in mine} == {"accepted", "rejected"}


def test_the_api_previews_the_earliest_schedule_change(client, alice, alice_elections):
    c = client_for(client, alice.person.user)
    preview = c.get(
        "/api/elections/mine/schedule-change/preview/", {"plan": "EDCP", "account": "specified_date:2030-03"}
    )
    assert preview.json()["earliest_allowed"] == "2040-03-15"


def test_staff_open_windows_through_the_api_only_with_manage_plans(client, administrator, committee):
    body = {
        "plan": "EDCP",
        "plan_year": 2027,
        "kind": "annual",
        "opens_at": "2026-11-01T09:00:00-04:00",
        "closes_at": "2027-01-01T00:00:00-05:00",
    }
    assert (
        client_for(client, administrator)
        .post("/api/elections/windows/", body, content_type="application/json")
        .status_code
        == 403
    )
    refused = client_for(client, committee).post(
        "/api/elections/windows/", body, content_type="application/json"
    )
    assert refused.status_code == 422 and refused.json()["rule"] == "EDCP 3.2(b)"
    body["closes_at"] = "2026-12-15T17:00:00-05:00"
    assert client.post("/api/elections/windows/", body, content_type="application/json").status_code == 201


def test_staff_key_a_paper_election_through_the_api(client, administrator, alice):
    response = client_for(client, administrator).post(
        "/api/elections/deferral/",
        {
            "participation": alice.pk,
            "plan_year": 2027,
            "percentages": {"base_salary": 7},
            "received_at": "2026-11-09T23:59:00-05:00",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert DeferralElection.objects.get().channel == "staff"


# --- staff screens ------------------------------------------------------------------------------------------------


def test_staff_open_a_window_and_are_refused_one_past_the_deadline(client, committee):
    c = client_for(client, committee)
    data = {
        "plan": "",
        "plan_year": "2027",
        "kind": "annual",
        "opens": "2026-11-01T09:00",
        "closes": "2027-01-01T00:00",
        "reminder_days": "14, 7, 1",
    }
    from plans.models import Plan

    data["plan"] = str(Plan.objects.get(code="EDCP").pk)
    page = c.post(reverse("elections_staff:windows"), data).content.decode()
    assert "EDCP 3.2(b)" in page and not EnrollmentWindow.objects.exists()
    data["closes"] = "2026-12-31T23:59"
    assert c.post(reverse("elections_staff:windows"), data).status_code == 302
    assert EnrollmentWindow.objects.get().reminder_days == [14, 7, 1]


def test_an_auditor_sees_windows_but_cannot_open_one(client, auditor):
    c = client_for(client, auditor)
    assert c.get(reverse("elections_staff:windows")).status_code == 200
    assert c.post(reverse("elections_staff:windows"), {}).status_code == 403


def test_the_plan_year_screen_shows_who_elected_who_did_not_and_totals(
    client, auditor, alice, bob, alice_elections
):
    page = (
        client_for(client, auditor)
        .get(reverse("elections_staff:plan_year", args=["EDCP", 2027]))
        .content.decode()
    )
    assert "Alice Archer" in page and "Bob Baker" in page
    assert "10.0%" in page  # average base salary deferral among those deferring


def test_the_payroll_export_lists_the_percentages_in_force(client, auditor, alice, alice_elections):
    response = client_for(client, auditor).get(reverse("elections_staff:export", args=["EDCP", 2027]))
    streamed = b"".join(response.streaming_content)
    rows = list(csv.DictReader(io.StringIO(streamed.decode())))
    # Prepared as a file by the report job (core.report_files): the same bytes.
    run = report_file_run(name="elections_export", args=["EDCP", "2027"], now=timezone.now())
    assert document_bytes(Document.objects.get(pk=run.stats["document"])) == streamed
    assert [(r["employee_number"], r["component"], r["percent"]) for r in rows] == [
        (alice.person.employee_number, "base_salary", "10")
    ]
    assert rows[0]["irrevocable_at"].startswith("2026-12-31T23:59:59")


def test_refused_elections_are_listed_with_their_reasons(client, auditor, alice_elections):
    page = client_for(client, auditor).get(reverse("elections_staff:refused")).content.decode()
    assert "EDCP 1.12" in page and "at most 75%" in page


def test_a_paper_election_needs_record_events_and_uses_the_received_time(
    client, administrator, auditor, alice, fund
):
    url = reverse("elections_staff:paper", args=[alice.pk, "deferral"])
    data = {"received_at": "2026-11-09T16:30", "plan_year": "2027", "kind": "annual", "pct_base_salary": "9"}
    assert client_for(client, auditor).post(url, data).status_code == 403
    client.logout()
    assert client_for(client, administrator).post(url, data).status_code == 302
    e = DeferralElection.objects.get()
    assert e.channel == "staff" and e.submitted_at == at(2026, 11, 9, 16, 30) and e.actor == "admin1"


def test_a_paper_form_received_in_the_future_is_not_recorded(client, administrator, alice):
    client_for(client, administrator).post(
        reverse("elections_staff:paper", args=[alice.pk, "deferral"]),
        {"received_at": "2026-11-11T09:00", "plan_year": "2027", "pct_base_salary": "9"},
    )
    assert not DeferralElection.objects.exists()


def test_the_committee_cancels_deferrals_from_the_staff_screen(client, committee, alice):
    client_for(client, committee).post(
        reverse("elections_staff:cancel_deferrals", args=[alice.pk]),
        {"ground": "emergency", "event_on": "2026-11-05", "reason": "house fire"},
    )
    assert alice.deferral_cancellations.get().ends_on == dt.date(2026, 12, 31)


def test_staff_pages_of_a_participant_render(client, administrator, alice, alice_elections):
    c = client_for(client, administrator)
    assert c.get(reverse("elections_staff:participant", args=[alice.pk])).status_code == 200
    assert (
        c.get(
            reverse("elections_staff:election", args=["deferral", alice_elections["refused"].pk])
        ).status_code
        == 200
    )
    pdf = c.get(
        reverse("elections_staff:election_pdf", args=["investment", alice_elections["investment"].pk])
    )
    assert pdf.status_code == 200
    assert (
        c.get(reverse("elections_staff:blank_form", args=["EDCP", 2027]))["Content-Type"] == "application/pdf"
    )


def test_a_brp_participants_staff_page_offers_the_form_of_benefit(client, administrator, db):
    p = participant("BRP")
    c = client_for(client, administrator)
    assert "Form of benefit" in c.get(reverse("elections_staff:participant", args=[p.pk])).content.decode()
    c.post(
        reverse("elections_staff:paper", args=[p.pk, "annuity"]),
        {"received_at": "2026-11-01T10:00", "form": "period_certain_120", "defer_years": "0"},
    )
    assert p.annuity_elections.get().channel == "staff"


def test_staff_send_the_notice_of_eligibility(client, administrator, alice):
    client_for(client, administrator).post(
        reverse("elections_staff:notice", args=[alice.pk]), {"notice_on": "2026-11-10"}
    )
    alice.refresh_from_db()
    assert alice.eligible_on == dt.date(2026, 11, 10)
    assert json.dumps(list(alice.election_notices.values_list("kind", flat=True))) == '["eligibility"]'


def test_staff_see_deferrals_payroll_reduced_to_the_cash_pay_left_after_taxes(client, auditor, alice, fund):
    from decimal import Decimal

    from books.services.payroll import pay_record

    deferral_election_submit(
        participation=alice,
        plan_year=2026,
        percentages={"base_salary": 75},
        accounts=None,
        submitted_at=at(2025, 12, 1),
        channel="portal",
        actor="alice",
    )
    pay_record(
        person=alice.person,
        pay_date=dt.date(2026, 3, 13),
        component="base_salary",
        gross=Decimal("10000.00"),
        net_available=Decimal("6000.00"),
        actor="payroll",
    )
    c = client_for(client, auditor)
    year_page = c.get(reverse("elections_staff:plan_year", args=["EDCP", 2026])).content.decode()
    person_page = c.get(reverse("elections_staff:participant", args=[alice.pk])).content.decode()
    for page in (year_page, person_page):
        assert "1500.00" in page and "reduced from 7500.00 to 6000.00" in page and "EDCP 1.14" in page
