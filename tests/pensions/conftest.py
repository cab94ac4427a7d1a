import pytest

from plans import actuarial
from tests.pensions.factories import TOY, key_employees


@pytest.fixture
def toy_basis(monkeypatch):
    """Every quote uses the toy table at 0% (tests/pensions/factories.py): factors a person can check on paper."""
    monkeypatch.setattr(actuarial, "mortality_table", lambda year: (TOY, ""))
    monkeypatch.setattr(
        actuarial,
        "segment_rates_for",
        lambda day, lookback=1, boundaries=(5, 20): (actuarial.InterestBasis.flat(0.0), ""),
    )
    return TOY


@pytest.fixture
def no_key_employees(db):
    """The Key Employee lists that govern 2026 separations are on file (and name nobody)."""
    key_employees(2024)
    key_employees(2025)
