from tests.elections.test_browser import browser_page  # noqa: F401  (the browser test's fixture)
from tests.pensions.conftest import no_key_employees, toy_basis  # noqa: F401
from tests.taxes.test_pages import year  # noqa: F401  (the browser test uses the pages' population)
