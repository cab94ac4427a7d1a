"""Payment runs (maker-checker, withholding, payroll file, register), the daily job's idempotence and resume, holds."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest

from books.models import PendingTransaction
from core.models import JobRun
from payments.models import PaymentRun, ScheduledPayment, WithholdingRate
from payments.services import processing
from payments.services.processing import payment_day_process
from payments.services.runs import PaymentRunError, payment_run_approve, payment_run_csv, payment_run_prepare
from payments.services.withdrawals import WithdrawalError, emergency_approve, emergency_request_record
from payments.services.withholding import withholding_apply, withholding_rate_record
from tests.payments.factories import deferrals, replayed_once, scenario, simulate, staff_user

pytestmark = pytest.mark.django_db
RELEASE = dt.date(2026, 5, 15)


def _valued_history() -> None:
    """P1 separated 2026-04-10 with 60,000.00: the lump sum is valued (April 30) but not released (May 15)."""
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )


@pytest.fixture
def valued(db):
    """The valued lump sum of TestAValuedLumpSum's history (replayed once for the class)."""
    payment = ScheduledPayment.objects.get()
    assert (payment.status, payment.amount) == ("valued", Decimal("60000.00"))
    return payment


@pytest.fixture
def staff(db):
    return (
        staff_user("alice", "administrator"),
        staff_user("bob", "committee"),
        staff_user("carol", "committee"),
    )


