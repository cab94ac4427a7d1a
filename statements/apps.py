from django.apps import AppConfig


class StatementsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "statements"
    verbose_name = "Participant statements"

    def ready(self) -> None:
        # The "statement available" notice (issue 13): one per new statement, after the statement commits.
        from statements.hooks import statement_issued  # on use: the app registry is ready only here
        from statements.receivers import statement_announce  # on use: it imports models

        statement_issued.connect(statement_announce, dispatch_uid="statement_available_notice")
