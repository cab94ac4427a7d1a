"""Issue 11, preview then submit, for two more portal forms: the investment election (EDCP 7.4, 7.5) and the BRP form
of benefit (4.2(c), 4.2(d)). Each form starts from what is in force, shows every problem at once beside its field
(nothing stored: a typo is not a refused election), leads to a review of old against new, then submits; a submission
the plan refuses is stored as refused, with an English result page."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections
from django.urls import reverse
from django.utils import timezone

from core.audit import AuditEvent
from elections.models import AnnuityElection, InvestmentElection, Status
from elections.services import (
    annuity_election_submit,
    annuity_offer,
    annuity_preview,
    investment_election_submit,
    investment_preview,
)
from participants.services import employment_event_record
from plans import actuarial
from tests.elections.factories import at, default_fund, participant, set_provision, user_with_role
from tests.factories import FundFactory
from tests.pensions.factories import TOY, brp_participation
from tests.signin import browser_sign_in, sign_in

pytestmark = pytest.mark.django_db

NOW = at(2026, 4, 20, 10)  # a Monday: the next Valuation Date is Tuesday, April 21, 2026
INVEST = "elections_portal:investments"
ANNUITY = "elections_portal:annuity"


@pytest.fixture(autouse=True)
def frozen_now(request, monkeypatch):
    if request.node.get_closest_marker("browser"):
        return  # the browser keeps the real clock (its session cookie would expire at once)
    monkeypatch.setattr(timezone, "now", lambda: NOW)


@pytest.fixture
def alice(db):
    return participant(username="alice", first_name="Alice", last_name="Archer")


@pytest.fixture
def funds(db):
    return default_fund(), FundFactory(code="EQ", name="Equity Index")


def _client(client, participation):
    sign_in(client, participation.person.user)
    return client


def _counts():
    return (
        InvestmentElection.objects.count(),
        AnnuityElection.objects.count(),
        AuditEvent.objects.count(),
    )


def _page(response) -> str:
    return response.content.decode().replace("&#x27;", "'")


# --- investments ---------------------------------------------------------------------------------------------------


def _shares(sv, eq, sv_share, eq_share, **more):
    return {f"fund_{sv.pk}": sv_share, f"fund_{eq.pk}": eq_share, "applies_to": "both", **more}


def test_every_problem_of_an_investment_form_shows_at_once_beside_its_field_and_nothing_is_stored(
    client, alice, funds
):
    sv, eq = funds
    c = _client(client, alice)
    before = _counts()
    response = c.post(
        reverse(INVEST, args=["EDCP"]),
        _shares(sv, eq, "40.5", "50", applies_to="sometimes", fund_999999="10", action="review"),
    )
    page = _page(response)
    assert response.status_code == 400
    assert "3 problems to fix" in page and "nothing has been filed" in page
    assert f'id="fund_{sv.pk}-error"' in page and "whole percentage" in page and "(EDCP 7.4)" in page
    assert 'id="applies_to-error"' in page and "future credits, existing balances or both" in page
    assert "not on this plan's menu" in page and "(EDCP 7.5)" in page  # a fund not on the form: at the top
    assert 'value="40.5"' in page and 'value="50"' in page  # what was typed stays in the form
    assert _counts() == before


@pytest.mark.parametrize(
    "shares, words", [(("40", "50"), "90%, not 100% (10% short)"), (("70", "50"), "20% too much")]
)
def test_shares_that_do_not_add_up_say_by_how_much(client, alice, funds, shares, words):
    sv, eq = funds
    response = _client(client, alice).post(
        reverse(INVEST, args=["EDCP"]), _shares(sv, eq, *shares, action="review")
    )
    page = _page(response)
    assert response.status_code == 400 and 'id="total-error"' in page and words in page
    assert not InvestmentElection.objects.exists()


def test_the_plans_increment_is_asked_of_every_share(client, alice, funds):
    sv, eq = funds
    set_provision("EDCP", "investment_increment_percent", 5)
    page = _page(
        _client(client, alice).post(
            reverse(INVEST, args=["EDCP"]), _shares(sv, eq, "42", "58", action="review")
        )
    )
    assert "2 problems to fix" in page and page.count("in steps of 5%") == 2
    assert f'id="fund_{sv.pk}-error"' in page and f'id="fund_{eq.pk}-error"' in page


def test_the_form_starts_from_the_mix_in_force(client, alice, funds):
    sv, eq = funds
    investment_election_submit(
        participation=alice,
        allocation={sv.pk: 40, eq.pk: 60},
        applies_to="future",
        submitted_at=at(2026, 3, 2),
        channel="portal",
        actor="alice",
    )
    page = _page(_client(client, alice).get(reverse(INVEST, args=["EDCP"])))
    assert f'name="fund_{sv.pk}" id="fund_{sv.pk}" value="40"' in page
    assert f'name="fund_{eq.pk}" id="fund_{eq.pk}" value="60"' in page
    assert '<option value="future" selected>' in page
    assert f'aria-label="Share of {eq.code} {eq.name}, percent"' in page  # every input has a name


def test_a_good_form_leads_to_a_review_of_the_mix_old_against_new_and_its_valuation_date(
    client, alice, funds
):
    sv, eq = funds
    investment_election_submit(
        participation=alice,
        allocation={sv.pk: 40, eq.pk: 60},
        applies_to="both",
        submitted_at=at(2026, 3, 2),
        channel="portal",
        actor="alice",
    )
    c = _client(client, alice)
    before = _counts()
    response = c.post(reverse(INVEST, args=["EDCP"]), _shares(sv, eq, "20", "80", action="review"))
    page = _page(response)
    assert response.status_code == 200 and "Nothing is filed yet" in page and 'id="review-mix"' in page
    rows = page.split('id="review-mix"')[1].split("</table>")[0]
    assert (
        "40%" in rows and "60%" in rows and "<strong>20%</strong>" in rows and "<strong>80%</strong>" in rows
    )
    assert 'aria-label="New share of EQ: 80%"' in rows  # the bar has a text alternative
    assert "Tuesday, April 21, 2026" in page  # the next Valuation Date
    assert "exchanged into the new mix" in page  # applies to existing balances too
    assert f'name="fund_{eq.pk}" value="80"' in page and 'id="submit-investments"' in page
    assert _counts() == before


def test_change_it_returns_to_the_investment_form_with_what_was_typed(client, alice, funds):
    sv, eq = funds
    response = _client(client, alice).post(
        reverse(INVEST, args=["EDCP"]), _shares(sv, eq, "25", "75", action="edit")
    )
    page = _page(response)
    assert response.status_code == 200 and 'value="25"' in page and 'value="75"' in page
    assert 'id="form-errors"' not in page
    assert not InvestmentElection.objects.exists()


def test_submit_after_review_stores_the_election_and_the_result_page_links_its_confirmation(
    client, alice, funds
):
    sv, eq = funds
    c = _client(client, alice)
    response = c.post(
        reverse(INVEST, args=["EDCP"]), _shares(sv, eq, "20", "80", action="submit"), follow=True
    )
    election = InvestmentElection.objects.get()
    assert election.status == Status.ACCEPTED and election.effective_on == dt.date(2026, 4, 21)
    assert sorted(line.percent for line in election.lines.all()) == [20, 80]
    page = _page(response)
    assert "Accepted." in page and 'id="confirmation-pdf"' in page and "Valuation Date" in page


def test_a_refusal_submitted_after_review_is_stored_with_its_reason_in_english(client, alice, funds):
    sv, eq = funds
    response = _client(client, alice).post(
        reverse(INVEST, args=["EDCP"]), _shares(sv, eq, "30", "50", action="submit"), follow=True
    )
    election = InvestmentElection.objects.get()
    assert (election.status, election.rule) == (Status.REJECTED, "EDCP 7.4")
    page = _page(response)
    assert "Refused under" in page and "80%, not 100% (20% short)" in page
    assert "SV Stable Value: 30%" in page and "EQ Equity Index: 50%" in page  # fund names, not ids
    assert "{'" not in page and 'id="confirmation-pdf"' not in page


def test_the_investment_preview_writes_nothing_and_uses_the_submits_rules(alice, funds):
    sv, eq = funds
    before = _counts()
    preview = investment_preview(
        participation=alice, allocation={sv.pk: "30", eq.pk: "70"}, applies_to="future", as_of=NOW.date()
    )
    assert preview.ok and preview.allocation == {sv.pk: 30, eq.pk: 70}
    assert preview.effective_on == dt.date(2026, 4, 21)
    bad = investment_preview(
        participation=alice, allocation={sv.pk: "Infinity", eq.pk: "0.5"}, applies_to="both", as_of=NOW.date()
    )
    assert set(bad.errors) == {f"fund_{sv.pk}", f"fund_{eq.pk}"}
    assert _counts() == before


def test_the_staff_paper_investment_form_still_records(client, alice, funds):
    sv, eq = funds
    staff = user_with_role("clerk", "administrator")
    sign_in(client, staff)
    client.post(
        reverse("elections_staff:paper", args=[alice.pk, "investment"]),
        {
            "received_at": "2026-04-17T10:00",
            f"fund_{sv.pk}": "50",
            f"fund_{eq.pk}": "50",
            "applies_to": "both",
        },
    )
    election = InvestmentElection.objects.get()
    assert election.channel == "staff" and election.status == Status.ACCEPTED


# --- the BRP form of benefit ---------------------------------------------------------------------------------------


@pytest.fixture
def toy_basis(monkeypatch):
    """The quote's factors on the toy table at 0% (tests/pensions/factories.py)."""
    monkeypatch.setattr(actuarial, "mortality_table", lambda year: (TOY, ""))
    monkeypatch.setattr(
        actuarial,
        "segment_rates_for",
        lambda day, lookback=1, boundaries=(5, 20): (actuarial.InterestBasis.flat(0.0), ""),
    )


