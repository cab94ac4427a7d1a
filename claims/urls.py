"""URLs of the claims app: staff pages (/staff/claims/), portal pages (/portal/claims/), API (/api/claims/)."""

from django.urls import path

from claims import api, views

app_name = "claims"

staff_urlpatterns: list = [
    path("", views.staff_queue, name="queue"),
    path("reports/", views.staff_reports, name="reports"),
    path("new/", views.staff_new, name="new"),
    path("<int:pk>/", views.staff_claim, name="detail"),
    path("<int:pk>/assign/", views.staff_assign, name="assign"),
    path("<int:pk>/representative/", views.staff_representative, name="representative"),
    path("<int:pk>/start-review/", views.staff_start_review, name="start_review"),
    path("<int:pk>/extend/", views.staff_extend, name="extend"),
    path("<int:pk>/approve/", views.staff_approve, name="approve"),
    path("<int:pk>/deny/", views.staff_deny, name="deny"),
    path("<int:pk>/deny/review/", views.staff_deny_review, name="deny_review"),
    path("<int:pk>/close/", views.staff_close, name="close"),
    path("<int:pk>/documents/", views.staff_add_document, name="add_document"),
    path("<int:pk>/information-received/", views.staff_information_received, name="information_received"),
    path("<int:pk>/appeal/", views.staff_record_appeal, name="record_appeal"),
    path("<int:pk>/appeal/start-review/", views.staff_appeal_start_review, name="appeal_start_review"),
    path("<int:pk>/appeal/extend/", views.staff_appeal_extend, name="appeal_extend"),
    path("<int:pk>/appeal/decide/", views.staff_appeal_decide, name="appeal_decide"),
    path("<int:pk>/claim-file/", views.staff_claim_file, name="claim_file"),
    path("<int:pk>/uploads/<int:doc_pk>/", views.staff_upload, name="upload"),
]
portal_urlpatterns: list = [
    path("", views.portal_list, name="list"),
    path("new/", views.portal_new, name="new"),
    path("<int:pk>/", views.portal_claim, name="detail"),
    path("<int:pk>/appeal/", views.portal_appeal, name="appeal"),
    path("<int:pk>/information/", views.portal_information, name="information"),
    path("<int:pk>/claim-file/", views.portal_claim_file, name="claim_file"),
    path("<int:pk>/notices/<int:doc_pk>/", views.portal_notice, name="notice"),
    path("<int:pk>/uploads/<int:doc_pk>/", views.portal_upload, name="upload"),
]
api_urlpatterns: list = [
    path("claims/", api.ClaimList.as_view(), name="claims"),
    path("claims/<int:pk>/", api.ClaimDetail.as_view(), name="claim"),
    path("claims/<int:pk>/appeal/", api.ClaimAppealView.as_view(), name="appeal"),
    path("claims/<int:pk>/information/", api.ClaimInformationView.as_view(), name="information"),
    path("claims/<int:pk>/claim-file/", api.ClaimFileRequestView.as_view(), name="claim_file"),
]
