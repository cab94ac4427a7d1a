"""URLs of the claims app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""
from django.urls import path  # noqa: F401

app_name = "claims"
staff_urlpatterns: list = []
portal_urlpatterns: list = []
api_urlpatterns: list = []
