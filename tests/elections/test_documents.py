"""Confirmation PDFs of accepted elections and blank paper forms: what they say, and that regenerating one
gives the same document (same bytes, same hash, same stored row)."""

from __future__ import annotations

import datetime as dt
import hashlib
import re

import pytest

from core.models import Document
from core.pdf import document_bytes, pdf_text
from elections.selectors import provision_quote
from elections.services import (
    annuity_election_submit,
    blank_form_render,
    deferral_election_submit,
    distribution_election_submit,
    election_confirmation_render,
    investment_election_submit,
    schedule_change_submit,
)
from plans.models import Plan
from tests.elections.factories import at, default_fund, participant

pytestmark = pytest.mark.django_db


def flat(text: str) -> str:
    """The text as one line, without the page footers (a quote may run across a page break)."""
    return " ".join(
        " ".join(line for line in text.splitlines() if not re.search(r"Page \d+ of \d+", line)).split()
    )


@pytest.fixture
def deferral(alice):
    return deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 12, "monthly_bonus": 5},
        accounts={"retirement_termination": 60, "specified_date:2031-03": 40},
        submitted_at=at(2026, 11, 20, 14, 5),
        channel="portal",
        actor="alice",
    )


def test_a_deferral_confirmation_states_the_election_its_provisions_when_irrevocable_and_the_name(deferral):
    document = election_confirmation_render(election=deferral, actor="worker", now=at(2026, 11, 20, 14, 6))
    text = flat(pdf_text(document_bytes(document)))
    assert "Alice Archer" in text
    assert "Base salary 12%" in text and "Monthly bonus 5%" in text
    assert "Retirement/Termination Account 60%" in text and "Specified Date Account (March 2031) 40%" in text
    assert "December 31, 2026, 11:59 p.m. Eastern Time" in text
    # The provisions, quoted with their section numbers from the plan catalog.
    assert "EDCP 1.12" in text and "up to 75% of his annual base salary" in text
    assert "EDCP 3.2(b)" in text and "no later than 11:59 p.m. Eastern Time on December 31" in text
    assert "EDCP 1.32" in text
    assert document.person == deferral.participation.person and document.kind == "election_confirmation"


def test_regenerating_a_confirmation_gives_the_same_document(deferral):
    first = election_confirmation_render(election=deferral, actor="worker", now=at(2026, 11, 20, 14, 6))
    again = election_confirmation_render(election=deferral, actor="staff", now=at(2027, 3, 1, 9))
    assert again.pk == first.pk and again.sha256 == first.sha256
    assert hashlib.sha256(document_bytes(again)).hexdigest() == first.sha256
    assert Document.objects.filter(kind="election_confirmation").count() == 1


def test_the_paragraph_cited_is_quoted_rather_than_the_whole_section(db):
    version = Plan.objects.get(code="EDCP").version_on(dt.date(2026, 1, 1))
    quote = provision_quote(version=version, citation="EDCP 3.2(a)")
    assert quote.text.startswith("(a) First Year of Eligibility") and "(b) Annual Election" not in quote.text


def test_a_provision_missing_from_a_versions_text_is_quoted_from_the_nearest_version_that_has_it(db):
    version_2011 = Plan.objects.get(code="EDCP").version_on(dt.date(2012, 1, 1))
    quote = provision_quote(version=version_2011, citation="EDCP 3.2(b)")
    assert "Annual Election" in quote.text and "2024" in quote.source


@pytest.mark.parametrize(
    "make, words",
    [
        (
            lambda p: distribution_election_submit(
                participation=p,
                account="retirement_termination",
                form="installments",
                installments=4,
                lump_sum_percent=None,
                submitted_at=at(2026, 11, 1),
                channel="portal",
                actor="t",
            ),
            ["4 annual installments", "EDCP 5.1(c)", "Retirement/Termination Account"],
        ),
        (
            lambda p: (
                distribution_election_submit(
                    participation=p,
                    account="specified_date:2030-03",
                    form="lump_sum",
                    installments=None,
                    lump_sum_percent=None,
                    submitted_at=at(2026, 10, 1),
                    channel="portal",
                    actor="t",
                )
                and schedule_change_submit(
                    participation=p,
                    account="specified_date:2030-03",
                    new_month=dt.date(2035, 3, 1),
                    submitted_at=at(2027, 1, 5, 10),
                    channel="portal",
                    actor="t",
                )
            ),
            [
                "March 15, 2035",
                "EDCP 6.2",
                "at least 12 months before",
                "January 5, 2027, 10:00 a.m. Eastern Time",
            ],
        ),
        (
            lambda p: investment_election_submit(
                participation=p,
                allocation={default_fund().pk: 100},
                applies_to="both",
                submitted_at=at(2026, 5, 14),
                channel="portal",
                actor="t",
            ),
            ["SV Stable Value 100%", "EDCP 7.4", "whole percentages", "May 15, 2026"],
        ),
    ],
)
def test_every_kind_of_accepted_election_has_its_confirmation(alice, make, words):
    election = make(alice)
    assert election.accepted, election.message
    text = flat(
        pdf_text(
            document_bytes(election_confirmation_render(election=election, actor="w", now=at(2027, 2, 1)))
        )
    )
    for w in words:
        assert w in text
    assert "Alice Archer" in text


def test_a_brp_form_election_confirmation_quotes_4_2(db):
    p = participant("BRP", first_name="Carl", last_name="Cole", marital_status="married")
    e = annuity_election_submit(
        participation=p,
        form="lump_sum",
        defer_years=5,
        submitted_at=at(2026, 2, 1),
        channel="staff",
        actor="t",
    )
    text = flat(
        pdf_text(document_bytes(election_confirmation_render(election=e, actor="w", now=at(2026, 2, 1))))
    )
    assert (
        "Carl Cole" in text
        and "Single lump sum" in text
        and "BRP 4.2(c)" in text
        and "February 1, 2027" in text
    )


def test_a_refused_election_has_no_confirmation(alice):
    e = deferral_election_submit(
        participation=alice,
        plan_year=2027,
        percentages={"base_salary": 99},
        accounts=None,
        submitted_at=at(2026, 11, 1),
        channel="portal",
        actor="alice",
    )
    with pytest.raises(ValueError):
        election_confirmation_render(election=e, actor="w", now=at(2026, 11, 1))


def test_the_blank_form_for_a_plan_year_lists_limits_accounts_forms_and_the_deadline(db):
    plan = Plan.objects.get(code="EDCP")
    document = blank_form_render(plan=plan, plan_year=2027, actor="staff", now=at(2026, 10, 1))
    text = flat(pdf_text(document_bytes(document)))
    assert "EDCP Compensation Deferral Agreement for 2027" in text
    assert "Base salary 75%" in text and "Annual bonus (Performance-Based Compensation) 90%" in text
    assert "Specified Date Account" in text and "2 to 10" in text and "2 to 5" in text
    assert "December 31, 2026, 11:59 p.m. Eastern Time" in text
    assert "EDCP 3.2(b)" in text
    again = blank_form_render(plan=plan, plan_year=2027, actor="other", now=at(2026, 10, 5))
    assert again.pk == document.pk and again.person is None


def test_the_rrp_2011_blank_form_shows_the_committees_announced_maximum(db):
    document = blank_form_render(
        plan=Plan.objects.get(code="RRP"), plan_year=2015, actor="staff", now=at(2014, 10, 1)
    )
    text = flat(pdf_text(document_bytes(document)))
    assert "Plan Compensation 75%" in text and "RRP 2.03(a)" in text
