"""Back office about people. Employment events, Key Employee lists and beneficiary designations are
recorded through participants.services (audited); the admin shows their history."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from core.admin import ReadOnlyAdmin
from participants.models import (
    Beneficiary,
    BeneficiaryDesignation,
    BeneficiaryTaxInfo,
    ChangeInControl,
    EmploymentEvent,
    KeyEmployeeList,
    Participation,
    Person,
    VestingServiceCredit,
)


class ParticipationInline(admin.TabularInline):
    model = Participation
    extra = 0
    fields = ("plan", "entered_on", "eligible_on", "ended_on", "eligible")


@admin.register(Person)
class PersonAdmin(SimpleHistoryAdmin):
    list_display = (
        "employee_number",
        "last_name",
        "first_name",
        "hire_date",
        "marital_status",
        "city",
        "state",
        "user",
    )
    search_fields = ("employee_number", "first_name", "last_name", "email")
    list_filter = ("participations__plan", "marital_status")
    raw_id_fields = ("user",)
    inlines = [ParticipationInline]


@admin.register(Participation)
class ParticipationAdmin(SimpleHistoryAdmin):
    list_display = ("person", "plan", "entered_on", "eligible_on", "ended_on", "eligible")
    list_filter = ("plan", "eligible")
    search_fields = ("person__employee_number", "person__last_name")
    list_select_related = ("person", "plan")
    raw_id_fields = ("person",)


@admin.register(EmploymentEvent)
class EmploymentEventAdmin(SimpleHistoryAdmin):
    list_display = ("person", "kind", "reason", "effective_date", "recorded_by", "recorded_at")
    list_filter = ("kind", "reason")
    search_fields = ("person__employee_number", "person__last_name", "note")
    list_select_related = ("person",)
    raw_id_fields = ("person",)


@admin.register(ChangeInControl)
class ChangeInControlAdmin(SimpleHistoryAdmin):
    list_display = ("effective_date", "description", "recorded_by")


@admin.register(KeyEmployeeList)
class KeyEmployeeListAdmin(SimpleHistoryAdmin):
    list_display = ("identification_year", "recorded_by", "recorded_at")
    filter_horizontal = ("members",)


@admin.register(VestingServiceCredit)
class VestingServiceCreditAdmin(SimpleHistoryAdmin):
    list_display = ("person", "through_year", "years")
    search_fields = ("person__employee_number", "person__last_name")
    list_select_related = ("person",)
    raw_id_fields = ("person",)


class BeneficiaryInline(admin.TabularInline):
    model = Beneficiary
    extra = 0


@admin.register(BeneficiaryDesignation)
class BeneficiaryDesignationAdmin(SimpleHistoryAdmin):
    list_display = ("person", "plan", "received_at", "recorded_by")
    list_filter = ("plan",)
    search_fields = ("person__employee_number", "person__last_name")
    list_select_related = ("person", "plan")
    raw_id_fields = ("person",)
    inlines = [BeneficiaryInline]


@admin.register(Beneficiary)
class BeneficiaryAdmin(SimpleHistoryAdmin):
    list_display = ("name", "tier", "percent", "relationship", "designation")
    search_fields = ("name", "designation__person__employee_number")
    list_select_related = ("designation__person", "designation__plan")


@admin.register(BeneficiaryTaxInfo)
class BeneficiaryTaxInfoAdmin(ReadOnlyAdmin):
    """Listed with the taxpayer number masked: the number itself is read only by the year-end 1099 file and by
    staff holding view_tax_ids on the taxes pages (participants.services.beneficiary_tax_info_record writes it)."""

    list_display = ("beneficiary", "masked_number", "city", "state", "recorded_at")
    fields = ("beneficiary", "masked_number", "city", "state", "recorded_by", "recorded_at")
    readonly_fields = fields
    list_select_related = ("beneficiary",)
