"""URLs of the plans app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from core.imports.api import import_urls
from core.models import ImportBatch
from plans import api, views

app_name = "plans"
staff_urlpatterns: list = [
    path("", views.catalog, name="catalog"),
    path("figures/", views.figures, name="figures"),
    path("figures/save", views.figure_save, name="figure_save"),
    path("tables/<int:pk>/", views.table_detail, name="table"),
    path("tables/<int:pk>/save", views.table_save, name="table_save"),
    path("closures/", views.closures, name="closures"),
    path("closures/add", views.closure_add, name="closure_add"),
    path("closures/<int:pk>/remove", views.closure_remove, name="closure_remove"),
    path("<str:code>/", views.plan_detail, name="plan"),
    path("<str:code>/funds/", views.funds, name="funds"),
    path("<str:code>/contact/", views.contact_set, name="contact_set"),
]
portal_urlpatterns: list = []
api_urlpatterns: list = [
    path("plans/", api.PlanList.as_view(), name="plans"),
    path("plans/<str:code>/", api.PlanDetail.as_view(), name="plan"),
    path("funds/", api.FundList.as_view(), name="funds"),
    path("funds/<int:pk>/prices/", api.FundPriceList.as_view(), name="fund_prices"),
    *import_urls(ImportBatch.Kind.PRICES, "imports/prices"),
]
