"""Issue 11: the beneficiary designation as the deferral election: prefilled with the designation in force, every
problem at once beside its field (nothing stored), then a review of old against new with "Change it" / "Submit"."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import AuditEvent
from participants.models import BeneficiaryDesignation
from participants.services import beneficiaries_designate
from participants.validators import designation_check
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

NEW = {
    "tier_1": "primary",
    "name_1": "Dana Archer",
    "relationship_1": "spouse",
    "birth_date_1": "1980-02-29",
    "percent_1": "60",
    "tier_2": "primary",
    "name_2": "Eli Archer",
    "relationship_2": "child",
    "percent_2": "40",
    "tier_3": "contingent",
    "name_3": "Archer Family Trust",
    "relationship_3": "trust",
    "percent_3": "100",
}


def _url():
    return reverse("participants_portal:beneficiaries", args=["EDCP"])


def _in_force(alice):
    return beneficiaries_designate(
        person=alice.person,
        plan=alice.plan,
        beneficiaries=[
            {"tier": "primary", "name": "Old Primary", "relationship": "parent", "percent": 100},
            {"tier": "contingent", "name": "Old Contingent", "relationship": "sibling", "percent": 100},
        ],
        actor="test",
        now=timezone.now() - dt.timedelta(days=30),
    )


def test_the_form_starts_from_the_designation_in_force(client, alice):
    _in_force(alice)
    sign_in(client, alice.person.user)
    page = client.get(_url()).content.decode()
    assert 'name="name_1" id="name_1" value="Old Primary"' in page
    assert re.search(r'<option value="parent" selected>Parent</option>', page)
    assert 'name="name_2" id="name_2" value="Old Contingent"' in page
    assert '<label for="percent_1">' in page  # every input has a name (WCAG 4.1.2)


def test_every_problem_is_reported_at_once_beside_its_field_and_nothing_is_stored(client, alice):
    sign_in(client, alice.person.user)
    audits = AuditEvent.objects.count()
    bad = {
        **NEW,
        "percent_2": "30",  # primary 90: 10% short
        "birth_date_1": "1980-02-30",  # not a date
        "relationship_2": "",  # missing
        "name_3": "",  # a share with no name
        "percent_3": "60",
        "tier_4": "contingent",
        "name_4": "Cousin Fay",
        "relationship_4": "other_relative",
        "birth_date_4": (timezone.localdate() + dt.timedelta(days=1)).isoformat(),  # after today
        "percent_4": "60",  # contingent 120: 20% over
        "tier_5": "primary",
        "name_5": "Gus",
        "relationship_5": "friend",
        "percent_5": "12.5",  # not whole
    }
    response = client.post(_url(), bad)
    html = response.content.decode()
    assert response.status_code == 400
    assert "6 problems to fix" in html
    for field in ("birth_date_1", "relationship_2", "name_3", "birth_date_4", "percent_5"):
        assert f'aria-describedby="{field}-error"' in html and f'id="{field}-error"' in html, field
    assert "&#x27;1980-02-30&#x27; is not a date" in html
    assert "The contingent beneficiaries&#x27; shares add up to 120%: 20% over 100%." in html
    assert 'id="total_contingent-error"' in html and 'aria-describedby="total_contingent-error"' in html
    # the primary tier's sum waits until its shares are all whole percentages (12.5 is reported beside it)
    assert "primary beneficiaries&#x27; shares add up" not in html
    assert 'value="Cousin Fay"' in html  # the form keeps what was typed
    assert not BeneficiaryDesignation.objects.exists() and AuditEvent.objects.count() == audits
    # and when the shares alone are wrong, the message says by how much
    short = client.post(_url(), {**NEW, "percent_2": "30"}).content.decode()
    assert "The primary beneficiaries&#x27; shares add up to 90%: 10% short of 100%." in short


def test_the_checks_on_their_own():
    check = designation_check(
        data={"tier_1": "contingent", "name_1": "X", "relationship_1": "cousin", "percent_1": "100"},
        rows=2,
        as_of=dt.date(2026, 12, 1),
    )
    assert check.errors == {
        "relationship_1": ["Choose a relationship from the list."],
        "__all__": ["Name at least one primary beneficiary."],
    }
    assert check.rows == []
    ok = designation_check(data={**NEW}, rows=6, as_of=dt.date(2026, 12, 1))
    assert ok.ok and [r["percent"] for r in ok.rows] == [60, 40, 100]
    assert ok.rows[0]["birth_date"] == dt.date(1980, 2, 29)


def test_review_shows_old_against_new_then_change_it_or_submit(client, alice):
    _in_force(alice)
    sign_in(client, alice.person.user)
    review = client.post(_url(), {**NEW, "action": "review"})
    html = review.content.decode()
    assert review.status_code == 200 and "Review: " in html
    assert "Old Primary" in html and "Dana Archer" in html and "born 1980-02-29" in html
    assert 'id="submit-beneficiaries"' in html and 'id="change-beneficiaries"' in html
    assert BeneficiaryDesignation.objects.count() == 1  # nothing recorded by the review
    hidden = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', html))
    assert hidden["name_1"] == "Dana Archer" and hidden["birth_date_1"] == "1980-02-29"
    # "Change it": the form again, filled with the new designation, nothing recorded
    edit = client.post(_url(), {**hidden, "action": "edit"})
    assert edit.status_code == 200 and 'value="Archer Family Trust"' in edit.content.decode()
    assert BeneficiaryDesignation.objects.count() == 1
    # "Submit": recorded, replacing the old one
    done = client.post(_url(), {**hidden, "action": "submit"})
    assert done.status_code == 302
    new = BeneficiaryDesignation.objects.first()
    assert BeneficiaryDesignation.objects.count() == 2
    assert [(b.name, b.relationship, b.birth_date, b.percent) for b in new.beneficiaries.all()] == [
        ("Dana Archer", "spouse", dt.date(1980, 2, 29), 60),
        ("Eli Archer", "child", None, 40),
        ("Archer Family Trust", "trust", None, 100),
    ]


def test_a_submit_that_skips_the_review_with_errors_stores_nothing(client, alice):
    sign_in(client, alice.person.user)
    response = client.post(_url(), {**NEW, "percent_1": "70", "action": "submit"})
    assert response.status_code == 400 and not BeneficiaryDesignation.objects.exists()
