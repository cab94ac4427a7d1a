"""Every row of the issue's "Payment schedules", replayed through the real services and jobs.

Amounts are hand-checked: one fund, price 10.00 (12.00 where a price change shows the valuation date).
P1 defers 50% of six semi-monthly 20,000.00 pays (January 15 to March 27): 60,000.00 in the account.
"""

from __future__ import annotations

import datetime as dt

import pytest

from payments.models import PaymentSchedule, ScheduledPayment
from tests.payments.factories import deferrals, scenario, simulate, totals

pytestmark = pytest.mark.django_db

KEY_2025 = {"P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01", "key_employee_years": [2025]}}


def sep(on: str, pid: str = "P1") -> dict:
    return {"on": on, "type": "separation", "participant": pid, "reason": "resignation"}


def rows(result, pid="P1"):
    return [
        (r["payment_date"], r["paid_on"], r["valued_as_of"], r["amount"], r["kind"], r["number"], r["of"])
        for r in result["payments"]
        if r["participant"] == pid
    ]


def test_termination_lump_sum_is_paid_the_15th_of_the_month_after_separation_valued_at_its_month_end():
    result = simulate(
        scenario(events=deferrals(gross="20000.00") + [sep("2026-04-10")], through="2026-06-30")
    )
    assert rows(result) == [("2026-05-15", "2026-05-15", "2026-04-30", "60000.00", "lump_sum", 1, 1)]
    assert result["payments"][0]["cite"] == "EDCP 5.1(b)"


def test_installments_are_the_value_before_each_payment_divided_by_the_installments_left():
    # The price moves to 12.00 after the first valuation: 60,000/3; then 52,000/2; then the 26,000 left.
    result = simulate(
        scenario(
            events=deferrals(gross="20000.00", form="installments", installments=3) + [sep("2026-04-10")],
            prices=[["2010-01-04", "10.00"], ["2026-05-01", "12.00"]],
            through="2028-06-30",
            checkpoints=["2028-06-30"],
        )
    )
    assert rows(result) == [
        ("2026-05-15", "2026-05-15", "2026-04-30", "20000.00", "installment", 1, 3),
        ("2027-05-15", "2027-05-17", "2027-04-30", "26000.00", "installment", 2, 3),
        ("2028-05-15", "2028-05-15", "2028-04-30", "26000.00", "installment", 3, 3),
    ]
    assert result["balances"]["2028-06-30"]["P1"]["retirement_termination"] == "0.00"


def test_key_employee_lump_sum_waits_until_the_first_day_of_the_seventh_month_valued_the_month_before():
    result = simulate(
        scenario(
            participants=KEY_2025,
            events=deferrals(gross="20000.00") + [sep("2026-04-10")],
            through="2026-12-31",
        )
    )
    assert rows(result) == [("2026-11-01", "2026-11-02", "2026-10-31", "60000.00", "lump_sum", 1, 1)]
    payment = ScheduledPayment.objects.get()
    assert "Key Employee" in payment.reason


def test_key_status_is_the_list_in_force_on_the_separation_date():
    # Identified 2025-12-31: key from 2026-04-01 through 2027-03-31; a separation on 2027-04-10 is not.
    result = simulate(
        scenario(
            participants=KEY_2025,
            events=deferrals(gross="20000.00") + [sep("2027-04-10")],
            through="2027-06-30",
        )
    )
    assert totals(result) == {("P1", "2027-05-15"): "60000.00"}


def test_lump_sum_and_installments_start_the_installments_on_the_first_anniversary_of_the_lump_sum():
    events = deferrals(
        gross="20000.00", form="lump_sum_and_installments", installments=2, lump_sum_percent=25
    )
    result = simulate(scenario(events=events + [sep("2026-04-10")], through="2028-06-30"))
    assert totals(result) == {
        ("P1", "2026-05-15"): "15000.00",
        ("P1", "2027-05-15"): "22500.00",
        ("P1", "2028-05-15"): "22500.00",
    }


