"""Back office of the books. The ledger and the daily valuations are append-only (the database refuses
UPDATE and DELETE), so the admin only shows them; an applied pending transaction is posted and frozen."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from books.models import (
    Account,
    ContributionDeclaration,
    DailyValuation,
    DefinedBenefitRecord,
    Forfeiture,
    LedgerEntry,
    ParallelRun,
    ParallelRunDay,
    ParallelRunDifference,
    ParallelRunTolerance,
    PayrollDeferral,
    PayrollRecord,
    PendingTransaction,
    Position,
)
from core.admin import ReadOnlyAdmin


@admin.register(Account)
class AccountAdmin(SimpleHistoryAdmin):
    list_display = ("participation", "kind", "specified_month", "opened_on")
    list_filter = ("participation__plan", "kind")
    search_fields = ("participation__person__employee_number", "participation__person__last_name")
    list_select_related = ("participation__person", "participation__plan")
    raw_id_fields = ("participation",)


@admin.register(Position)
class PositionAdmin(ReadOnlyAdmin):
    list_display = ("account", "fund")
    list_filter = ("fund__plan", "fund")
    search_fields = ("account__participation__person__employee_number",)
    list_select_related = ("account__participation__person", "account__participation__plan", "fund")


@admin.register(PendingTransaction)
class PendingTransactionAdmin(admin.ModelAdmin):
    list_display = (
        "effective_date",
        "account",
        "kind",
        "source",
        "amount",
        "status",
        "applied_on",
        "applied_amount",
        "cite",
    )
    list_filter = ("status", "kind", "source")
    search_fields = ("idempotency_key", "account__participation__person__employee_number", "memo")
    list_select_related = ("account__participation__person", "account__participation__plan")
    raw_id_fields = ("account",)

    def has_add_permission(self, request):
        return False  # money is queued through books.services.accounts, never typed in

    # Issue 12: money queued is changed through the services (with their audit events), not typed over here.
    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "valuation_date",
        "effective_date",
        "account",
        "kind",
        "source",
        "units",
        "price",
        "amount",
        "actor",
    )
    list_filter = ("kind", "source")
    search_fields = ("idempotency_key", "account__participation__person__employee_number", "memo")
    list_select_related = ("account__participation__person", "account__participation__plan")


@admin.register(DailyValuation)
class DailyValuationAdmin(ReadOnlyAdmin):
    list_display = (
        "valuation_date",
        "position_id",
        "account_id",
        "fund",
        "units",
        "price",
        "value",
        "flow",
        "earnings",
    )
    list_select_related = ("fund",)
    search_fields = ("=account__id", "=position__id")
    show_full_result_count = False


@admin.register(PayrollRecord)
class PayrollRecordAdmin(ReadOnlyAdmin):
    list_display = (
        "pay_date",
        "person",
        "component",
        "gross",
        "plan_year",
        "sequence",
        "batch",
        "line_number",
    )
    list_filter = ("component", "plan_year")
    search_fields = ("person__employee_number", "person__last_name")
    list_select_related = ("person",)


@admin.register(PayrollDeferral)
class PayrollDeferralAdmin(ReadOnlyAdmin):
    list_display = (
        "record",
        "participation",
        "compensation",
        "plan_compensation",
        "percent",
        "deferral",
        "matching",
        "reduced_by",
    )
    search_fields = ("record__person__employee_number",)
    list_select_related = ("record__person", "participation__plan", "participation__person")


@admin.register(ContributionDeclaration)
class ContributionDeclarationAdmin(SimpleHistoryAdmin):
    list_display = (
        "plan",
        "plan_year",
        "kind",
        "percent",
        "declared_on",
        "declared_by",
        "participants_credited",
        "total_credited",
    )
    list_filter = ("plan", "kind")

    def has_add_permission(self, request):
        return False  # declared through books.services.contributions.restoration_declare, which credits the accounts


@admin.register(Forfeiture)
class ForfeitureAdmin(ReadOnlyAdmin):
    list_display = ("on", "account", "percent_vested", "amount", "cite")
    search_fields = ("account__participation__person__employee_number",)
    list_select_related = ("account__participation__person", "account__participation__plan")


@admin.register(DefinedBenefitRecord)
class DefinedBenefitRecordAdmin(SimpleHistoryAdmin):
    list_display = (
        "participation",
        "as_of",
        "unlimited_annual_benefit",
        "payable_annual_benefit",
        "benefit_service_years",
        "normal_retirement_date",
    )
    search_fields = ("participation__person__employee_number", "participation__person__last_name")
    list_filter = ("participation__plan",)


@admin.register(ParallelRunTolerance)
class ParallelRunToleranceAdmin(ReadOnlyAdmin):
    """Set by the Committee on the parallel-run page (each setting kept)."""

    list_display = ("set_at", "amount", "set_by", "note")


@admin.register(ParallelRun)
class ParallelRunAdmin(ReadOnlyAdmin):
    """Kept comparisons of the parallel run (books.services.parallel): made on the staff page or by command."""

    list_display = (
        "run_at",
        "file_name",
        "first_date",
        "last_date",
        "rows",
        "tolerance",
        "differences",
        "run_by",
    )


@admin.register(ParallelRunDay)
class ParallelRunDayAdmin(ReadOnlyAdmin):
    list_display = ("run", "valuation_date", "credited_here", "prior_value", "our_value", "differences")
    list_select_related = ("run",)


@admin.register(ParallelRunDifference)
class ParallelRunDifferenceAdmin(ReadOnlyAdmin):
    list_display = ("run", "valuation_date", "kind", "employee_number", "plan_code", "account", "fund_code")
    list_filter = ("kind",)
    search_fields = ("employee_number",)
    list_select_related = ("run",)
