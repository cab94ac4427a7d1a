from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = "Payments: schedules, payment runs, withholding"

    def ready(self) -> None:
        # books registers its forfeiture reaction first (earlier in INSTALLED_APPS): schedules see the vested value.
        # In ready(): these modules import models, which Django allows only once the app registry is ready.
        from core import hooks
        from core.workqueue import work_queue_register
        from payments import liability, selectors
        from payments.services import annuities, dates_preview, schedules
        from payments.workqueue import payments_work_queue

        hooks.register(
            "employment_event", annuities.accounts_open_on_event
        )  # before the schedules follow the event
        hooks.register("employment_event", schedules.on_employment_event)
        hooks.register("change_in_control", schedules.on_change_in_control)
        hooks.register("payment_schedule_input", schedules.on_schedule_election)
        hooks.answer("account_payments_started", selectors.account_payments_started)
        hooks.answer("defined_benefit_value", liability.defined_benefit_value)
        hooks.answer("payment_dates_preview", dates_preview.payment_dates_preview)
        hooks.answer("defined_benefit_values", liability.defined_benefit_values)
        # the pensions pages read and act on the benefit in pay through these (pensions never imports payments)
        hooks.register("benefit_in_pay_read", annuities.in_pay_read)
        hooks.register("benefit_survivor_death", annuities.on_survivor_death)
        hooks.register("benefit_pre_2005_cash_out_read", annuities.pre_2005_cash_out_read)
        hooks.register("benefit_pre_2005_cash_out", annuities.on_pre_2005_cash_out)
        work_queue_register(payments_work_queue)  # the staff dashboard's work queue lines