def test_an_elected_later_start_moves_the_first_payment_and_values_it_the_month_before():
    events = deferrals(gross="20000.00")
    events[1]["delay_years"] = 1
    result = simulate(scenario(events=events + [sep("2026-04-10")], through="2027-06-30"))
    assert rows(result) == [("2027-05-15", "2027-05-17", "2027-04-30", "60000.00", "lump_sum", 1, 1)]


def test_small_balance_pays_at_once_overriding_installments():
    result = simulate(
        scenario(
            events=deferrals(form="installments", installments=3) + [sep("2026-04-10")], through="2026-06-30"
        )
    )
    assert rows(result) == [("2026-05-15", "2026-05-15", "2026-04-30", "30000.00", "lump_sum", 1, 1)]
    assert ScheduledPayment.objects.get().trigger == "small_balance"


def test_key_employee_small_balance_waits_but_keeps_the_value_at_the_end_of_the_month_of_separation():
    result = simulate(
        scenario(
            participants=KEY_2025,
            events=deferrals() + [sep("2026-04-10")],
            prices=[["2010-01-04", "10.00"], ["2026-06-01", "12.00"]],
            through="2026-11-30",
        )
    )
    # The 500 units the price rise left after the 30,000.00 were sold are paid as a residual the next Valuation
    # Date, which is also its Payment Date (payments.services.residuals).
    assert rows(result) == [
        ("2026-11-01", "2026-11-02", "2026-04-30", "30000.00", "lump_sum", 1, 1),
        ("2026-11-03", "2026-11-03", "2026-11-03", "6000.00", "lump_sum", 1, 1),
    ]
    assert [r["trigger"] for r in result["payments"]] == ["small_balance", "residual"]


def test_specified_date_installments_are_not_accelerated_by_separation():
    events = deferrals(accounts={"specified_date:2028-03": 100}, form="installments", installments=2)
    result = simulate(scenario(events=events + [sep("2026-06-10")], through="2029-06-30"))
    assert rows(result) == [
        ("2028-03-15", "2028-03-15", "2028-02-29", "15000.00", "installment", 1, 2),
        ("2029-03-15", "2029-03-15", "2029-02-28", "15000.00", "installment", 2, 2),
    ]
    assert {r["account"] for r in result["payments"]} == {"specified_date:2028-03"}


def test_company_contribution_pays_the_vested_balance_the_15th_of_the_month_after_separation():
    people = {"P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01", "vesting_service_years": 5}}
    events = deferrals(pays=1) + [
        {
            "on": "2026-01-20",
            "type": "company_contribution",
            "participant": "P1",
            "kind": "matching",
            "amount": "4000.00",
            "plan_year": 2025,
        },
        sep("2026-04-10"),
    ]
    result = simulate(scenario(participants=people, events=events, through="2026-06-30"))
    by_account = {r["account"]: r["amount"] for r in result["payments"]}
    assert by_account == {"retirement_termination": "5000.00", "company_contribution": "4000.00"}
    assert {r["payment_date"] for r in result["payments"]} == {"2026-05-15"}


def test_unvested_company_contribution_is_forfeited_and_nothing_is_paid_from_it():
    events = deferrals(pays=1) + [
        {
            "on": "2026-01-20",
            "type": "company_contribution",
            "participant": "P1",
            "kind": "matching",
            "amount": "4000.00",
            "plan_year": 2025,
        },
        sep("2026-04-10"),
    ]
    result = simulate(scenario(events=events, through="2026-06-30"))
    assert {r["account"] for r in result["payments"]} == {"retirement_termination"}
    assert result["forfeitures"][0]["amount"] == "4000.00"


