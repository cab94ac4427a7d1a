"""Payment advice to named payees who are not participants (issue 13, "Notices people receive"): a Beneficiary
paid after a death and an alternate payee under a domestic relations order each get an advice of their own
payments only (gross, withholding, net, date, PDF), by email when their record has an address, else on paper
in the print queue with an address page. The sending is a claimed job: a rerun sends nothing twice and a run
that stopped resumes where it stopped.

History (built once): P1 and P2 each defer 50% of six 10,000.00 pays (30,000.00 each). P2 names Ann Heir
(60%, an email on file) and Ben Heir (40%, a mailing address only) and dies July 20, 2026: two lump sums
(18,000.00 and 12,000.00), Payment Date August 15, released August 17. A domestic relations order of
August 14 assigns 40% of P1's Retirement/Termination Account (12,000.00) to Former Spouse (address only).
One run through August 17 pays the three payees.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core import mail

from core.models import JobRun, Notice
from core.notices import print_batch_pdf
from core.pdf import document_bytes, pdf_text
from participants.models import Beneficiary, Participation, Person
from participants.services import (
    beneficiaries_designate,
    beneficiary_tax_info_record,
    employment_event_record,
)
from payments.models import PaymentRun, ScheduledPayment
from payments.services import advice
from payments.services.advice import ADVICE_JOB, payment_advice_job
from payments.services.runs import payment_run_approve, payment_run_prepare
from payments.services.withdrawals import dro_record
from payments.tasks import payment_advice_task
from plans.models import Plan
from plans.selectors import committee_contact
from tests.payments.factories import advance, deferrals, replayed_once, scenario, simulate, staff_user

pytestmark = pytest.mark.django_db
NOW = dt.datetime(2026, 8, 17, 15, 0, tzinfo=dt.UTC)
PEOPLE = {
    "P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01"},
    "P2": {"birth_date": "1970-06-01", "hire_date": "2013-05-01"},
}


def _history() -> None:
    simulate(scenario(participants=PEOPLE, events=deferrals("P1") + deferrals("P2"), through="2026-07-17"))
    p2 = Person.objects.get(employee_number="P2")
    edcp = Plan.objects.get(code="EDCP")
    designation = beneficiaries_designate(
        person=p2,
        plan=edcp,
        actor="test",
        now=dt.datetime(2026, 2, 1, tzinfo=dt.UTC),
        beneficiaries=[
            {"tier": "primary", "name": "Ann Heir", "percent": 60},
            {"tier": "primary", "name": "Ben Heir", "percent": 40},
        ],
    )
    ann, ben = (designation.beneficiaries.get(name=n) for n in ("Ann Heir", "Ben Heir"))
    for beneficiary, tin, street, email in (
        (ann, "123-45-6789", "9 Elm St", "ann@example.com"),
        (ben, "987-65-4321", "4 Oak Ave", ""),
    ):
        beneficiary_tax_info_record(
            beneficiary=beneficiary,
            taxpayer_number=tin,
            address_line1=street,
            city="Norfolk",
            state="VA",
            postal_code="23510",
            email=email,
            actor="test",
            now=dt.datetime(2026, 7, 25, tzinfo=dt.UTC),
        )
    employment_event_record(
        person=p2,
        kind="death",
        effective_date=dt.date(2026, 7, 20),
        actor="test",
        now=dt.datetime(2026, 7, 20, 15, tzinfo=dt.UTC),
    )
    advance(to="2026-08-14")
    dro_record(
        participation=Participation.objects.get(person__employee_number="P1", plan=edcp),
        alternate_payee="Former Spouse",
        alternate_payee_address="12 Pine Rd\nRichmond, VA 23220",
        order_date=dt.date(2026, 8, 14),
        percent=40,
        account_name="retirement_termination",
        actor="test",
        now=dt.datetime(2026, 8, 14, 15, tzinfo=dt.UTC),
    )
    run = payment_run_prepare(
        period_end=dt.date(2026, 8, 17), actor=staff_user("alice", "administrator"), now=NOW
    )
    payment_run_approve(run=run, actor=staff_user("bob", "committee"), now=NOW)


class TestNamedPayees:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _replayed(cls, django_db_setup, django_db_blocker):
        with replayed_once(django_db_blocker, _history):
            yield

    @pytest.fixture
    def run(self, db):
        run = PaymentRun.objects.get(status="released")
        assert sorted(run.payments.values_list("payee_name", "amount")) == [
            ("Ann Heir", Decimal("18000.00")),
            ("Ben Heir", Decimal("12000.00")),
            ("Former Spouse", Decimal("12000.00")),
        ]
        return run

    def test_a_beneficiary_with_an_email_gets_her_own_advice_by_email_with_the_pdf(self, run):
        job = payment_advice_job(run=run, actor="worker", now=NOW)
        assert (job.status, job.stats["advices"], job.stats["already"]) == ("done", 3, 0)
        [message] = mail.outbox  # Ben Heir and the alternate payee have no email: paper
        ann = ScheduledPayment.objects.get(payee_name="Ann Heir")
        assert message.to == ["ann@example.com"] and "Payment advice" in message.subject
        body = message.body
        assert "Dear Ann Heir" in body and "as a beneficiary" in body and "gross 18,000.00" in body
        assert f"net {ann.net_amount:,.2f}" in body and "August 17, 2026" in body
        # nothing of the participant's or the other payees' figures, no employee number
        assert "12,000.00" not in body and "P2" not in body and "Ben Heir" not in body
        [(_, data, mimetype)] = message.attachments
        text = " ".join(pdf_text(data).split())
        assert mimetype == "application/pdf" and "Ann Heir" in text and "18,000.00" in text
        withholding = (ann.federal_withholding or 0) + (ann.state_withholding or 0)
        assert withholding > 0 and f"{withholding:,.2f}" in text and f"{ann.net_amount:,.2f}" in text
        assert "12,000.00" not in text and "Employee" not in text and "1099-MISC" in text
        # where to write: the paying plan's Committee contact in force on the day of the advice
        contact = committee_contact(plan=ann.participation.plan, as_of=NOW.date())
        assert contact and contact["email"] in body and contact["email"] in text and contact["name"] in text
        notice = Notice.objects.get(kind="payment_advice", payee_name="Ann Heir")
        assert (notice.person, notice.channel, notice.status, notice.to) == (
            None,
            "email",
            "sent",
            "ann@example.com",
        )
        assert notice.document.person is None  # in no participant's portal
        assert not Notice.objects.filter(person__employee_number="P2").exists()

    def test_a_beneficiary_and_an_alternate_payee_without_email_are_printed_with_their_address_page(
        self, run
    ):
        payment_advice_job(run=run, actor="worker", now=NOW)
        paper = {n.payee_name: n for n in Notice.objects.filter(kind="payment_advice", channel="paper")}
        assert sorted(paper) == ["Ben Heir", "Former Spouse"]
        assert {n.status for n in paper.values()} == {"queued"}
        assert paper["Former Spouse"].address == "12 Pine Rd\nRichmond, VA 23220"
        spouse_text = " ".join(pdf_text(document_bytes(paper["Former Spouse"].print_document)).split())
        assert "Former Spouse" in spouse_text and "domestic relations order" in spouse_text
        assert (
            "12,000.00" in spouse_text and "18,000.00" not in spouse_text and "1099-MISC" not in spouse_text
        )
        batch = " ".join(pdf_text(print_batch_pdf(day=dt.date(2026, 8, 17))).split())
        assert "4 Oak Ave" in batch and "Norfolk, VA 23510" in batch and "12 Pine Rd" in batch
        assert "Richmond, VA 23220" in batch and "Ben Heir" in batch

    def test_a_payee_with_no_email_and_no_address_is_recorded_undeliverable(self, run):
        Beneficiary.objects.get(name="Ben Heir").tax_info.delete()
        payment_advice_job(run=run, actor="worker", now=NOW)
        notice = Notice.objects.get(kind="payment_advice", payee_name="Ben Heir")
        assert notice.status == "undeliverable" and notice.document is None and notice.print_document is None

    def test_a_rerun_sends_nothing_twice(self, run):
        first = payment_advice_task.apply(args=[run.pk]).get()
        assert first["status"] == "done" and first["stats"]["advices"] == 3
        again = payment_advice_task.apply(args=[run.pk]).get()
        assert again["status"] == "done" and again["stats"] == first["stats"]  # the done run: nothing runs
        # even the service called directly finds every payee advised
        assert advice.payment_advice_send(run=run, actor="again", now=NOW) == {"advices": 0, "already": 3}
        assert len(mail.outbox) == 1 and Notice.objects.filter(kind="payment_advice").count() == 3
        assert JobRun.objects.get(kind=ADVICE_JOB).attempts == 1

    def test_a_run_that_stopped_midway_is_recorded_failed_and_resumes_where_it_stopped(
        self, run, monkeypatch
    ):
        real, calls = advice.notice_send, []

        def flaky(**kwargs):
            calls.append(kwargs["payee"].name)
            if len(calls) == 2:
                raise ConnectionError("mail server went away")
            return real(**kwargs)

        monkeypatch.setattr(advice, "notice_send", flaky)
        with pytest.raises(ConnectionError):
            payment_advice_job(run=run, actor="worker", now=NOW)
        job = JobRun.objects.get(kind=ADVICE_JOB)
        assert job.status == "failed" and "mail server went away" in job.message
        assert "advice 2 of 3" in job.stats["stopped_on"] and job.stats["task"] == "payments.send_advice"
        assert (job.progress_done, job.progress_total) == (1, 3)
        assert Notice.objects.filter(kind="payment_advice").exclude(status="failed").count() == 1
        # the retry: the first payee is skipped, the other two are sent, the run is done
        calls.clear()
        monkeypatch.setattr(advice, "notice_send", real)
        job = payment_advice_job(run=run, actor="worker", now=NOW)
        assert (job.status, job.stats["advices"], job.stats["already"]) == ("done", 2, 1)
        assert JobRun.objects.get(kind=ADVICE_JOB).attempts == 2
        names = sorted(Notice.objects.filter(kind="payment_advice").values_list("payee_name", flat=True))
        assert names == ["Ann Heir", "Ben Heir", "Former Spouse"] and len(mail.outbox) == 1
