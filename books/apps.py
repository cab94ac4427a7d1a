from django.apps import AppConfig


class BooksConfig(AppConfig):
    name = "books"
    verbose_name = "Plan books: accounts, ledger, crediting"

    def ready(self) -> None:
        from books.services.vesting import on_employment_event
        from core import hooks

        hooks.register("employment_event", on_employment_event)