def test_death_pays_what_is_left_as_one_lump_sum_valued_at_the_date_of_death():
    events = deferrals(gross="20000.00", form="installments", installments=3) + [
        sep("2026-04-10"),
        {"on": "2026-09-10", "type": "death", "participant": "P1"},
    ]
    result = simulate(scenario(events=events, through="2026-12-31"))
    assert rows(result) == [
        ("2026-05-15", "2026-05-15", "2026-04-30", "20000.00", "installment", 1, 3),
        ("2026-10-15", "2026-10-15", "2026-09-10", "40000.00", "lump_sum", 1, 1),
    ]
    cancelled = ScheduledPayment.objects.filter(status="cancelled")
    assert {p.number for p in cancelled} == {2, 3}
    schedule = PaymentSchedule.objects.get(account__kind="retirement_termination")
    assert schedule.trigger == "death" and schedule.history.count() >= 3


def test_death_ends_a_key_employees_wait():
    events = deferrals(gross="20000.00") + [
        sep("2026-04-10"),
        {"on": "2026-07-20", "type": "death", "participant": "P1"},
    ]
    result = simulate(scenario(participants=KEY_2025, events=events, through="2026-12-31"))
    assert rows(result) == [("2026-08-15", "2026-08-17", "2026-07-20", "60000.00", "lump_sum", 1, 1)]


def test_death_accelerates_specified_date_accounts():
    events = deferrals(accounts={"retirement_termination": 50, "specified_date:2030-06": 50}) + [
        {"on": "2026-07-20", "type": "death", "participant": "P1"}
    ]
    result = simulate(scenario(events=events, through="2026-08-31"))
    assert totals(result) == {("P1", "2026-08-15"): "30000.00"}


def test_separation_within_24_months_after_a_change_in_control_pays_everything_at_once():
    events = (
        [{"on": "2026-01-05", "type": "change_in_control"}]
        + deferrals(
            gross="20000.00",
            accounts={"retirement_termination": 50, "specified_date:2031-03": 50},
            form="installments",
            installments=5,
        )
        + [sep("2026-04-10")]
    )
    result = simulate(scenario(events=events, through="2026-06-30"))
    assert totals(result) == {("P1", "2026-05-15"): "60000.00"}
    assert {r["trigger"] for r in result["payments"]} == {"change_in_control"}


def test_separation_after_the_24_months_follows_the_elections():
    events = (
        [{"on": "2026-01-05", "type": "change_in_control"}]
        + deferrals(gross="20000.00", form="installments", installments=2)
        + [sep("2028-01-06")]
    )
    result = simulate(scenario(events=events, through="2028-02-29"))
    assert totals(result) == {("P1", "2028-02-15"): "30000.00"}


def test_rrp_pays_the_whole_vested_balance_on_the_separation_date():
    # 400,000 of pay in January: 40,000 above the 2026 401(a)(17) limit; 10% deferred = 4,000;
    # RRP 2017 matching 100% of the deferral up to 6% of that Plan Compensation = 2,400.
    people = {"R1": {"birth_date": "1970-01-01", "hire_date": "2010-01-04"}}
    events = [
        {
            "on": "2025-12-10",
            "type": "deferral_election",
            "participant": "R1",
            "plan_year": 2026,
            "percentages": {"plan_compensation": 10},
        },
        {
            "on": "2026-01-30",
            "type": "pay",
            "participant": "R1",
            "component": "base_salary",
            "gross": "400000.00",
        },
        sep("2026-03-04", "R1"),
    ]
    result = simulate(scenario(plan="RRP", participants=people, events=events, through="2026-04-30"))
    assert totals(result) == {("R1", "2026-03-04"): "6400.00"}
    assert {r["valued_as_of"] for r in result["payments"]} == {"2026-03-04"}


def test_rrp_key_employee_waits_until_the_month_after_the_six_month_anniversary():
    people = {"R1": {"birth_date": "1970-01-01", "hire_date": "2010-01-04", "key_employee_years": [2025]}}
    events = [
        {
            "on": "2025-12-10",
            "type": "deferral_election",
            "participant": "R1",
            "plan_year": 2026,
            "percentages": {"plan_compensation": 10},
        },
        {
            "on": "2026-01-30",
            "type": "pay",
            "participant": "R1",
            "component": "base_salary",
            "gross": "400000.00",
        },
        sep("2026-08-19", "R1"),
    ]
    result = simulate(scenario(plan="RRP", participants=people, events=events, through="2027-03-31"))
    assert totals(result) == {("R1", "2027-03-01"): "6400.00"}


