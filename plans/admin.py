"""Back office of the plan catalog. Provisions are loaded from plans/catalog/*.yaml (load_catalog);
prices are never edited once loaded."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from core.admin import ReadOnlyAdmin
from plans.models import (
    DatedFigure,
    Fund,
    FundPrice,
    Plan,
    PlanSection,
    PlanSetting,
    PlanTable,
    PlanVersion,
    Provision,
)


class VersionInline(admin.TabularInline):
    model = PlanVersion
    extra = 0
    fields = ("effective_date", "title", "source_document")
    show_change_link = True


@admin.register(Plan)
class PlanAdmin(SimpleHistoryAdmin):
    list_display = ("code", "name", "sponsor", "kind")
    search_fields = ("code", "name")
    inlines = [VersionInline]


@admin.register(PlanVersion)
class PlanVersionAdmin(SimpleHistoryAdmin):
    list_display = ("plan", "effective_date", "title")
    list_filter = ("plan",)
    search_fields = ("title", "plan__code")


@admin.register(Provision)
class ProvisionAdmin(SimpleHistoryAdmin):
    list_display = ("version", "key", "label", "citation")
    list_filter = ("version__plan", "version")
    search_fields = ("key", "label", "citation", "reading")
    list_select_related = ("version__plan",)


@admin.register(PlanSection)
class PlanSectionAdmin(SimpleHistoryAdmin):
    list_display = ("version", "section", "title")
    list_filter = ("version__plan", "version")
    search_fields = ("section", "title", "text")
    list_select_related = ("version__plan",)


@admin.register(DatedFigure)
class DatedFigureAdmin(SimpleHistoryAdmin):
    list_display = ("code", "year", "amount", "source")
    list_filter = ("code",)
    search_fields = ("code", "year")


@admin.register(PlanTable)
class PlanTableAdmin(SimpleHistoryAdmin):
    list_display = ("plan", "code", "effective_date", "citation")
    list_filter = ("plan",)
    search_fields = ("code", "citation", "description")


@admin.register(PlanSetting)
class PlanSettingAdmin(SimpleHistoryAdmin):
    list_display = ("plan", "key", "effective_date", "recorded_by", "recorded_at")
    list_filter = ("plan", "key")
    search_fields = ("key", "reason")


@admin.register(Fund)
class FundAdmin(SimpleHistoryAdmin):
    list_display = ("plan", "code", "name", "is_default", "active")
    list_filter = ("plan", "is_default", "active")
    search_fields = ("code", "name")


@admin.register(FundPrice)
class FundPriceAdmin(ReadOnlyAdmin):
    list_display = ("fund", "date", "price", "source", "loaded_at")
    list_filter = ("fund__plan", "fund")
    search_fields = ("fund__code", "source")
    date_hierarchy = "date"
    list_select_related = ("fund__plan",)
