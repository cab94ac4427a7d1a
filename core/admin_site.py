"""The admin site: every change made in /admin/ is an audit event with its old and new values.

Registered through core.apps.AuditedAdminConfig (in place of django.contrib.admin), so every ModelAdmin, ours
and third parties' (auth users and groups, periodic tasks), gets AdminAuditMixin without being written for it.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils import timezone

from core.audit import audit_record

REDACTED = "(changed, not recorded)"


def _shown(value) -> str:
    if value is None:
        return ""
    if hasattr(value, "all") and callable(value.all):  # a many-to-many value
        return ", ".join(sorted(str(v) for v in value.all()))
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(sorted(str(getattr(v, "pk", v)) for v in value))
    return str(getattr(value, "pk", value))


def _form_changes(form) -> dict[str, list[str]]:
    """{field: [old, new]} of one bound admin form; secrets are never written out."""
    changes = {}
    for name in form.changed_data:
        if "password" in name:
            changes[name] = [REDACTED, REDACTED]
            continue
        field = form.fields.get(name)
        old = form.initial.get(name)
        if (
            field is not None
            and hasattr(field, "to_python")
            and old is not None
            and not isinstance(old, list)
        ):
            try:
                old = field.to_python(old)
            except Exception:  # noqa: BLE001 - the raw initial value is shown instead
                pass
        changes[name] = [_shown(old), _shown(form.cleaned_data.get(name))]
    return changes


def _inline_changes(formsets) -> list[dict]:
    rows = []
    for formset in formsets or ():
        label = formset.model._meta.label
        for obj in getattr(formset, "new_objects", ()):
            rows.append({"model": label, "id": str(obj.pk), "added": True})
        for obj, _names in getattr(formset, "changed_objects", ()):
            form = next((f for f in formset.forms if f.instance.pk == obj.pk), None)
            rows.append({"model": label, "id": str(obj.pk), "changes": _form_changes(form) if form else {}})
        for obj in getattr(formset, "deleted_objects", ()):
            rows.append({"model": label, "id": str(obj.pk), "deleted": True})
    return rows


class AdminAuditMixin:
    """Every add, change and delete in the admin is an AuditEvent (old and new values, actor, time)."""

    def construct_change_message(self, request, form, formsets, add=False):
        obj = form.instance
        audit_record(
            action="admin.add" if add else "admin.change",
            actor=request.user,
            at=timezone.now(),
            obj=obj,
            reason=f"{obj._meta.verbose_name} {obj} {'added' if add else 'changed'} in the admin",
            data={"changes": _form_changes(form), "inlines": _inline_changes(formsets)},
        )
        return super().construct_change_message(request, form, formsets, add)

    def _audit_deletion(self, request, obj) -> None:
        values = {
            f.attname: _shown(getattr(obj, f.attname))
            for f in obj._meta.concrete_fields
            if "password" not in f.attname
        }
        audit_record(
            action="admin.delete",
            actor=request.user,
            at=timezone.now(),
            obj=obj,
            reason=f"{obj._meta.verbose_name} {obj} deleted in the admin",
            data={"values": values},
        )

    def delete_model(self, request, obj):
        self._audit_deletion(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self._audit_deletion(request, obj)
        super().delete_queryset(request, queryset)


class AuditedAdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        base = admin_class or admin.ModelAdmin
        if not issubclass(base, AdminAuditMixin):
            base = type(base.__name__, (AdminAuditMixin, base), {"__module__": base.__module__})
        super().register(model_or_iterable, base, **options)
