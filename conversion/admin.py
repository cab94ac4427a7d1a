"""Conversion runs and their exceptions: written only by the conversion services, read in the admin."""

from django.contrib import admin

from conversion.models import ConversionException, ConversionRun


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ConversionRun)
class ConversionRunAdmin(ReadOnly):
    list_display = (
        "id",
        "package_id",
        "status",
        "dry_run",
        "participants",
        "positions",
        "exception_count",
        "actor",
    )
    list_filter = ("status", "dry_run")


@admin.register(ConversionException)
class ConversionExceptionAdmin(ReadOnly):
    list_display = ("id", "run", "file", "line", "code")
    list_filter = ("code",)
    list_select_related = ("run",)
