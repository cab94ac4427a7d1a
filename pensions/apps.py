from django.apps import AppConfig


class PensionsConfig(AppConfig):
    name = "pensions"
    verbose_name = "Defined benefit: the BRP Supplemental Benefit"
