from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from payments.models import (
    Annuity,
    DomesticRelationsOrder,
    EmergencyWithdrawal,
    PaymentRun,
    PaymentSchedule,
    ScheduledPayment,
    WithholdingRate,
)


class ReadOnly(SimpleHistoryAdmin):
    """Payments change only through their services (maker-checker): the admin reads."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(PaymentSchedule)
class PaymentScheduleAdmin(ReadOnly):
    list_display = ("id", "participation", "account", "kind", "trigger", "trigger_date", "revision")
    list_filter = ("kind", "trigger")


@admin.register(ScheduledPayment)
class ScheduledPaymentAdmin(ReadOnly):
    list_display = (
        "id",
        "participation",
        "account",
        "kind",
        "number",
        "of",
        "payment_date",
        "release_date",
        "status",
        "amount",
    )
    list_filter = ("status", "trigger")


@admin.register(Annuity)
class AnnuityAdmin(ReadOnly):
    list_display = (
        "id",
        "participation",
        "benefit",
        "form",
        "monthly",
        "status",
        "commencement_date",
        "fixed_on",
    )
    list_filter = ("status", "form")


@admin.register(PaymentRun)
class PaymentRunAdmin(ReadOnly):
    list_display = (
        "id",
        "period_end",
        "status",
        "prepared_by",
        "approved_by",
        "payments_count",
        "gross_total",
    )


for model in (WithholdingRate, EmergencyWithdrawal, DomesticRelationsOrder):
    admin.site.register(model, ReadOnly)