class TestAValuedLumpSum:
    """P1's valued lump sum (_valued_history), replayed once for the class: runs, withholding, payroll file."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _replayed(cls, django_db_setup, django_db_blocker):
        with replayed_once(django_db_blocker, _valued_history):
            yield

    def test_a_run_prepared_by_one_is_approved_by_another_and_released_to_the_books(self, valued, staff):
        alice, bob, _ = staff
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        assert (run.payments_count, run.gross_total) == (1, Decimal("60000.00"))
        payment_run_approve(run=run, actor=bob)
        valued.refresh_from_db()
        assert valued.status == "released"
        assert (valued.pending.amount, valued.pending.effective_date, valued.pending.kind) == (
            Decimal("-60000.00"),
            RELEASE,
            "distribution",
        )

    def test_the_preparer_cannot_approve_their_own_run_and_nothing_changes(self, valued, staff):
        alice, _, _ = staff
        alice.groups.add(staff_user("x", "committee").groups.first())  # alice now holds both roles
        alice._nqdc_roles = None
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        with pytest.raises(PaymentRunError, match="different person"):
            payment_run_approve(run=run, actor=alice)
        run.refresh_from_db()
        assert run.status == "prepared" and run.approved_by is None
        assert not PendingTransaction.objects.filter(kind="distribution").exists()

    def test_only_the_roles_may_prepare_and_approve(self, valued, staff):
        alice, bob, carol = staff
        with pytest.raises(PaymentRunError, match="prepare-payments"):
            payment_run_prepare(period_end=RELEASE, actor=bob)
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        with pytest.raises(PaymentRunError, match="approve-payments"):
            payment_run_approve(run=run, actor=staff_user("dave", "administrator"))
        payment_run_approve(run=run, actor=carol)
        with pytest.raises(PaymentRunError, match="already"):
            payment_run_approve(run=run, actor=bob)

    def test_the_database_refuses_an_approval_by_the_preparer(self, valued, staff):
        from django.db import IntegrityError, transaction

        alice, _, _ = staff
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        with pytest.raises(IntegrityError), transaction.atomic():
            PaymentRun.objects.filter(pk=run.pk).update(approved_by=alice)

    def test_withholding_is_22_percent_then_37_above_a_million_of_the_years_supplemental_wages(self, valued):
        valued.amount = Decimal("1200000.00")
        withholding_apply(payments=[valued])
        # 1,000,000 x 22% + 200,000 x 37% ; Virginia 5.75%
        assert valued.federal_withholding == Decimal("220000.00") + Decimal("74000.00")
        assert valued.state_withholding == Decimal("69000.00") and valued.state == "VA"
        assert valued.net_amount == Decimal("1200000.00") - Decimal("294000.00") - Decimal("69000.00")

    def test_withholding_rates_are_dated_tables_the_committee_maintains(self, valued):
        withholding_rate_record(
            kind=WithholdingRate.Kind.STATE,
            jurisdiction="VA",
            rate=Decimal("5.00"),
            effective_date=dt.date(2026, 5, 1),
            actor="committee",
        )
        withholding_apply(payments=[valued])
        assert valued.state_withholding == Decimal("3000.00") and valued.federal_withholding == Decimal(
            "13200.00"
        )

    def test_payroll_gets_a_csv_of_an_approved_run_only(self, valued, staff):
        alice, bob, _ = staff
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        with pytest.raises(PaymentRunError, match="not approved"):
            payment_run_csv(run=run)
        run = payment_run_approve(run=run, actor=bob)
        lines = payment_run_csv(run=run).splitlines()
        assert lines[0].startswith("run,payment,employee_number")
        assert ",P1," in lines[1] and ",60000.00,13200.00,3450.00,43350.00,EDCP 5.1(b)," in lines[1]

    def test_the_register_pdf_lists_the_run(self, valued, staff):
        from core.pdf import document_bytes, pdf_text
        from payments.services.runs import payment_run_register

        alice, bob, _ = staff
        run = payment_run_prepare(period_end=RELEASE, actor=alice)
        payment_run_approve(run=run, actor=bob)
        doc = payment_run_register(run=run, actor=bob)
        text = pdf_text(document_bytes(doc))
        assert "Payment register" in text and "60,000.00" in text.replace("60000.00", "60,000.00")
        assert payment_run_register(run=run, actor=bob).pk == doc.pk


def test_the_payment_job_run_twice_for_a_day_pays_once():
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-04-30",
        )
    )
    from books.services.crediting import credit_valuation_date

    credit_valuation_date(valuation_date=dt.date(2026, 5, 1))
    first = payment_day_process(day=dt.date(2026, 5, 2))
    assert payment_day_process(day=dt.date(2026, 5, 2)) is None  # nothing left to do
    forced = dataclasses.replace(processing.payment_work(day=dt.date(2026, 5, 2)), to_value=True)
    again = payment_day_process(day=dt.date(2026, 5, 2), work=forced)  # a second worker claims the same day
    assert first.status == "done" and again.pk == first.pk and again.attempts == 1
    assert ScheduledPayment.objects.filter(status="valued").count() == 1
    assert JobRun.objects.filter(kind="payments", key="2026-05-02").count() == 1


def test_a_job_killed_in_the_middle_resumes_without_losing_or_duplicating(monkeypatch, settings):
    people = {f"P{i}": {"birth_date": "1968-04-10", "hire_date": "2012-03-01"} for i in range(1, 4)}
    events = []
    for pid in people:
        events += deferrals(pid, gross="20000.00") + [
            {"on": "2026-04-10", "type": "separation", "participant": pid, "reason": "resignation"}
        ]
    simulate(scenario(participants=people, events=events, through="2026-04-30"))
    from books.services.crediting import credit_valuation_date

    credit_valuation_date(valuation_date=dt.date(2026, 5, 1))
    settings.PAYMENT_JOB_BATCH = 1
    real = processing._value_batch
    calls = {"n": 0}

    def dies_after_one(batch, credited, stats):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("worker killed")
        real(batch, credited, stats)

    monkeypatch.setattr(processing, "_value_batch", dies_after_one)
    with pytest.raises(SystemExit):
        payment_day_process(day=dt.date(2026, 5, 2))
    assert ScheduledPayment.objects.filter(status="valued").count() == 1  # the first batch was committed
    assert JobRun.objects.get(kind="payments", key="2026-05-02").status == "running"
    monkeypatch.setattr(processing, "_value_batch", real)
    run = payment_day_process(day=dt.date(2026, 5, 2))
    assert run.status == "done" and run.attempts == 2
    amounts = list(ScheduledPayment.objects.values_list("status", "amount"))
    assert amounts == [("valued", Decimal("60000.00"))] * 3
    assert ScheduledPayment.history.filter(status="valued").count() == 3


def test_a_payment_to_an_unknown_address_is_held_and_stays_visible_until_resolved():
    from participants.models import Person
    from payments.selectors import payments_held

    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-04-30",
        )
    )
    Person.objects.filter(employee_number="P1").update(address_line1="")
    from books.services.crediting import credit_valuation_date

    credit_valuation_date(valuation_date=dt.date(2026, 5, 1))
    payment_day_process(day=dt.date(2026, 5, 2))
    held = list(payments_held())
    assert len(held) == 1 and "address" in held[0].hold_reason
    payment_day_process(day=dt.date(2026, 5, 3))
    assert list(payments_held()) == held
    Person.objects.filter(employee_number="P1").update(address_line1="2 New Street")
    payment_day_process(day=dt.date(2026, 5, 4))
    assert list(payments_held()) == []
    assert ScheduledPayment.objects.get().status == "valued"


def test_an_emergency_approval_for_more_than_the_balance_is_refused_and_nothing_changes(staff):
    _, bob, _ = staff
    simulate(scenario(events=deferrals(), through="2026-04-30"))
    from participants.models import Participation

    participation = Participation.objects.get()
    request = emergency_request_record(
        participation=participation,
        amount=Decimal("40000.00"),
        requested_on=dt.date(2026, 5, 4),
        actor="test",
    )
    with pytest.raises(WithdrawalError, match=r"more than the 30,000.00 .*EDCP 5.5"):
        emergency_approve(
            emergency=request, amount=Decimal("30000.01"), approved_on=dt.date(2026, 5, 5), actor=bob
        )
    request.refresh_from_db()
    assert request.status == "requested" and not ScheduledPayment.objects.exists()
    payments = emergency_approve(
        emergency=request, amount=Decimal("30000.00"), approved_on=dt.date(2026, 5, 5), actor=bob
    )
    assert [p.amount for p in payments] == [Decimal("30000.00")]


def test_an_emergency_is_taken_from_retirement_termination_then_the_latest_specified_date_first(staff):
    _, bob, _ = staff
    accounts = {"retirement_termination": 50, "specified_date:2029-06": 25, "specified_date:2033-09": 25}
    simulate(scenario(events=deferrals(accounts=accounts), through="2026-04-30"))
    from participants.models import Participation

    request = emergency_request_record(
        participation=Participation.objects.get(),
        amount=Decimal("20000.00"),
        requested_on=dt.date(2026, 5, 4),
        actor="test",
    )
    payments = emergency_approve(
        emergency=request, amount=Decimal("20000.00"), approved_on=dt.date(2026, 5, 5), actor=bob
    )
    assert [(p.account.name, p.amount) for p in payments] == [
        ("retirement_termination", Decimal("15000.00")),
        ("specified_date:2033-09", Decimal("5000.00")),
    ]


# The refused events of one history, replayed once: P1 dies 2026-05-20, then a second death, a separation and a
# domestic relations order after it are refused; P2, hired 2026-03-01, has a separation dated before that.
# (P2's own hire date keeps the replay to the months around P1's death: an event before P1's 2012 hire date would
# start the replay in 2011.)
_REFUSED = [
    ({"on": "2026-02-27", "type": "separation", "participant": "P2", "reason": "resignation"}, "before that"),
    ({"on": "2026-06-01", "type": "death", "participant": "P1"}, "already recorded as deceased"),
    ({"on": "2026-06-02", "type": "separation", "participant": "P1", "reason": "resignation"}, "after that"),
    (
        {
            "on": "2026-06-02",
            "type": "domestic_relations_order",
            "participant": "P1",
            "alternate_payee": "X",
            "amount": "10.00",
        },
        "after that",
    ),
]


class TestEventsBeforeHireOrAfterDeath:
    """One replay of P1's deferrals and death with every refused event of _REFUSED in it."""

    @pytest.fixture(scope="class")
    @classmethod
    def result(cls, django_db_setup, django_db_blocker):
        events = deferrals() + [{"on": "2026-05-20", "type": "death", "participant": "P1"}]
        events += [event for event, _ in _REFUSED]
        people = {
            "P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01"},
            "P2": {"birth_date": "1980-01-15", "hire_date": "2026-03-01"},
        }
        outcome: dict = {}
        with replayed_once(
            django_db_blocker,
            lambda: outcome.update(
                simulate(scenario(events=events, participants=people, through="2026-06-30"))
            ),
        ):
            yield outcome

    @pytest.mark.parametrize("refused", range(len(_REFUSED)), ids=[m for _, m in _REFUSED])
    def test_an_event_before_hire_or_after_death_or_a_second_death_is_refused(self, result, refused):
        event, message = _REFUSED[refused]
        got = result["events"][len(result["events"]) - len(_REFUSED) + refused]
        assert got["type"] == event["type"]
        assert got["status"] == "rejected" and message in got["message"], got

    def test_nothing_changes_the_death_benefit_is_the_only_payment(self, result):
        assert [(r["participant"], r["payment_date"], r["amount"]) for r in result["payments"]] == [
            ("P1", "2026-06-15", "30000.00")
        ]
