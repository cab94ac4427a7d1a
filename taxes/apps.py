from django.apps import AppConfig


class TaxesConfig(AppConfig):
    name = "taxes"
    verbose_name = "Taxes: FICA special timing and year-end figures"

    def ready(self) -> None:
        # In ready(): the selectors import models, which Django allows only once the app registry is ready.
        from core import hooks
        from taxes.selectors import person_years

        hooks.answer("tax_years", person_years)
