"""URLs of the plans app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path

from core.imports.api import import_urls
from core.models import ImportBatch
from plans import api

app_name = "plans"
staff_urlpatterns: list = []
portal_urlpatterns: list = []
api_urlpatterns: list = [
    path("plans/", api.PlanList.as_view(), name="plans"),
    path("plans/<str:code>/", api.PlanDetail.as_view(), name="plan"),
    path("funds/", api.FundList.as_view(), name="funds"),
    path("funds/<int:pk>/prices/", api.FundPriceList.as_view(), name="fund_prices"),
    *import_urls(ImportBatch.Kind.PRICES, "imports/prices"),
]
