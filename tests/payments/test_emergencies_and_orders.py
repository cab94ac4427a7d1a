"""Unforeseeable emergencies (EDCP 5.5, 3.7) and domestic relations orders (EDCP 5.9, RRP 2017 4.01(c)):
staff pages and API, the participant's portal, and the payments they make through the engine.

P1 defers 50% of six 10,000.00 pays (January 15 to March 27): 30,000.00 in the Retirement/Termination
Account, one fund at 10.00.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from elections.models import DeferralCancellation
from participants.models import Participation, Person
from payments.models import DomesticRelationsOrder, EmergencyWithdrawal, ScheduledPayment
from payments.services.withdrawals import (
    WithdrawalError,
    emergency_approve,
    emergency_deny,
    emergency_request_record,
)
from tests.payments.factories import deferrals, replayed_once, scenario, simulate, staff_user
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
TODAY = dt.date(2026, 5, 5)


def _p1_history() -> None:
    simulate(scenario(events=deferrals(), through="2026-04-30"))


@pytest.fixture
def p1(db):
    """P1's participation in TestP1sAccount's history (replayed once for the class)."""
    return Participation.objects.get(person__employee_number="P1")


@pytest.fixture
def today(monkeypatch):
    """The pages read the clock (services never do): freeze their idea of today."""
    from django.utils import timezone

    monkeypatch.setattr(timezone, "localdate", lambda *a, **k: TODAY)
    return TODAY


def _portal(client, employee_number: str):
    user = get_user_model().objects.create_user(
        username=f"u{employee_number}", password="a-long-test-password"
    )
    user.groups.add(Group.objects.get_or_create(name="participant")[0])
    Person.objects.filter(employee_number=employee_number).update(user=user)
    sign_in(client, user)
    return user


def reviewed_decision(client, emergency, fields: dict) -> dict:
    """The decision's fields with the token of the summary that shows them, as the summary page's button posts them
    (issue 11: a decision is recorded only after its summary was shown)."""
    html = client.get(f"/staff/payments/emergencies/{emergency.pk}/review", fields).content.decode()
    return {**fields, "reviewed": re.search(r'name="reviewed" value="([^"]+)"', html).group(1)}


def _request(p1, amount="12000.00") -> EmergencyWithdrawal:
    return emergency_request_record(
        participation=p1,
        amount=Decimal(amount),
        requested_on=dt.date(2026, 5, 4),
        need="Hospital bills after an accident",
        documents="Invoice 77",
        actor="test",
    )


# --- the Committee's decision -------------------------------------------------------------------------


def test_a_plan_without_emergency_payments_refuses_a_request_citing_its_section():
    people = {"R1": {"birth_date": "1970-01-01", "hire_date": "2010-01-04"}}
    events = [
        {
            "on": "2025-12-10",
            "type": "deferral_election",
            "participant": "R1",
            "plan_year": 2026,
            "percentages": {"plan_compensation": 10},
        }
    ]
    simulate(scenario(plan="RRP", participants=people, events=events, through="2026-01-05"))
    with pytest.raises(WithdrawalError, match=r"no unforeseeable emergency withdrawal \(RRP 4.01\)"):
        emergency_request_record(
            participation=Participation.objects.get(),
            amount=Decimal("10.00"),
            requested_on=dt.date(2026, 2, 2),
            actor="test",
        )


class TestP1sAccount:
    """P1's 30,000.00 (_p1_history), replayed once for the class: requests, decisions, orders."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _replayed(cls, django_db_setup, django_db_blocker):
        with replayed_once(django_db_blocker, _p1_history):
            yield

    def test_staff_record_a_request_and_a_committee_member_approves_it_on_the_staff_pages(
        self, client, p1, today
    ):
        sign_in(client, staff_user("ada", "administrator"))
        answer = client.post(
            "/staff/payments/emergencies/record",
            {
                "employee_number": "P1",
                "plan": "EDCP",
                "amount": "12000.00",
                "requested_on": "2026-05-04",
                "need": "Hospital bills after an accident",
                "documents": "Invoice 77; insurer's refusal",
            },
        )
        emergency = EmergencyWithdrawal.objects.get()
        assert (
            answer.status_code == 302 and answer["Location"] == f"/staff/payments/emergencies/{emergency.pk}/"
        )
        assert (emergency.need, emergency.documents, emergency.channel) == (
            "Hospital bills after an accident",
            "Invoice 77; insurer's refusal",
            "staff",
        )
        page = client.get(answer["Location"]).content.decode()
        assert (
            "30000.00" in page and "decide-emergency" not in page
        )  # the balance available; ada cannot decide
        assert client.post(f"/staff/payments/emergencies/{emergency.pk}/decide", {}).status_code == 403

        sign_in(client, staff_user("bea", "committee"))
        client.post(
            f"/staff/payments/emergencies/{emergency.pk}/decide",
            reviewed_decision(
                client,
                emergency,
                {
                    "decision": "approve",
                    "amount": "11000.00",
                    "decided_on": "2026-05-05",
                    "reason": "Need net of insurance",
                },
            ),
        )
        emergency.refresh_from_db()
        assert (emergency.status, emergency.approved_amount, emergency.decided_on) == (
            "approved",
            Decimal("11000.00"),
            TODAY,
        )
        payment = ScheduledPayment.objects.get(schedule__emergency=emergency)
        assert (payment.amount, payment.payment_date, payment.status, payment.cite) == (
            Decimal("11000.00"),
            TODAY,
            "valued",
            "EDCP 5.5",
        )

    def test_an_approval_over_the_available_balance_is_refused_citing_5_5_and_nothing_changes(
        self, client, p1, today
    ):
        emergency = _request(p1, "40000.00")
        sign_in(client, staff_user("bea", "committee"))
        answer = client.post(
            f"/staff/payments/emergencies/{emergency.pk}/decide",
            reviewed_decision(
                client, emergency, {"decision": "approve", "amount": "30000.01", "decided_on": "2026-05-05"}
            ),
            follow=True,
        )
        text = answer.content.decode()
        assert "more than the 30,000.00 available on May 05, 2026" in text and "(EDCP 5.5)" in text
        assert "Retirement/Termination Account" in text
        emergency.refresh_from_db()
        assert emergency.status == "requested" and not ScheduledPayment.objects.exists()

    def test_a_denial_states_its_reasons_and_may_cancel_deferrals_for_the_rest_of_the_plan_year(self, p1):
        emergency = _request(p1)
        bea = staff_user("bea", "committee")
        with pytest.raises(WithdrawalError, match=r"states its reasons \(EDCP 5.5\)"):
            emergency_deny(emergency=emergency, decided_on=dt.date(2026, 5, 6), reason=" ", actor=bea)
        emergency_deny(
            emergency=emergency,
            decided_on=dt.date(2026, 5, 6),
            reason="Relieved by stopping deferrals",
            cancel_deferrals=True,
            actor=bea,
        )
        emergency.refresh_from_db()
        cancellation = DeferralCancellation.objects.get()
        assert (emergency.status, emergency.deferrals_cancelled, emergency.cancellation) == (
            "denied",
            True,
            cancellation,
        )
        assert (cancellation.starts_on, cancellation.ends_on, cancellation.cite) == (
            dt.date(2026, 5, 6),
            dt.date(2026, 12, 31),
            "EDCP 3.7",
        )
        assert not ScheduledPayment.objects.exists()

    def test_deferrals_cancelled_with_an_approval_stop_at_payroll_and_the_old_election_does_not_come_back(
        self, p1
    ):
        from books.models import PayrollDeferral
        from books.services.payroll import pay_record

        emergency = _request(p1)
        emergency_approve(
            emergency=emergency,
            amount=Decimal("5000.00"),
            approved_on=dt.date(2026, 5, 5),
            cancel_deferrals=True,
            actor=staff_user("bea", "committee"),
        )
        person = p1.person
        before, _ = pay_record(
            person=person,
            pay_date=dt.date(2026, 5, 1),
            component="base_salary",
            gross=Decimal("10000.00"),
            actor="payroll",
        )
        after, _ = pay_record(
            person=person,
            pay_date=dt.date(2026, 5, 15),
            component="base_salary",
            gross=Decimal("10000.00"),
            actor="payroll",
        )
        assert PayrollDeferral.objects.get(record=before).deferral == Decimal("5000.00")
        assert PayrollDeferral.objects.get(record=after).deferral == Decimal("0.00")
        # EDCP 3.1(c): to defer again the participant files a new agreement; the evergreen one does not resume.
        later, _ = pay_record(
            person=person,
            pay_date=dt.date(2027, 1, 15),
            component="base_salary",
            gross=Decimal("10000.00"),
            actor="payroll",
        )
        assert PayrollDeferral.objects.get(record=later).deferral == Decimal("0.00")

    def test_only_the_committee_decides_and_a_request_is_decided_once(self, p1):
        emergency = _request(p1)
        with pytest.raises(WithdrawalError, match="approve-emergency"):
            emergency_approve(
                emergency=emergency,
                amount=Decimal("10.00"),
                approved_on=dt.date(2026, 5, 5),
                actor=staff_user("ada", "administrator"),
            )
        with pytest.raises(WithdrawalError, match="approve-emergency"):
            emergency_deny(
                emergency=emergency,
                decided_on=dt.date(2026, 5, 5),
                reason="no",
                actor=staff_user("al", "auditor"),
            )
        bea = staff_user("bea", "committee")
        emergency_approve(
            emergency=emergency, amount=Decimal("10.00"), approved_on=dt.date(2026, 5, 5), actor=bea
        )
        with pytest.raises(WithdrawalError, match="already approved"):
            emergency_deny(
                emergency=emergency, decided_on=dt.date(2026, 5, 6), reason="changed our mind", actor=bea
            )

    # --- the portal --------------------------------------------------------------------------------------------

    def test_a_participant_files_a_request_in_the_portal_and_follows_its_status(self, client, p1, today):
        _portal(client, "P1")
        answer = client.post(
            "/portal/payments/emergency/",
            {
                "plan": "EDCP",
                "amount": "8000.00",
                "need": "Roof destroyed by a storm",
                "documents": "Estimate",
            },
        )
        emergency = EmergencyWithdrawal.objects.get()
        assert (
            answer.status_code == 302 and answer["Location"] == f"/portal/payments/emergency/{emergency.pk}/"
        )
        assert (emergency.requested_on, emergency.channel, emergency.participation) == (TODAY, "portal", p1)
        assert "not decided yet" in client.get(answer["Location"]).content.decode()
        emergency_approve(
            emergency=emergency,
            amount=Decimal("7500.00"),
            approved_on=TODAY,
            actor=staff_user("bea", "committee"),
            reason="Estimate less the insurance",
        )
        page = client.get(answer["Location"]).content.decode()
        assert "Approved" in page and "7,500.00" in page and "Estimate less the insurance" in page
        assert "Request " in client.get("/portal/payments/emergency/").content.decode()

    def test_another_participants_request_answers_404_in_the_portal_and_the_api(self, client, p1):
        from tests.factories import PersonFactory

        emergency = _request(p1)
        _portal(client, PersonFactory(employee_number="P2").employee_number)
        assert client.get(f"/portal/payments/emergency/{emergency.pk}/").status_code == 404
        assert client.get(f"/api/payments/mine/emergencies/{emergency.pk}/").status_code == 404
        assert client.get("/api/payments/mine/emergencies/").json() == []
        page = client.get("/portal/payments/emergency/").content.decode()
        assert "Hospital bills" not in page and "None of your plans pays unforeseeable emergencies" in page

    # --- the API -------------------------------------------------------------------------------------------------

    def test_the_api_records_a_request_and_the_committee_decides_it(self, client, p1, today):
        sign_in(client, staff_user("ada", "administrator"))
        created = client.post(
            "/api/payments/emergencies/",
            {
                "participation": p1.pk,
                "amount": "9000.00",
                "requested_on": "2026-05-04",
                "need": "Funeral of a spouse",
            },
            content_type="application/json",
        )
        assert created.status_code == 201 and created.json()["status"] == "requested"
        pk = created.json()["id"]
        assert (
            client.post(
                f"/api/payments/emergencies/{pk}/decision/",
                {"decision": "deny", "decided_on": "2026-05-05", "reason": "x"},
                content_type="application/json",
            ).status_code
            == 403
        )
        sign_in(client, staff_user("bea", "committee"))
        refused = client.post(
            f"/api/payments/emergencies/{pk}/decision/",
            {"decision": "approve", "amount": "30000.01", "decided_on": "2026-05-05"},
            content_type="application/json",
        )
        assert refused.status_code == 422 and "(EDCP 5.5)" in refused.json()["detail"]
        done = client.post(
            f"/api/payments/emergencies/{pk}/decision/",
            {
                "decision": "approve",
                "amount": "9000.00",
                "decided_on": "2026-05-05",
                "cancel_deferrals": True,
            },
            content_type="application/json",
        )
        body = done.json()
        assert done.status_code == 200 and (
            body["status"],
            body["approved_amount"],
            body["deferrals_cancelled"],
        ) == ("approved", "9000.00", True)
        assert body["deferrals_cancelled_through"] == "2026-12-31"
        assert [(p["amount"], p["payment_date"]) for p in body["payments"]] == [("9000.00", "2026-05-05")]

    def test_a_participant_files_through_the_api_only_in_a_plan_that_pays_emergencies(
        self, client, p1, today
    ):
        _portal(client, "P1")
        answer = client.post(
            "/api/payments/mine/emergencies/",
            {"plan": "EDCP", "amount": "100.00", "need": "Eviction"},
            content_type="application/json",
        )
        assert answer.status_code == 201 and answer.json()["requested_on"] == "2026-05-05"
        assert "employee_number" not in answer.json()
        assert (
            client.post(
                "/api/payments/mine/emergencies/",
                {"plan": "RRP", "amount": "100.00", "need": "x"},
                content_type="application/json",
            ).status_code
            == 404
        )

    # --- domestic relations orders --------------------------------------------------------------------------------

    def test_staff_record_an_order_and_its_lump_sum_goes_through_the_run_to_the_books(
        self, client, p1, today
    ):
        from books.services.crediting import credit_valuation_date
        from payments.services.processing import payment_day_process
        from payments.services.runs import payment_run_approve, payment_run_prepare
        from plans.models import Fund, FundPrice

        sign_in(client, staff_user("ada", "administrator"))
        answer = client.post(
            "/staff/payments/orders/record",
            {
                "employee_number": "P1",
                "plan": "EDCP",
                "alternate_payee": "Former Spouse",
                "order_date": "2026-05-04",
                "percent": "40",
                "account": "retirement_termination",
            },
        )
        order = DomesticRelationsOrder.objects.get()
        assert answer["Location"] == f"/staff/payments/orders/{order.pk}/" and order.total == Decimal(
            "12000.00"
        )
        assert "Former Spouse" in client.get(answer["Location"]).content.decode()
        payment = ScheduledPayment.objects.get(schedule__dro=order)
        assert (
            payment.payee_name,
            payment.amount,
            payment.payment_date,
            payment.release_date,
            payment.cite,
        ) == (
            "Former Spouse",
            Decimal("12000.00"),
            dt.date(2026, 5, 4),
            dt.date(2026, 5, 4),
            "EDCP 5.9",
        )
        run = payment_run_prepare(period_end=dt.date(2026, 5, 4), actor=staff_user("al", "administrator"))
        payment_run_approve(run=run, actor=staff_user("bea", "committee"))
        fund = Fund.objects.get(code="SV")
        for day in (dt.date(2026, 5, 1), dt.date(2026, 5, 4)):
            FundPrice.objects.create(
                fund=fund, date=day, price=Decimal("10.00"), loaded_at=dt.datetime(2026, 5, 4, tzinfo=dt.UTC)
            )
            credit_valuation_date(valuation_date=day)
        payment_day_process(day=dt.date(2026, 5, 5))
        payment.refresh_from_db()
        assert (payment.status, payment.paid_on, payment.amount) == (
            "paid",
            dt.date(2026, 5, 4),
            Decimal("12000.00"),
        )
        csv_line = client.get(f"/staff/payments/runs/{run.pk}/payroll.csv").content.decode().splitlines()[1]
        assert csv_line.endswith(",EDCP 5.9,Former Spouse,")

    def test_an_order_for_more_than_the_account_is_refused_with_a_clear_message_and_nothing_changes(
        self, client, p1, today
    ):
        sign_in(client, staff_user("ada", "administrator"))
        answer = client.post(
            "/staff/payments/orders/record",
            {
                "employee_number": "P1",
                "plan": "EDCP",
                "alternate_payee": "Former Spouse",
                "order_date": "2026-05-04",
                "amount": "30000.01",
                "account": "retirement_termination",
            },
            follow=True,
        )
        text = answer.content.decode()
        assert (
            "more than the 30,000.00 the Retirement/Termination Account holds on May 04, 2026: an order can assign only "
            "what the account holds (EDCP 5.9)"
        ) in text
        assert not DomesticRelationsOrder.objects.exists() and not ScheduledPayment.objects.exists()
        api = client.post(
            "/api/payments/orders/",
            {
                "participation": p1.pk,
                "alternate_payee": "X",
                "order_date": "2026-05-04",
                "amount": "30000.01",
            },
            content_type="application/json",
        )
        assert api.status_code == 422 and "(EDCP 5.9)" in api.json()["detail"]
        ok = client.post(
            "/api/payments/orders/",
            {
                "participation": p1.pk,
                "alternate_payee": "X",
                "order_date": "2026-05-04",
                "amount": "30000.00",
            },
            content_type="application/json",
        )
        assert ok.status_code == 201 and ok.json()["total"] == "30000.00"

    def test_recording_an_order_needs_record_events_and_a_future_date_is_refused(self, client, p1, today):
        sign_in(client, staff_user("bea", "committee"))
        form = {
            "employee_number": "P1",
            "plan": "EDCP",
            "alternate_payee": "X",
            "order_date": "2026-05-06",
            "amount": "1.00",
        }
        assert client.post("/staff/payments/orders/record", form).status_code == 403
        sign_in(client, staff_user("ada", "administrator"))
        answer = client.post("/staff/payments/orders/record", form, follow=True)
        assert "date in the future" in answer.content.decode() and not DomesticRelationsOrder.objects.exists()
