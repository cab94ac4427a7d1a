"""URLs of the statements: the participant's list (/portal/statements/) and a participant's on the staff side."""

from django.urls import path

from statements import views

app_name = "statements"
staff_urlpatterns: list = [
    path("participant/<int:pk>/", views.staff_participant, name="participant"),
]
portal_urlpatterns: list = [
    path("", views.portal_list, name="list"),
]
