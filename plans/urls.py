"""URLs of the plans app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path

from plans import views

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
]
portal_urlpatterns: list = []
api_urlpatterns: list = []
