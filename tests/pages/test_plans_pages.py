"""The plan page lists every provision of the version in force on the chosen date; committee tables
(dated figures, plan tables, market closures) change only through services, for MAINTAIN_TABLES."""

from __future__ import annotations

import datetime as dt
import html
from decimal import Decimal

import pytest
from django.urls import reverse

from core import valuation_calendar as cal
from core.models import AuditEvent, MarketClosure
from core.roles import Role
from plans.models import DatedFigure, Plan, PlanTable

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_closures():
    cal.forget_closures()
    yield
    cal.forget_closures()


def test_the_plan_page_lists_every_provision_of_the_version_in_force_with_its_citation(staff, edcp):
    version = edcp.version_on(dt.date(2025, 1, 1))
    page = html.unescape(
        staff[Role.AUDITOR]
        .get(reverse("plans_staff:plan", args=["EDCP"]) + "?on=2025-01-01")
        .content.decode()
    )
    assert version.title in page
    provisions = list(version.provisions.all())
    assert len(provisions) > 30
    for p in provisions:
        assert f'id="p-{p.key}"' in page and p.label in page and p.citation in page, p.key
    for p in provisions:
        if p.reading:
            assert p.reading in page
    assert version.sections.count() == page.count('class="plans-section"')


def test_the_date_picker_shows_the_version_in_force_on_that_date(staff, edcp):
    client = staff[Role.AUDITOR]
    old = html.unescape(
        client.get(reverse("plans_staff:plan", args=["EDCP"]) + "?on=2015-06-01").content.decode()
    )
    new = html.unescape(
        client.get(reverse("plans_staff:plan", args=["EDCP"]) + "?on=2024-08-01").content.decode()
    )
    assert "effective January 1, 2011" in old and "In force on June 1, 2015" in old
    assert "effective August 1, 2024" in new


def test_list_and_object_values_render_as_tables(staff):
    page = (
        staff[Role.AUDITOR].get(reverse("plans_staff:plan", args=["RRP"]) + "?on=2018-01-01").content.decode()
    )
    assert '<table class="data plans-value">' in page  # accounts: a list of objects
    assert '<table class="compact plans-value">' in page  # matching: an object


def test_an_administrator_records_a_dated_figure_and_it_is_audited_with_history(staff):
    response = staff[Role.ADMINISTRATOR].post(
        reverse("plans_staff:figure_save"),
        {
            "code": "401(a)(17)",
            "year": 2027,
            "amount": "370000.00",
            "source": "IRS Notice 2026-99",
            "reason": "COLA",
        },
    )
    assert response.status_code == 302
    figure = DatedFigure.objects.get(code="401(a)(17)", year=2027)
    assert figure.amount == Decimal("370000.00")
    assert figure.history.first().history_user.username == "administrator"
    assert AuditEvent.objects.filter(
        action="figure.set", actor__username="administrator", reason="COLA"
    ).exists()


def test_an_auditor_cannot_change_a_figure(staff):
    response = staff[Role.AUDITOR].post(
        reverse("plans_staff:figure_save"),
        {"code": "401(a)(17)", "year": 2026, "amount": "1.00", "source": "x"},
    )
    assert response.status_code == 403
    assert DatedFigure.objects.get(code="401(a)(17)", year=2026).amount == Decimal("360000.00")


def test_a_figure_with_fractions_of_a_cent_is_refused_with_the_reason(staff):
    response = staff[Role.COMMITTEE].post(
        reverse("plans_staff:figure_save"), {"code": "402(g)(1)", "year": 2026, "amount": "0", "source": "x"}
    )
    assert response.status_code == 400
    assert "must be a positive amount" in response.content.decode()


def test_a_committee_member_records_a_new_dated_version_of_a_plan_table(staff, edcp):
    table = PlanTable.objects.get(plan=edcp, code="rsp_matching_vesting")
    response = staff[Role.COMMITTEE].post(
        reverse("plans_staff:table_save", args=[table.pk]),
        {
            "effective_date": "2027-01-01",
            "rows": "0, 0\n1, 50\n2, 100",
            "citation": "EDCP 4.2",
            "description": "graded",
        },
    )
    assert response.status_code == 302
    new = PlanTable.objects.get(plan=edcp, code="rsp_matching_vesting", effective_date=dt.date(2027, 1, 1))
    assert new.rows == [["0", "0"], ["1", "50"], ["2", "100"]]
    assert PlanTable.objects.get(pk=table.pk).rows == table.rows  # the earlier version is kept as it was
    assert AuditEvent.objects.filter(action="plan_table.set", object_id=str(new.pk)).exists()


def test_a_table_row_that_is_not_a_percentage_is_refused_naming_the_line(staff, edcp):
    table = PlanTable.objects.get(plan=edcp, code="rsp_matching_vesting")
    response = staff[Role.COMMITTEE].post(
        reverse("plans_staff:table_save", args=[table.pk]),
        {"effective_date": "2027-01-01", "rows": "0, 0\n2, 150", "citation": "EDCP 4.2"},
    )
    assert response.status_code == 400
    assert "line 2: value &#x27;150&#x27; is not a percentage" in response.content.decode()
    assert not PlanTable.objects.filter(effective_date=dt.date(2027, 1, 1)).exists()


def test_a_market_closure_makes_the_day_no_valuation_date_and_can_be_removed(staff):
    day = dt.date(2031, 6, 4)
    assert cal.is_valuation_date(day)
    client = staff[Role.ADMINISTRATOR]
    assert (
        client.post(
            reverse("plans_staff:closure_add"), {"date": day.isoformat(), "reason": "Storm"}
        ).status_code
        == 302
    )
    assert not cal.is_valuation_date(day)
    closure = MarketClosure.objects.get(date=day)
    assert client.post(reverse("plans_staff:closure_remove", args=[closure.pk])).status_code == 302
    assert cal.is_valuation_date(day)
    assert list(
        AuditEvent.objects.filter(action__startswith="market_closure").values_list("action", flat=True)
    ) == ["market_closure.remove", "market_closure.add"]


def test_a_closure_on_a_date_already_credited_is_refused(staff, books):
    response = staff[Role.ADMINISTRATOR].post(
        reverse("plans_staff:closure_add"), {"date": "2026-01-15", "reason": "too late"}
    )
    assert response.status_code == 400
    assert "through 2026-01-16 are credited" in response.content.decode()
    assert not MarketClosure.objects.exists()


def test_an_auditor_cannot_record_a_closure(staff):
    response = staff[Role.AUDITOR].post(
        reverse("plans_staff:closure_add"), {"date": "2031-06-04", "reason": "x"}
    )
    assert response.status_code == 403
    assert not MarketClosure.objects.exists()


def test_the_funds_page_shows_the_default_fund_and_latest_price_with_a_chart(staff, books):
    page = (
        staff[Role.AUDITOR].get(reverse("plans_staff:funds", args=["EDCP"]) + "?days=20000").content.decode()
    )
    assert "default (capital preservation)" in page
    assert "22.000000" in page
    assert page.count('<svg class="chart"') == Plan.objects.get(code="EDCP").funds.count()
