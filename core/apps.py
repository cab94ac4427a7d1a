from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: jobs, calendar, roles"

    def ready(self):
        from core.signin import receivers  # noqa: F401  (connects the sign-in audit events)
