from django.apps import AppConfig


class TaxesConfig(AppConfig):
    name = "taxes"
    verbose_name = "Taxes: FICA special timing and year-end figures"
