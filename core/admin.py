"""Back office for the shared records. Model history comes from simple-history (SimpleHistoryAdmin);
records that are themselves a history (job runs, audit events, imports, documents) are read-only."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from core.models import AuditEvent, DeliveryChoice, Document, ImportBatch, JobRun, MarketClosure, Notice
from core.valuation_calendar import forget_closures


class ReadOnlyAdmin(admin.ModelAdmin):
    """A record nobody edits: written by the application, kept as it was."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(MarketClosure)
class MarketClosureAdmin(SimpleHistoryAdmin):
    list_display = ("date", "reason", "recorded_by", "recorded_at")
    search_fields = ("reason",)
    date_hierarchy = "date"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        forget_closures()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        forget_closures()


@admin.register(JobRun)
class JobRunAdmin(ReadOnlyAdmin):
    list_display = ("kind", "key", "status", "percent", "attempts", "worker", "started_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("key", "message", "worker")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor_label", "action", "object_type", "object_id", "reason")
    list_filter = ("action",)
    search_fields = ("actor_label", "action", "object_type", "object_id", "reason")
    date_hierarchy = "at"


@admin.register(ImportBatch)
class ImportBatchAdmin(ReadOnlyAdmin):
    list_display = (
        "uploaded_at",
        "kind",
        "file_name",
        "status",
        "rows_total",
        "rows_applied",
        "rows_skipped",
        "uploaded_by",
    )
    list_filter = ("kind", "status")
    search_fields = ("file_name", "sha256", "uploaded_by")


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "title", "person", "content_type", "size", "sha256")
    list_filter = ("kind",)
    search_fields = ("title", "sha256", "person__employee_number", "person__last_name")
    raw_id_fields = ("person",)


@admin.register(Notice)
class NoticeAdmin(ReadOnlyAdmin):
    """Every notice sent or queued (core.notices): kept as it was sent."""

    list_display = ("created_at", "kind", "person", "user", "payee_name", "channel", "status", "subject")
    list_filter = ("kind", "channel", "status")
    search_fields = ("person__employee_number", "person__last_name", "payee_name", "subject", "to")
    list_select_related = ("person", "user")


@admin.register(DeliveryChoice)
class DeliveryChoiceAdmin(ReadOnlyAdmin):
    """Delivery choices and consents (append-only): a person changes theirs in the portal."""

    list_display = ("chosen_at", "person", "delivery", "consent_version")
    list_filter = ("delivery",)
    search_fields = ("person__employee_number", "person__last_name")
    list_select_related = ("person",)
