import pytest

from plans import actuarial
from tests.brp.factories import TOY, key_employees


@pytest.fixture
def toy_basis(monkeypatch):
    """Every quote uses the toy table at 0% (tests/brp/factories.py): factors a person can check on paper."""
    monkeypatch.setattr(actuarial, "mortality_table", lambda year: (TOY, ""))
    monkeypatch.setattr(
        actuarial, "segment_rates_for", lambda day, lookback=1: (actuarial.InterestBasis.flat(0.0), "")
    )
    return TOY


@pytest.fixture
def no_key_employees(db):
    """The Key Employee lists that govern 2026 separations are on file (and name nobody)."""
    key_employees(2024)
    key_employees(2025)
