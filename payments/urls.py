"""URLs of the payments app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path

from payments import views

app_name = "payments"
staff_urlpatterns: list = [
    path("", views.upcoming, name="upcoming"),
    path("held/", views.held, name="held"),
    path("runs/", views.runs, name="runs"),
    path("runs/prepare", views.run_prepare, name="run_prepare"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/approve", views.run_approve, name="run_approve"),
    path("runs/<int:pk>/payroll.csv", views.run_csv, name="run_csv"),
    path("runs/<int:pk>/register", views.run_register, name="run_register"),
    path("forecast/", views.forecast, name="forecast"),
    path("participant/", views.participant_schedule, name="participant_search"),
    path("participant/<int:pk>/", views.participant_schedule, name="participant"),
    path("withholding/", views.withholding, name="withholding"),
]
portal_urlpatterns: list = [
    path("", views.portal_calendar, name="calendar"),
]
api_urlpatterns: list = []