def test_rrp_disability_pays_at_once_even_for_a_key_employee():
    people = {"R1": {"birth_date": "1970-01-01", "hire_date": "2010-01-04", "key_employee_years": [2025]}}
    events = [
        {
            "on": "2025-12-10",
            "type": "deferral_election",
            "participant": "R1",
            "plan_year": 2026,
            "percentages": {"plan_compensation": 10},
        },
        {
            "on": "2026-01-30",
            "type": "pay",
            "participant": "R1",
            "component": "base_salary",
            "gross": "400000.00",
        },
        {"on": "2026-05-06", "type": "disability", "participant": "R1"},
    ]
    result = simulate(scenario(plan="RRP", participants=people, events=events, through="2026-06-30"))
    assert totals(result) == {("R1", "2026-05-06"): "6400.00"}


def test_rrp_key_employee_dying_during_the_wait_is_paid_on_the_date_of_death():
    people = {"R1": {"birth_date": "1970-01-01", "hire_date": "2010-01-04", "key_employee_years": [2025]}}
    events = [
        {
            "on": "2025-12-10",
            "type": "deferral_election",
            "participant": "R1",
            "plan_year": 2026,
            "percentages": {"plan_compensation": 10},
        },
        {
            "on": "2026-01-30",
            "type": "pay",
            "participant": "R1",
            "component": "base_salary",
            "gross": "400000.00",
        },
        sep("2026-08-19", "R1"),
        {"on": "2026-10-07", "type": "death", "participant": "R1"},
    ]
    result = simulate(scenario(plan="RRP", participants=people, events=events, through="2027-03-31"))
    assert totals(result) == {("R1", "2026-10-07"): "6400.00"}


def test_a_domestic_relations_order_pays_the_alternate_payee_on_the_first_valuation_date_after_it():
    events = deferrals(gross="20000.00") + [
        {
            "on": "2026-05-09",
            "type": "domestic_relations_order",
            "participant": "P1",
            "alternate_payee": "A. Payee",
            "amount": "10000.00",
        }
    ]
    result = simulate(scenario(events=events, through="2026-06-30", checkpoints=["2026-05-31"]))
    assert rows(result) == [("2026-05-09", "2026-05-11", "2026-05-09", "10000.00", "lump_sum", 1, 1)]
    assert result["payments"][0]["payee"] == "A. Payee"
    assert result["balances"]["2026-05-31"]["P1"]["retirement_termination"] == "50000.00"


def test_a_domestic_relations_order_for_more_than_the_account_is_refused():
    events = deferrals() + [
        {
            "on": "2026-05-09",
            "type": "domestic_relations_order",
            "participant": "P1",
            "alternate_payee": "A. Payee",
            "amount": "30000.01",
        }
    ]
    result = simulate(scenario(events=events, through="2026-05-31"))
    last = result["events"][-1]
    assert (last["status"], last["rule"]) == ("rejected", "EDCP 5.9")
    assert "more than" in last["message"] and result["payments"] == []


def test_a_missing_key_employee_list_holds_the_payment_until_the_list_is_recorded():
    from participants.models import KeyEmployeeList, Person
    from participants.services import employment_event_record, key_employee_list_record
    from payments.services.processing import payment_day_process

    simulate(scenario(events=deferrals(gross="20000.00"), through="2026-03-31"))
    KeyEmployeeList.objects.filter(identification_year=2025).delete()
    p1 = Person.objects.get(employee_number="P1")
    employment_event_record(
        person=p1, kind="separation", effective_date=dt.date(2026, 4, 10), actor="test", reason="resignation"
    )
    payment = ScheduledPayment.objects.get(account__kind="retirement_termination")
    assert payment.status == "held" and "identification year 2025" in payment.hold_reason
    payment_day_process(day=dt.date(2026, 4, 11))
    assert ScheduledPayment.objects.get(pk=payment.pk).status == "held"  # still on the work queue
    key_employee_list_record(identification_year=2025, people=[], actor="test")
    payment_day_process(day=dt.date(2026, 4, 12))
    payment.refresh_from_db()
    assert (payment.status, payment.hold_reason, payment.payment_date) == (
        "scheduled",
        "",
        dt.date(2026, 5, 15),
    )


