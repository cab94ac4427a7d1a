"""URLs of the participants app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from core.imports.api import import_urls
from core.models import ImportBatch
from participants import api, views, views_beneficiaries, views_notices

app_name = "participants"
staff_urlpatterns: list = [
    path("", views.participant_list, name="list"),
    path("key-employees/", views.key_employees, name="key_employees"),
    path("key-employees/record", views.key_employees_record, name="key_employees_record"),
    path("<int:pk>/", views.participant_detail, name="detail"),
    path(
        "participations/<int:pk>/beneficiaries/",
        views_beneficiaries.staff_beneficiaries,
        name="beneficiaries",
    ),
]
portal_urlpatterns: list = [
    path("beneficiaries/<str:plan_code>/", views_beneficiaries.portal_beneficiaries, name="beneficiaries"),
    path("notices/", views_notices.portal_notices, name="notices"),
    path("notices/delivery/", views_notices.portal_delivery, name="delivery"),
]
api_urlpatterns: list = [
    path("people/", api.PersonList.as_view(), name="people"),
    path("people/<int:pk>/", api.PersonDetail.as_view(), name="person"),
    path("key-employee-lists/", api.KeyEmployeeListList.as_view(), name="key_employee_lists"),
    *import_urls(ImportBatch.Kind.PARTICIPANTS, "imports/participants"),
    *import_urls(ImportBatch.Kind.KEY_EMPLOYEES, "imports/key-employees"),
]
