"""Payment advice when a run is released and emergency decisions reach the participant through core.notices
(email with the PDF after consent, else the print queue), once each."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core import mail

from core.models import Notice
from core.pdf import pdf_text
from participants.models import Participation
from payments.models import ScheduledPayment
from payments.services.advice import payment_advice_send
from payments.services.runs import payment_run_approve, payment_run_prepare
from payments.services.withdrawals import emergency_approve, emergency_deny, emergency_request_record
from tests.factories import consent_to_email
from tests.payments.factories import deferrals, scenario, simulate, staff_user

pytestmark = pytest.mark.django_db
RELEASE = dt.date(2026, 5, 15)
NOW = dt.datetime(2026, 5, 15, 15, 0, tzinfo=dt.UTC)


def _reachable(participation: Participation, *, email: bool = True) -> None:
    person = participation.person
    person.email = "p1@example.com"
    person.address_line1, person.city, person.state, person.postal_code = (
        "1 Main St",
        "Richmond",
        "VA",
        "23219",
    )
    person.save()
    if email:
        consent_to_email(person)


@pytest.fixture
def valued():
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    payment = ScheduledPayment.objects.get()
    assert payment.status == "valued"
    return payment


def test_releasing_a_run_emails_each_payee_their_advice_with_the_pdf(
    valued, eager_jobs, django_capture_on_commit_callbacks
):
    _reachable(valued.participation)
    run = payment_run_prepare(period_end=RELEASE, actor=staff_user("alice", "administrator"), now=NOW)
    assert mail.outbox == []
    with django_capture_on_commit_callbacks(execute=True):
        run = payment_run_approve(run=run, actor=staff_user("bob", "committee"), now=NOW)
    [message] = mail.outbox
    valued.refresh_from_db()
    assert message.to == ["p1@example.com"] and "Payment advice" in message.subject
    assert "gross 60,000.00" in message.body and f"net {valued.net_amount:,.2f}" in message.body
    assert "May 15, 2026" in message.body and "/portal/payments/" in message.body
    [(_, data, _)] = message.attachments
    text = pdf_text(data)
    assert "Payment advice" in text and "60,000.00" in text and f"{valued.net_amount:,.2f}" in text
    withholding = (valued.federal_withholding or 0) + (valued.state_withholding or 0)
    assert withholding > 0 and f"{withholding:,.2f}" in text
    # a retried task sends nothing twice (and renders nothing again)
    assert payment_advice_send(run=run, actor="retry", now=NOW) == {"advices": 0, "already": 1}
    assert len(mail.outbox) == 1 and Notice.objects.filter(kind="payment_advice").count() == 1


def test_a_payee_on_paper_gets_the_advice_in_the_print_queue(valued):
    _reachable(valued.participation, email=False)
    run = payment_run_prepare(period_end=RELEASE, actor=staff_user("alice", "administrator"), now=NOW)
    run = payment_run_approve(run=run, actor=staff_user("bob", "committee"), now=NOW)
    assert payment_advice_send(run=run, actor="worker", now=NOW) == {"advices": 1, "already": 0}
    notice = Notice.objects.get(kind="payment_advice")
    assert mail.outbox == [] and notice.status == "queued" and notice.print_document.kind == "payment_advice"


def test_no_advice_before_the_run_is_approved(valued):
    run = payment_run_prepare(period_end=RELEASE, actor=staff_user("alice", "administrator"), now=NOW)
    with pytest.raises(ValueError, match="not released"):
        payment_advice_send(run=run, actor="worker", now=NOW)


@pytest.fixture
def p1():
    simulate(scenario(events=deferrals(), through="2026-04-30"))
    participation = Participation.objects.get(person__employee_number="P1")
    _reachable(participation)
    return participation


def _request(p1):
    return emergency_request_record(
        participation=p1,
        amount=Decimal("12000.00"),
        requested_on=dt.date(2026, 5, 4),
        need="Hospital bills after an accident",
        documents="Invoice 77",
        actor="test",
    )


def test_an_approved_emergency_withdrawal_is_notified_once(p1, django_capture_on_commit_callbacks):
    emergency = _request(p1)
    with django_capture_on_commit_callbacks(execute=True):
        emergency_approve(
            emergency=emergency,
            amount=Decimal("5000.00"),
            approved_on=dt.date(2026, 5, 5),
            actor=staff_user("bea", "committee"),
            now=NOW,
        )
    [message] = mail.outbox
    assert "approved" in message.subject and "5,000.00" in message.body and "EDCP 5.5" in message.body
    assert f"/portal/payments/emergency/{emergency.pk}/" in message.body
    assert Notice.objects.get(kind="emergency_decision").object_id == str(emergency.pk)


def test_a_denied_emergency_withdrawal_is_notified_with_its_reasons(p1, django_capture_on_commit_callbacks):
    emergency = _request(p1)
    with django_capture_on_commit_callbacks(execute=True):
        emergency_deny(
            emergency=emergency,
            decided_on=dt.date(2026, 5, 6),
            reason="Relieved by insurance",
            actor=staff_user("bea", "committee"),
            now=NOW,
        )
    [message] = mail.outbox
    assert "denied" in message.subject and "Relieved by insurance" in message.body


def test_a_payee_no_notice_can_reach_gets_no_pdf_and_is_recorded_undeliverable(valued):
    person = valued.participation.person
    person.address_line1, person.email = "", ""
    person.save()
    run = payment_run_prepare(period_end=RELEASE, actor=staff_user("alice", "administrator"), now=NOW)
    run = payment_run_approve(run=run, actor=staff_user("bob", "committee"), now=NOW)
    payment_advice_send(run=run, actor="worker", now=NOW)
    notice = Notice.objects.get(kind="payment_advice")
    assert notice.status == "undeliverable" and notice.document is None and notice.print_document is None
