from django.urls import path

from core import views, views_notices
from core.imports import views as import_views
from core.signin import views as signin_views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/", views.job_runs, name="job_runs"),
    path("jobs/<int:pk>/progress", views.job_progress_fragment, name="job_progress"),
    path("jobs/<int:pk>/retry", views.job_retry_view, name="job_retry"),
    path("jobs/run-now", views.job_run_now_view, name="job_run_now"),
    path("reports/<str:name>/prepare", views.report_file_prepare, name="report_file_prepare"),
    path("jobs/<str:kind>/<str:key>/", views.job_detail, name="job_detail"),
    path("jobs/<str:kind>/<str:key>/progress", views.job_key_progress, name="job_key_progress"),
    path("audit/", views.audit_log, name="audit_log"),
    path("imports/", import_views.imports, name="imports"),
    path("imports/<int:pk>/", import_views.import_detail, name="import_detail"),
    path("imports/samples/", import_views.import_samples, name="import_samples"),
    path("imports/samples/<str:kind>.csv", import_views.import_sample, name="import_sample"),
    path("signin/locks/", signin_views.locks, name="signin_locks"),
    path("print/", views_notices.print_queue, name="print_queue"),
    path("print/<str:day>/queue.pdf", views_notices.print_batch, name="print_batch"),
    path("print/<str:day>/printed", views_notices.print_batch_printed, name="print_batch_printed"),
]
