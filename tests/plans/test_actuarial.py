"""Actuarial equivalence (BRP 4.2(c)) against hand-computed cases."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from plans.actuarial import (
    InterestBasis,
    Life,
    MortalityTable,
    annuity_certain_and_life,
    annuity_life,
    convert,
    mortality_table,
    segment_rates_for,
)


def toy_table() -> MortalityTable:
    """Nobody dies before 66; everybody dies during age 66 (q66 = 1)."""
    return MortalityTable("toy", tuple([0.0] * 66 + [1.0]))


def test_annuity_due_at_zero_interest_counts_expected_monthly_payments_under_udd():
    # 12 certain payments during age 65, then during age 66 survival falls linearly: sum (1 - k/12), k=0..11
    expected = (12 + sum(1 - k / 12 for k in range(12))) / 12
    assert annuity_life(toy_table(), Life(65), InterestBasis.flat(0.0)) == pytest.approx(expected)


def test_certain_and_life_pays_at_least_the_certain_period():
    assert annuity_certain_and_life(toy_table(), Life(65), InterestBasis.flat(0.0), 60) == pytest.approx(5.0)


def test_a_65_year_old_on_the_2026_irs_table_at_5_percent_is_in_the_expected_range():
    table, note = mortality_table(2026)
    assert note == ""
    assert table.q(65) == pytest.approx(0.00729)  # as quoted from Notice 2025-40 (README)
    assert 12.0 < annuity_life(table, Life(65), InterestBasis.flat(5.0)) < 14.5


def test_joint_and_survivor_pays_less_than_single_life_and_more_survivor_costs_more():
    table, _ = mortality_table(2026)
    basis = InterestBasis.flat(5.0)
    sla = Decimal("12000.00")
    quotes = {
        f: convert(
            single_life_annual=sla, form=f, table=table, basis=basis, participant=Life(65), spouse=Life(62)
        )
        for f in ("single_life", "js_50", "js_75", "js_100")
    }
    assert quotes["single_life"].annual == sla
    assert quotes["js_50"].annual > quotes["js_75"].annual > quotes["js_100"].annual
    assert quotes["js_100"].annual < sla


def test_lump_sum_is_the_present_value_of_the_single_life_annuity():
    table, _ = mortality_table(2026)
    basis = InterestBasis.flat(5.0)
    q = convert(
        single_life_annual=Decimal("1000.00"), form="lump_sum", table=table, basis=basis, participant=Life(65)
    )
    assert q.annual == (Decimal("1000") * Decimal(str(annuity_life(table, Life(65), basis)))).quantize(
        Decimal("0.01")
    )


def test_missing_years_and_months_fall_back_to_the_latest_published_and_say_so():
    table, note = mortality_table(2031)
    assert "2026 table is used" in note
    basis, note = segment_rates_for(dt.date(2030, 1, 1))
    assert "May 2026 is used" in note
    basis, note = segment_rates_for(dt.date(2026, 2, 1))
    assert note == "" and basis.segments == (4.03, 5.20, 6.12)


def test_life_ages_in_whole_years_and_months():
    assert Life.on(dt.date(1961, 5, 20), dt.date(2026, 7, 1)) == Life(65, 1)


# --- segment boundaries (RULES.md "BRP readings": less than 5 years, 5 up to 20, 20 and more) -------------


def dead_at_once() -> MortalityTable:
    """q0 = 1: only the certain payments of a period certain are paid."""
    return MortalityTable("dead at once", (1.0,))


def test_brp_4_2_b_a_payment_due_exactly_five_years_after_the_start_takes_the_second_segment_rate():
    basis = InterestBasis((1.0, 2.0, 3.0), "toy")
    assert basis.rate(4.99) == 1.0
    assert basis.rate(5.0) == 2.0
    assert basis.rate(19.99) == 2.0
    assert basis.rate(20.0) == 3.0


def test_brp_4_2_b_sixty_one_certain_payments_discount_only_the_sixty_first_at_the_second_rate():
    # 0% first segment, 100% second: payments 1-60 (t = 0 .. 4 11/12 years) are worth 60/12 = 5;
    # payment 61 falls at t = 5 exactly, in the second segment: 2^-5 / 12 = 1/384.
    basis = InterestBasis((0.0, 100.0, 100.0), "toy")
    factor = annuity_certain_and_life(dead_at_once(), Life(0), basis, 61)
    assert factor == pytest.approx(5 + 1 / 384)


def test_brp_4_2_b_the_segment_boundary_is_a_parameter_of_the_basis():
    # boundaries 3 and 20 years: payments 37-61 (t = 3 .. 5 years) now take 100%: sum 2^-(m/12) / 12, m = 36..60
    basis = InterestBasis((0.0, 100.0, 100.0), "toy", (3, 20))
    expected = 36 / 12 + sum(2 ** (-m / 12) / 12 for m in range(36, 61))
    assert annuity_certain_and_life(dead_at_once(), Life(0), basis, 61) == pytest.approx(expected)


def test_brp_4_2_b_the_shipped_basis_keeps_its_boundaries_and_names_them():
    basis, _ = segment_rates_for(dt.date(2026, 2, 1))
    assert basis.boundaries == (5, 20) and "boundaries 5 and 20 years" in basis.label
    other, _ = segment_rates_for(dt.date(2026, 2, 1), 1, [4, 15])
    assert other.boundaries == (4.0, 15.0) and other.rate(4.0) == 5.20 and other.rate(3.99) == 4.03
    with pytest.raises(ValueError):
        segment_rates_for(dt.date(2026, 2, 1), 1, (20, 5))
