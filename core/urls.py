from django.urls import path

from core import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/", views.job_runs, name="job_runs"),
    path("jobs/<int:pk>/progress", views.job_progress_fragment, name="job_progress"),
    path("audit/", views.audit_log, name="audit_log"),
]
