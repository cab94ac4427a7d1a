from django.apps import AppConfig


class BooksConfig(AppConfig):
    name = "books"
    verbose_name = "Plan books: accounts, ledger, crediting"

    def ready(self) -> None:
        # In ready(): these modules import models, which Django allows only once the app registry is ready.
        from books import selectors
        from books.services.vesting import on_employment_event
        from core import hooks

        hooks.register("employment_event", on_employment_event)
        hooks.answer("accounts_held", selectors.accounts_held)
        hooks.answer("account_holds_deferrals", selectors.account_holds_deferrals)
        hooks.answer("payroll_reductions", selectors.payroll_reductions)
        hooks.answer("last_pay_lines", selectors.last_pay_lines)
