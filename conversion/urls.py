"""URLs of the conversion app: its staff pages (/staff/conversion/)."""

from django.urls import path

from conversion import views

app_name = "conversion"
staff_urlpatterns: list = [
    path("", views.runs, name="runs"),
    path("upload", views.upload, name="upload"),
    path("jobs/<str:key>/", views.job, name="job"),
    path("<int:pk>/", views.run_detail, name="run"),
    path("<int:pk>/exceptions.csv", views.run_exceptions_csv, name="run_exceptions"),
    path("<int:pk>/apply", views.run_apply, name="run_apply"),
    path("<int:pk>/reconciliation.pdf", views.run_reconciliation, name="run_reconciliation"),
]
