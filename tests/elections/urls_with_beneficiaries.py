"""The project's URLs plus the beneficiary pages, as participants/urls.py will mount them (see the lines in
participants/views_beneficiaries.py); used by the beneficiary tests until they are in that file."""

from django.urls import include, path

from config.urls import urlpatterns as project
from participants import views_beneficiaries

urlpatterns = project + [
    path(
        "portal/participants/",
        include(
            (
                [
                    path(
                        "beneficiaries/<str:plan_code>/",
                        views_beneficiaries.portal_beneficiaries,
                        name="beneficiaries",
                    )
                ],
                "participants_portal",
            )
        ),
    ),
    path(
        "staff/participants/",
        include(
            (
                [
                    path(
                        "participations/<int:pk>/beneficiaries/",
                        views_beneficiaries.staff_beneficiaries,
                        name="beneficiaries",
                    )
                ],
                "participants_staff",
            )
        ),
    ),
]
