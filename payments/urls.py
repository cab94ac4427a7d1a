"""URLs of the payments app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from payments import api, views

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
    path("participant/<int:pk>/recompute", views.participant_recompute, name="participant_recompute"),
    path("withholding/", views.withholding, name="withholding"),
    path("emergencies/", views.emergency_list, name="emergencies"),
    path("emergencies/record", views.emergency_record, name="emergency_record"),
    path("emergencies/<int:pk>/", views.emergency_detail, name="emergency"),
    path("emergencies/<int:pk>/decide", views.emergency_decide, name="emergency_decide"),
    path("emergencies/<int:pk>/review", views.emergency_review, name="emergency_review"),
    path("orders/", views.order_list, name="orders"),
    path("orders/record", views.order_record, name="order_record"),
    path("orders/<int:pk>/", views.order_detail, name="order"),
]
portal_urlpatterns: list = [
    path("", views.portal_calendar, name="calendar"),
    path("what-if/", views.portal_whatif, name="whatif"),
    path("emergency/", views.portal_emergencies, name="emergencies"),
    path("emergency/<int:pk>/", views.portal_emergency, name="emergency"),
]
api_urlpatterns: list = [
    path("emergencies/", api.StaffEmergencies.as_view(), name="emergencies"),
    path("emergencies/<int:pk>/", api.StaffEmergency.as_view(), name="emergency"),
    path("emergencies/<int:pk>/decision/", api.StaffEmergencyDecision.as_view(), name="emergency_decision"),
    path("orders/", api.StaffOrders.as_view(), name="orders"),
    path("orders/<int:pk>/", api.StaffOrder.as_view(), name="order"),
    path("mine/emergencies/", api.MyEmergencies.as_view(), name="my_emergencies"),
    path("mine/emergencies/<int:pk>/", api.MyEmergency.as_view(), name="my_emergency"),
]
