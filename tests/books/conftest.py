# The BRP's toy actuarial basis and Key Employee lists, for the liability report's tests.
from tests.pensions.conftest import no_key_employees, toy_basis  # noqa: F401
