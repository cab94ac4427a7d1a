from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: jobs, calendar, roles"

    def ready(self) -> None:
        # In ready(): these modules import models, which Django allows only once the app registry is ready.
        from core.append_only import install_audit_triggers
        from core.signin import receivers  # noqa: F401  (connects the sign-in audit events)

        # After every migrate (and the test database's), so a history table added later is covered too.
        post_migrate.connect(install_audit_triggers, dispatch_uid="core.install_audit_triggers")
