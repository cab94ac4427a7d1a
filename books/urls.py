"""URLs of the books app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from books import api, views
from core.imports.api import import_urls
from core.models import ImportBatch

app_name = "books"
staff_urlpatterns: list = [
    path("", views.overview, name="overview"),
    path("liability/", views.liability, name="liability"),
    path("parallel-runs/", views.parallel_runs, name="parallel_runs"),
    path("parallel-runs/<int:pk>/", views.parallel_run, name="parallel_run"),
]
portal_urlpatterns: list = [
    path("accounts/<int:pk>/", views.portal_account, name="account"),
]
api_urlpatterns: list = [
    path("accounts/", api.AccountList.as_view(), name="accounts"),
    path("accounts/<int:pk>/", api.AccountDetail.as_view(), name="account"),
    path("accounts/<int:pk>/entries/", api.AccountEntries.as_view(), name="account_entries"),
    path("job-runs/", api.JobRunList.as_view(), name="job_runs"),
    path("job-runs/<int:pk>/", api.JobRunDetail.as_view(), name="job_run"),
    *import_urls(ImportBatch.Kind.PAYROLL, "imports/payroll"),
    path("me/accounts/", api.MyAccountList.as_view(), name="my_accounts"),
    path("me/accounts/<int:pk>/", api.MyAccountDetail.as_view(), name="my_account"),
    path("me/accounts/<int:pk>/history/", api.MyAccountHistory.as_view(), name="my_account_history"),
    path("me/history/", api.MyBalanceHistory.as_view(), name="my_history"),
]
