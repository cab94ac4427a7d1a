"""A BRP scenario in the simulator (scenarios/brp_annuities_key_employee_and_death.json): Pension Plan figures and
annuity elections as events, separations and a death through the hooks, payments through the two-person runs.
tests/simulation/test_scenarios.py checks its `expect` (the amounts of the shipped basis); here, their relations."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings

from books.models import PendingTransaction
from operations.simulation.runner import run_scenario
from operations.simulation.sandbox import rolled_back
from operations.simulation.scenario import ScenarioError, load_scenario, parse_scenario

SCENARIO = Path(settings.BASE_DIR) / "scenarios" / "brp_annuities_key_employee_and_death.json"


@pytest.mark.django_db
def test_the_brp_scenario_pays_the_catch_up_then_monthly_and_the_guarantee_after_death():
    scenario = load_scenario(SCENARIO)
    with rolled_back():
        out = run_scenario(scenario)
        assert not PendingTransaction.objects.exists()  # an annuity payment sells no notional units
    assert {e["status"] for e in out["events"]} == {"applied"}
    p1 = [p for p in out["payments"] if p["participant"] == "P1"]
    p2 = [p for p in out["payments"] if p["participant"] == "P2"]
    monthly = Decimal(p1[1]["amount"])
    # BRP 4.3: separation 2026-04-20, the first payment on November 1 holds May through November (7 payments)
    assert (p1[0]["payment_date"], Decimal(p1[0]["amount"]), p1[0]["cite"]) == (
        "2026-11-01",
        monthly * 7,
        "BRP 4.3",
    )
    assert [p["payment_date"] for p in p1[1:]] == ["2026-12-01", "2027-01-01", "2027-02-01", "2027-03-01"]
    assert {p["amount"] for p in p1[1:]} == {str(monthly)}
    # 120 payments certain (4.2(c)): from June 1, 2026; after the death on October 5 to the estate (5.2 does not apply)
    assert [p["payment_date"] for p in p2][:2] == ["2026-06-01", "2026-07-01"] and len(p2) == 10
    assert len({p["amount"] for p in p2}) == 1 and p2[0]["of"] == 120
    assert [p.get("payee", "") for p in p2] == [""] * 5 + ["Estate of Participant P2"] * 5


def test_a_malformed_brp_event_is_refused_naming_the_field():
    base = {
        "name": "t",
        "plan": "BRP",
        "through": "2026-12-31",
        "funds": {"SV": {"name": "SV", "default": True, "prices": [["2010-01-04", "10.00"]]}},
        "participants": {"P1": {"birth_date": "1961-03-10", "hire_date": "1990-06-01"}},
    }
    with pytest.raises(ScenarioError, match=r"event 0 \(annuity_election\) field form"):
        parse_scenario(
            {
                **base,
                "events": [
                    {
                        "on": "2026-01-02",
                        "type": "annuity_election",
                        "participant": "P1",
                        "form": "installments",
                    }
                ],
            }
        )
    with pytest.raises(
        ScenarioError, match=r"event 0 \(pension_figures\) field payable_annual_benefit: missing"
    ):
        parse_scenario(
            {
                **base,
                "events": [
                    {
                        "on": "2026-01-02",
                        "type": "pension_figures",
                        "participant": "P1",
                        "unlimited_annual_benefit": "1.00",
                        "benefit_service_years": "1",
                        "normal_retirement_date": "2026-03-10",
                    }
                ],
            }
        )


def _expected(name: str) -> list[dict]:
    import json

    return json.loads((SCENARIO.parent / name).read_text())["expect"]["payments"]


def test_brp_4_2_b_the_2007_lump_sum_scenario_pays_the_actuarial_equivalent_of_the_single_life_annuity():
    import datetime as dt

    from plans import actuarial

    (p1,) = [p for p in _expected("brp_2007_lump_sum_election.json") if p["participant"] == "P1"]
    table, _ = actuarial.mortality_table(2026)
    basis, _ = actuarial.segment_rates_for(dt.date(2026, 5, 1), 1, (5, 20))
    lump = actuarial.convert(
        single_life_annual=Decimal("70000.00"),
        form="lump_sum",
        table=table,
        basis=basis,
        participant=actuarial.Life.on(dt.date(1961, 3, 10), dt.date(2026, 5, 1)),
    )
    assert (p1["payment_date"], Decimal(p1["amount"])) == ("2026-05-01", lump.annual)


def test_brp_3_4_a_the_early_commencement_scenario_is_capped_at_the_early_reduced_ceiling():
    by = {
        (p["participant"], p["payment_date"]): Decimal(p["amount"])
        for p in _expected("brp_early_commencement_under_the_ceiling.json")
    }
    # (725,000 - 110,000 x 0.8) / 12 = 637,000 / 12; at Normal Retirement (725,000 - 110,000) / 12
    assert by[("P1", "2026-05-01")] == Decimal("53083.33")
    assert by[("P2", "2026-05-01")] == Decimal("51250.00")


def test_brp_6_7_the_order_scenario_pays_the_share_lump_sum_on_the_plan_basis():
    import datetime as dt

    from plans import actuarial

    by = {
        (p["participant"], p["payment_date"]): Decimal(p["amount"])
        for p in _expected("brp_order_against_a_benefit_in_pay.json")
    }
    # P1: 40% of each 5,833.33 payment goes to the Alternate Payee; the total per Payment Date is unchanged
    assert by[("P1", "2026-07-01")] == by[("P1", "2026-05-01")] == Decimal("5833.33")
    table, _ = actuarial.mortality_table(2026)
    basis, _ = actuarial.segment_rates_for(dt.date(2026, 7, 1), 1, (5, 20))
    factor = actuarial.annuity_life(
        table, actuarial.Life.on(dt.date(1961, 3, 10), dt.date(2026, 7, 1)), basis
    )
    lump = (Decimal("1000.00") * 12 * Decimal(str(factor))).quantize(Decimal("0.01"))
    # P2: the 1,000.00 share bought out on July 1, 2026, then 4,833.33 a month
    assert by[("P2", "2026-07-01")] == lump + Decimal("4833.33")
    assert by[("P2", "2026-08-01")] == Decimal("4833.33")
