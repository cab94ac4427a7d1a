"""URLs of the pensions app: the BRP staff pages (/staff/pensions/), the participant's benefit (/portal/pensions/)
and the Pension Plan figures import (/api/pensions/)."""

from django.urls import path

from core.imports.api import import_urls
from core.models import ImportBatch
from pensions import api, views

app_name = "pensions"
staff_urlpatterns: list = [
    path("defined-benefit/", views.staff_list, name="defined_benefit"),
    path("defined-benefit/<int:pk>/", views.staff_detail, name="brp_participant"),
    path("defined-benefit/<int:pk>/figures", views.staff_figures, name="brp_figures"),
    path("defined-benefit/<int:pk>/statement", views.staff_quote_pdf, name="brp_statement"),
    path("defined-benefit/<int:pk>/survivor-death", views.staff_survivor_death, name="brp_survivor_death"),
    path("defined-benefit/<int:pk>/orders", views.staff_order, name="brp_order"),
    path(
        "defined-benefit/<int:pk>/pre-2005-cash-out",
        views.staff_pre_2005_cash_out,
        name="brp_pre_2005_cash_out",
    ),
]
portal_urlpatterns: list = [
    path("defined-benefit/", views.portal_index, name="defined_benefit"),
    path("defined-benefit/<int:pk>/", views.portal_benefit, name="brp_benefit"),
    path("defined-benefit/<int:pk>/statement", views.portal_quote_pdf, name="brp_statement"),
]
api_urlpatterns: list = [
    *import_urls(ImportBatch.Kind.PENSION_FIGURES, "imports/pension-figures"),
    path("orders/", api.StaffBenefitOrders.as_view(), name="orders"),
    path("orders/<int:pk>/", api.StaffBenefitOrder.as_view(), name="order"),
]
