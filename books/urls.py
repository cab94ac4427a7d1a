"""URLs of the books app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path

from books import views

app_name = "books"
staff_urlpatterns: list = [
    path("", views.overview, name="overview"),
]
portal_urlpatterns: list = [
    path("accounts/<int:pk>/", views.portal_account, name="account"),
]
api_urlpatterns: list = []
