"""Back office of elections. Elections are submitted through elections.services (validated, audited);
the admin shows them, their lines and their history."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from core.admin import ReadOnlyAdmin
from elections.models import (
    AnnuityElection,
    DeferralAllocation,
    DeferralCancellation,
    DeferralElection,
    DeferralElectionLine,
    DistributionElection,
    ElectionNotice,
    EnrollmentWindow,
    InvestmentElection,
    InvestmentElectionLine,
    ScheduleChange,
)

PERSON_SEARCH = ("participation__person__employee_number", "participation__person__last_name")


class DeferralLineInline(admin.TabularInline):
    model = DeferralElectionLine
    extra = 0


class DeferralAllocationInline(admin.TabularInline):
    model = DeferralAllocation
    extra = 0


class InvestmentLineInline(admin.TabularInline):
    model = InvestmentElectionLine
    extra = 0


class ElectionAdmin(SimpleHistoryAdmin):
    list_filter: tuple[str, ...] = ("status", "channel")
    search_fields = PERSON_SEARCH + ("rule", "message")
    list_select_related = ("participation__person", "participation__plan")
    raw_id_fields = ("participation",)


@admin.register(DeferralElection)
class DeferralElectionAdmin(ElectionAdmin):
    list_display = ("participation", "plan_year", "kind", "status", "rule", "submitted_at", "channel")
    list_filter = ("status", "kind", "plan_year", "channel")
    inlines = [DeferralLineInline, DeferralAllocationInline]


@admin.register(DistributionElection)
class DistributionElectionAdmin(ElectionAdmin):
    list_display = (
        "participation",
        "account_kind",
        "specified_month",
        "form",
        "installments",
        "status",
        "submitted_at",
    )


@admin.register(ScheduleChange)
class ScheduleChangeAdmin(ElectionAdmin):
    list_display = (
        "participation",
        "account_kind",
        "specified_month",
        "new_first_payment",
        "status",
        "submitted_at",
    )


@admin.register(InvestmentElection)
class InvestmentElectionAdmin(ElectionAdmin):
    list_display = ("participation", "applies_to", "effective_on", "rebalanced_on", "status", "submitted_at")
    inlines = [InvestmentLineInline]


@admin.register(DeferralCancellation)
class DeferralCancellationAdmin(SimpleHistoryAdmin):
    list_display = ("participation", "starts_on", "ends_on", "reason", "cite", "decided_by")
    search_fields = PERSON_SEARCH + ("reason",)
    list_select_related = ("participation__person", "participation__plan")
    raw_id_fields = ("participation",)


@admin.register(DeferralElectionLine)
class DeferralElectionLineAdmin(SimpleHistoryAdmin):
    list_display = ("election", "component", "percent")
    search_fields = ("election__participation__person__employee_number", "component")
    list_select_related = ("election__participation__person", "election__participation__plan")


@admin.register(DeferralAllocation)
class DeferralAllocationAdmin(SimpleHistoryAdmin):
    list_display = ("election", "account_kind", "specified_month", "percent")
    search_fields = ("election__participation__person__employee_number",)
    list_select_related = ("election__participation__person", "election__participation__plan")


@admin.register(InvestmentElectionLine)
class InvestmentElectionLineAdmin(SimpleHistoryAdmin):
    list_display = ("election", "fund", "percent")
    search_fields = ("election__participation__person__employee_number", "fund__code")
    list_select_related = ("election__participation__person", "election__participation__plan", "fund")


@admin.register(EnrollmentWindow)
class EnrollmentWindowAdmin(SimpleHistoryAdmin):
    list_display = ("plan", "kind", "plan_year", "participation", "opens_at", "closes_at")
    list_filter = ("plan", "kind", "plan_year")
    raw_id_fields = ("participation",)


@admin.register(ElectionNotice)
class ElectionNoticeAdmin(ReadOnlyAdmin):  # a log of emails sent
    list_display = ("participation", "kind", "sent_on")
    search_fields = PERSON_SEARCH
    raw_id_fields = ("participation",)


@admin.register(AnnuityElection)
class AnnuityElectionAdmin(ElectionAdmin):
    list_display = ("participation", "form", "status", "submitted_at")