@pytest.fixture
def bob(db, toy_basis):
    """Single, aged exactly 65 on May 1, 2026, a Supplemental Benefit of 70,000 a year (5,833.33 a month as a
    Single Life Annuity), still employed."""
    p = brp_participation(first_name="Bob", last_name="Baker")
    p.person.user = user_with_role("bob", "participant")
    p.person.save()
    return p


def _annuity(form, years, action):
    return {"form": form, "defer_years": years, "action": action}


def test_every_problem_of_a_form_of_benefit_shows_at_once_beside_its_field_and_nothing_is_stored(client, bob):
    c = _client(client, bob)
    before = _counts()
    response = c.post(reverse(ANNUITY, args=["BRP"]), _annuity("installments", "2.5", "review"))
    page = _page(response)
    assert response.status_code == 400 and "2 problems to fix" in page and "nothing has been filed" in page
    assert 'id="annuity_form-error"' in page and "not a form of benefit" in page and "(BRP 4.2(c))" in page
    assert 'id="annuity_defer_years-error"' in page and "whole number of years" in page
    assert 'value="2.5"' in page
    assert _counts() == before


def test_a_delay_short_of_what_the_plan_requires_is_shown_beside_the_delay_with_its_section(client, bob):
    response = _client(client, bob).post(reverse(ANNUITY, args=["BRP"]), _annuity("lump_sum", "3", "review"))
    page = _page(response)
    assert response.status_code == 400 and 'id="annuity_defer_years-error"' in page
    assert "at least 5 years" in page and "(BRP 4.2(d))" in page
    assert not AnnuityElection.objects.exists()


