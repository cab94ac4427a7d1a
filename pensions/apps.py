from django.apps import AppConfig


class PensionsConfig(AppConfig):
    name = "pensions"
    verbose_name = "Defined benefit: the BRP Supplemental Benefit"

    def ready(self) -> None:
        # elections asks for the monthly amount of a form of benefit on its review page (it never imports pensions).
        from core import hooks
        from pensions.selectors import annuity_form_quote

        hooks.answer("annuity_form_quote", annuity_form_quote)
