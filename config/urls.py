import importlib

from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from books.views import portal_overview
from core import views as core_views
from core.converters import YearConverter

register_converter(YearConverter, "year")  # before the apps' urls are read below

APPS = [
    "plans",
    "participants",
    "books",
    "elections",
    "pensions",
    "claims",
    "payments",
    "statements",
    "taxes",
    "conversion",
]


def _section(kind: str):
    patterns = []
    for app in APPS:
        module = importlib.import_module(f"{app}.urls")
        found = getattr(module, f"{kind}_urlpatterns", [])
        if found:
            patterns.append(path(f"{app}/", include((found, f"{app}_{kind}"))))
    return patterns


# The 403 page names the missing capability and links back (issue 11).
handler403 = "core.views.permission_denied"

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("accounts/", include("core.signin.urls")),
    path("admin/", admin.site.urls),
    path("documents/<int:pk>/", core_views.document_download, name="document_download"),
    path("staff/", include(("core.urls", "core"))),
    path("staff/", include(_section("staff"))),
    # The participant's landing page lives with the books (balances); "portal_home" is its stable name.
    path("portal/", portal_overview, name="portal_home"),
    path("portal/", include(_section("portal"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # The split view serves its start-up script as a file: no inline script under the Content-Security-Policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api_schema"), name="api_docs"),
    path("api/", include(_section("api"))),
]