def test_the_form_of_benefit_starts_from_the_form_in_force(client, bob):
    page = _page(_client(client, bob).get(reverse(ANNUITY, args=["BRP"])))
    assert '<option value="single_life" selected>' in page  # the default of a single participant
    assert 'id="annuity_defer_years" size="3" inputmode="numeric" value="0"' in page
    assert 'id="review-annuity"' in page


def test_the_review_shows_each_forms_monthly_amount_from_the_quote_and_when_it_takes_effect(client, bob):
    c = _client(client, bob)
    before = _counts()
    response = c.post(reverse(ANNUITY, args=["BRP"]), _annuity("period_certain_120", "0", "review"))
    page = _page(response)
    assert response.status_code == 200 and "Nothing is filed yet" in page
    assert "Single Life Annuity" in page and "Period Certain and Continuous (120 payments guaranteed)" in page
    old = page.split('id="old-amount"')[1].split("</td>")[0]
    new = page.split('id="new-amount"')[1].split("</td>")[0]
    assert "$5,833.33" in old and "a month" in old
    assert "a month" in new and "$" in new and "$5,833.33" not in new
    assert "May 1, 2026" in page.split('id="new-commencement"')[1]  # the 1st of the month after leaving today
    assert "takes effect when received" in page and "April 20, 2026" in page
    assert "as if you left on April 20, 2026" in page
    assert 'name="form" value="period_certain_120"' in page and 'id="submit-annuity"' in page
    assert _counts() == before


def test_a_change_of_time_or_form_is_reviewed_with_the_plans_twelve_months(client, bob):
    page = _page(
        _client(client, bob).post(
            reverse(ANNUITY, args=["BRP"]), _annuity("period_certain_60", "5", "review")
        )
    )
    assert "only 12 months after you make it" in page and "April 20, 2027" in page and "BRP 4.2(d)" in page
    assert "May 1, 2031" in page.split('id="new-commencement"')[1]
    assert not AnnuityElection.objects.exists()