def _three_separate(*, change_in_control: bool) -> dict:
    """Three people with two accounts each separate on one day: the month-end value that makes their six schedules
    final is credited on one day, and one recompute names all six accounts."""
    people = {p: {"birth_date": "1968-04-10", "hire_date": "2012-03-01"} for p in ("P1", "P2", "P3")}
    events: list[dict] = [{"on": "2026-01-05", "type": "change_in_control"}] if change_in_control else []
    for p in people:
        events += deferrals(
            p,
            gross="20000.00",
            accounts={"retirement_termination": 50, "specified_date:2031-03": 50},
            form="installments",
            installments=5,
        )
    events += [sep("2026-04-10", p) for p in people]
    return scenario(events=events, participants=people, through="2026-06-30")


@pytest.mark.parametrize("chunk", [1, 4, 5000])
def test_a_recompute_of_many_accounts_goes_round_by_round_with_the_same_answer(monkeypatch, chunk):
    # PostgreSQL takes at most 65,535 parameters in one statement, so a change in control over 100,000
    # participants (some 220,000 accounts) is recomputed RECOMPUTE_CHUNK accounts at a time: any size of round
    # gives the same answer, EDCP 5.6's lump sum of both accounts on the 15th of the month after separation.
    import payments.services.schedules as schedules

    monkeypatch.setattr(schedules, "RECOMPUTE_CHUNK", chunk)
    result = simulate(_three_separate(change_in_control=True))
    assert totals(result) == {(p, "2026-05-15"): "60000.00" for p in ("P1", "P2", "P3")}
    assert {(r["participant"], r["amount"], r["trigger"]) for r in result["payments"]} == {
        (p, "30000.00", "change_in_control") for p in ("P1", "P2", "P3")
    }


def test_a_recompute_that_fails_in_a_later_round_changes_no_schedule(monkeypatch):
    import payments.services.schedules as schedules
    from books.models import Account
    from participants.models import ChangeInControl

    simulate(_three_separate(change_in_control=False))
    # Recorded without its hook, so that the recompute below is the one that plans EDCP 5.6's lump sums.
    ChangeInControl.objects.create(
        effective_date=dt.date(2026, 1, 5),
        recorded_at=dt.datetime(2026, 7, 1, tzinfo=dt.UTC),
        recorded_by="test",
    )
    before = list(PaymentSchedule.objects.order_by("id").values_list("id", "revision"))
    real = schedules._recompute_round
    rounds: list[list[int]] = []

    def second_fails(ids, **kw):
        rounds.append(ids)
        if len(rounds) == 2:
            raise RuntimeError("the second round fails")
        return real(ids, **kw)

    monkeypatch.setattr(schedules, "RECOMPUTE_CHUNK", 2)
    monkeypatch.setattr(schedules, "_recompute_round", second_fails)
    recompute = {"account_ids": Account.objects.values_list("id", flat=True), "because": "test"}
    with pytest.raises(RuntimeError):
        schedules.schedules_recompute(**recompute, as_of=dt.date(2026, 7, 1))
    assert len(rounds[0]) == 2
    assert list(PaymentSchedule.objects.order_by("id").values_list("id", "revision")) == before
    # The same recompute, whole, changes every schedule.
    monkeypatch.setattr(schedules, "_recompute_round", real)
    assert len(schedules.schedules_recompute(**recompute, as_of=dt.date(2026, 7, 1))) == 6
