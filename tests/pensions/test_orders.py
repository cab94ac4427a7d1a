"""BRP 6.7: Domestic Relations Orders against a Supplemental Benefit, before and after it begins.

Figures on the toy basis of tests/pensions/factories.py: a Single Life Annuity of 70,000 a year, 5,833.33 a month,
from May 1, 2026 (ä(12)65 = 18.5/12 at 0%)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from payments.models import ScheduledPayment
from pensions.services.orders import BenefitOrderError, benefit_order_record
from tests.conftest import eastern
from tests.pensions.factories import brp_participation, separate

pytestmark = pytest.mark.django_db
S = ScheduledPayment.Status


def planned(participation):
    return [
        (p.payment_date, p.amount, p.payee_name, p.kind)
        for p in ScheduledPayment.objects.filter(participation=participation)
        .exclude(status=S.CANCELLED)
        .order_by("payment_date", "payee_name", "id")
    ]


def order(participation, on, **share):
    return benefit_order_record(
        participation=participation,
        alternate_payee="Former Spouse",
        received_on=on,
        actor="test",
        now=eastern(on.year, on.month, on.day, 12),
        **share,
    )


def test_brp_6_7_a_percentage_of_each_payment_in_pay_is_paid_to_the_alternate_payee_on_the_same_dates(
    toy_basis, no_key_employees
):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    order(participation, dt.date(2026, 6, 10), percent=Decimal("40"))
    rows = planned(participation)
    # May and June before the order: 5,833.33 to the participant; from July 1: 40% = 2,333.33 and 3,500.00
    assert rows[:2] == [
        (dt.date(2026, 5, 1), Decimal("5833.33"), "", "annuity"),
        (dt.date(2026, 6, 1), Decimal("5833.33"), "", "annuity"),
    ]
    assert [r for r in rows if r[0] == dt.date(2026, 7, 1)] == [
        (dt.date(2026, 7, 1), Decimal("3500.00"), "", "annuity"),
        (dt.date(2026, 7, 1), Decimal("2333.33"), "Former Spouse", "annuity"),
    ]
    alternate = ScheduledPayment.objects.filter(
        participation=participation, payee_name="Former Spouse"
    ).first()
    assert alternate.cite == "BRP 6.7"


def test_brp_6_7_an_amount_before_commencement_comes_out_of_every_payment(toy_basis, no_key_employees):
    participation = brp_participation()
    order(participation, dt.date(2026, 2, 10), amount=Decimal("1000.00"))
    separate(participation, dt.date(2026, 4, 20))
    rows = planned(participation)
    assert rows[:2] == [
        (dt.date(2026, 5, 1), Decimal("4833.33"), "", "annuity"),
        (dt.date(2026, 5, 1), Decimal("1000.00"), "Former Spouse", "annuity"),
    ]


def test_brp_6_7_c_the_committee_pays_the_actuarial_equivalent_lump_sum_of_the_share(
    toy_basis, no_key_employees
):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    order(participation, dt.date(2026, 4, 25), percent=Decimal("40"), lump_sum=True)
    rows = planned(participation)
    # 40% of 5,833.33 = 2,333.33 a month; on May 1, 2026 (age 65) x 12 x ä(12)65 = 2,333.33 x 18.5 = 43,166.605,
    # the factor 18.5/12 carried as the binary float 1.54166666666666652: 43,166.60
    assert (dt.date(2026, 5, 1), Decimal("43166.60"), "Former Spouse", "lump_sum") in rows
    assert {r[1] for r in rows if r[2] == ""} == {Decimal("3500.00")}
    assert len([r for r in rows if r[2] == "Former Spouse"]) == 1


def test_brp_6_7_orders_never_take_more_than_every_payment(toy_basis):
    participation = brp_participation()
    order(participation, dt.date(2026, 2, 10), percent=Decimal("60"))
    with pytest.raises(BenefitOrderError, match="BRP 6.7"):
        order(participation, dt.date(2026, 2, 11), percent=Decimal("50"))
    with pytest.raises(BenefitOrderError, match="percentage of each payment or an amount"):
        order(participation, dt.date(2026, 2, 11))


def test_brp_6_7_the_api_records_an_order_for_staff_who_record_events_and_refuses_the_rest(toy_basis):
    from django.test import Client

    from tests.payments.factories import staff_user
    from tests.signin import sign_in

    participation = brp_participation()
    body = {
        "participation": participation.pk,
        "alternate_payee": "Former Spouse",
        "received_on": "2026-03-01",
        "amount": "500.00",
    }
    auditor = sign_in(Client(), staff_user("aud", "auditor"))
    assert auditor.post("/api/pensions/orders/", body, content_type="application/json").status_code == 403
    admin = sign_in(Client(), staff_user("adm", "administrator"))
    response = admin.post("/api/pensions/orders/", body, content_type="application/json")
    assert response.status_code == 201 and response.json()["cite"] == "BRP 6.7"
    assert response.json()["share"] == "500.00 of each payment"
    assert (
        auditor.get(f"/api/pensions/orders/{response.json()['id']}/").json()["alternate_payee"]
        == "Former Spouse"
    )
    refused = admin.post("/api/pensions/orders/", {**body, "percent": "10"}, content_type="application/json")
    assert refused.status_code == 422 and "BRP 6.7" in refused.json()["detail"]