def test_change_it_returns_to_the_form_of_benefit_with_what_was_typed(client, bob):
    response = _client(client, bob).post(reverse(ANNUITY, args=["BRP"]), _annuity("js_75", "5", "edit"))
    page = _page(response)
    assert response.status_code == 200 and '<option value="js_75" selected>' in page and 'value="5"' in page
    assert not AnnuityElection.objects.exists()


def test_submit_after_review_stores_the_form_and_the_result_page_links_its_confirmation(client, bob):
    response = _client(client, bob).post(
        reverse(ANNUITY, args=["BRP"]), _annuity("period_certain_120", "0", "submit"), follow=True
    )
    election = AnnuityElection.objects.get()
    assert election.status == Status.ACCEPTED and election.form == "period_certain_120"
    page = _page(response)
    assert "Accepted." in page and 'id="confirmation-pdf"' in page


def test_a_form_of_benefit_refused_on_submit_is_stored_with_its_reason_in_english(client, bob):
    response = _client(client, bob).post(
        reverse(ANNUITY, args=["BRP"]), _annuity("lump_sum", "3", "submit"), follow=True
    )
    election = AnnuityElection.objects.get()
    assert (election.status, election.rule) == (Status.REJECTED, "BRP 4.2(d)")
    page = _page(response)
    assert "Refused under" in page and "Single lump sum" in page and "{'" not in page


def test_the_annuity_preview_writes_nothing(bob):
    before = _counts()
    preview = annuity_preview(participation=bob, form="js_50", defer_years=0, as_of=NOW.date())
    assert preview.ok and not preview.is_change and preview.takes_effect_on == NOW.date()
    wrong = annuity_preview(participation=bob, form="nope", defer_years="x", as_of=NOW.date())
    assert set(wrong.errors) == {"form", "defer_years"}
    assert _counts() == before


def test_a_participant_whose_benefit_has_begun_gets_no_form(client, bob):
    employment_event_record(
        person=bob.person,
        kind="separation",
        effective_date=dt.date(2026, 1, 15),
        reason="retirement",
        actor="hr",
        now=at(2026, 1, 15),
    )
    assert not annuity_offer(participation=bob, as_of=NOW.date()).allowed
    page = _page(_client(client, bob).get(reverse(ANNUITY, args=["BRP"])))
    assert 'id="not-offered"' in page and 'id="review-annuity"' not in page


def test_a_lump_sum_participant_is_offered_a_change_that_puts_the_start_off_five_years(bob):
    annuity_election_submit(
        participation=bob,
        form="lump_sum",
        defer_years=0,
        submitted_at=at(2007, 11, 15),  # the initial election of 4.2(b), standing as made
        channel="staff",
        actor="clerk",
    )
    assert annuity_offer(participation=bob, as_of=NOW.date()).allowed


# --- in a real browser (Playwright, Chromium): errors, review, submit; no serious axe violation; no sideways scroll


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_browser_the_investment_form_reviews_then_submits_accessibly(live_server):
    from playwright.sync_api import sync_playwright

    from tests.staffui.test_browser_a11y import ARGS, _axe

    sv, eq = default_fund(), FundFactory(code="EQ", name="Equity Index")
    alice = participant(username="alice", first_name="Alice", last_name="Archer")
    alice.person.user.set_password("a long browser password 7")
    alice.person.user.save()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        context = browser.new_context(bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            browser_sign_in(page, live_server.url, "alice", "a long browser password 7")
            page.goto(live_server.url + reverse(INVEST, args=["EDCP"]))
            page.fill(f"#fund_{sv.pk}", "30")
            page.fill(f"#fund_{eq.pk}", "50")
            page.click("#review-investments")
            page.wait_for_selector("#form-errors")
            assert "20% short" in page.inner_text("#total-error")
            assert page.input_value(f"#fund_{eq.pk}") == "50" and not InvestmentElection.objects.exists()
            assert _axe(page) == []
            page.fill(f"#fund_{eq.pk}", "70")
            page.click("#review-investments")
            page.wait_for_selector("#review-mix")
            assert "70%" in page.inner_text("#review-mix") and _axe(page) == []
            page.set_viewport_size({"width": 375, "height": 800})
            assert page.evaluate("document.scrollingElement.scrollWidth") <= 375
            page.click("#submit-investments")
            page.wait_for_selector("#confirmation")
            assert InvestmentElection.objects.get().status == Status.ACCEPTED
        finally:
            context.close()
            browser.close()
            connections.close_all()
