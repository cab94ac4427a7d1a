"""Beneficiary designations in the portal and on the staff screens; the plan's default when none survives."""

from __future__ import annotations

import pytest
from django.urls import reverse

from participants.models import BeneficiaryDesignation
from tests.elections.factories import participant
from tests.signin import sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.elections.urls_with_beneficiaries")]

ROWS = {
    "tier_1": "primary",
    "name_1": "Dana Archer",
    "relationship_1": "spouse",
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


def test_without_a_designation_the_plans_definition_of_beneficiary_is_shown(client, alice):
    sign_in(client, alice.person.user)
    page = client.get(reverse("participants_portal:beneficiaries", args=["EDCP"])).content.decode()
    assert "No designation on file" in page and "EDCP 1.2" in page
    assert "executor or administrator of your estate" in page  # Alice is single


def test_a_participant_designates_primary_and_contingent_beneficiaries(client, alice):
    sign_in(client, alice.person.user)
    url = reverse("participants_portal:beneficiaries", args=["EDCP"])
    review = client.post(url, ROWS)  # the review first: nothing is recorded
    assert review.status_code == 200 and not BeneficiaryDesignation.objects.exists()
    response = client.post(url, {**ROWS, "action": "submit"})
    assert response.status_code == 302
    designation = BeneficiaryDesignation.objects.get(person=alice.person)
    assert sorted((b.tier, b.name, b.percent) for b in designation.beneficiaries.all()) == [
        ("contingent", "Archer Family Trust", 100),
        ("primary", "Dana Archer", 60),
        ("primary", "Eli Archer", 40),
    ]
    assert "Dana Archer" in client.get(reverse("elections_portal:home")).content.decode()


def test_shares_that_do_not_add_up_are_refused_and_nothing_is_recorded(client, alice):
    sign_in(client, alice.person.user)
    response = client.post(
        reverse("participants_portal:beneficiaries", args=["EDCP"]), {**ROWS, "percent_2": "30"}
    )
    assert response.status_code == 400
    assert "shares add up to 90%: 10% short of 100%" in response.content.decode()
    assert not BeneficiaryDesignation.objects.exists()


def test_the_beneficiary_page_of_a_plan_one_is_not_in_answers_404(client, db):
    carol = participant("RRP")
    sign_in(client, carol.person.user)
    assert client.get(reverse("participants_portal:beneficiaries", args=["EDCP"])).status_code == 404
    assert client.post(reverse("participants_portal:beneficiaries", args=["EDCP"]), ROWS).status_code == 404


def test_the_elections_page_links_to_the_beneficiary_page_once_it_is_mounted(client, alice):
    sign_in(client, alice.person.user)
    page = client.get(reverse("elections_portal:home")).content.decode()
    assert reverse("participants_portal:beneficiaries", args=["EDCP"]) in page


def test_staff_see_designations_and_record_paper_ones_with_record_events(
    client, alice, auditor, administrator
):
    url = reverse("participants_staff:beneficiaries", args=[alice.pk])
    sign_in(client, auditor)
    assert client.get(url).status_code == 200
    assert client.post(url, ROWS).status_code == 403
    sign_in(client, administrator)
    assert client.post(url, ROWS).status_code == 302
    assert BeneficiaryDesignation.objects.get().recorded_by == "admin1"
    sign_in(client, alice.person.user)
    assert client.get(url).status_code == 403
