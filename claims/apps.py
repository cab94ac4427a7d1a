from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"

    def ready(self) -> None:
        # In ready(): the module imports models, which Django allows only once the app registry is ready.
        from claims.workqueue import claims_work_queue
        from core.workqueue import work_queue_register

        work_queue_register(claims_work_queue)  # the staff dashboard's claims line
