"""URLs of the participants app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path

from participants import views

app_name = "participants"
staff_urlpatterns: list = [
    path("", views.participant_list, name="list"),
    path("key-employees/", views.key_employees, name="key_employees"),
    path("key-employees/record", views.key_employees_record, name="key_employees_record"),
    path("<int:pk>/", views.participant_detail, name="detail"),
]
portal_urlpatterns: list = []
api_urlpatterns: list = []
