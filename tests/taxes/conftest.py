from tests.pensions.conftest import no_key_employees, toy_basis  # noqa: F401
