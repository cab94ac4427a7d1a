from django.contrib.admin.apps import AdminConfig


class AuditedAdminConfig(AdminConfig):
    """django.contrib.admin with core.admin_site.AuditedAdminSite as the default site (every change audited)."""

    default = False
    default_site = "core.admin_site.AuditedAdminSite"
