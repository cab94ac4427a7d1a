"""URLs of the books app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from books import api, views
from books.brp import views as brp_views
from core.imports.api import import_urls
from core.models import ImportBatch

app_name = "books"
staff_urlpatterns: list = [
    path("", views.overview, name="overview"),
    path("liability/", views.liability, name="liability"),
    path("defined-benefit/", brp_views.staff_list, name="defined_benefit"),
    path("defined-benefit/<int:pk>/", brp_views.staff_detail, name="brp_participant"),
    path("defined-benefit/<int:pk>/figures", brp_views.staff_figures, name="brp_figures"),
    path("defined-benefit/<int:pk>/statement", brp_views.staff_quote_pdf, name="brp_statement"),
    path(
        "defined-benefit/<int:pk>/survivor-death", brp_views.staff_survivor_death, name="brp_survivor_death"
    ),
]
portal_urlpatterns: list = [
    path("accounts/<int:pk>/", views.portal_account, name="account"),
    path("defined-benefit/", brp_views.portal_index, name="defined_benefit"),
    path("defined-benefit/<int:pk>/", brp_views.portal_benefit, name="brp_benefit"),
    path("defined-benefit/<int:pk>/statement", brp_views.portal_quote_pdf, name="brp_statement"),
]
api_urlpatterns: list = [
    path("accounts/", api.AccountList.as_view(), name="accounts"),
    path("accounts/<int:pk>/", api.AccountDetail.as_view(), name="account"),
    path("accounts/<int:pk>/entries/", api.AccountEntries.as_view(), name="account_entries"),
    path("job-runs/", api.JobRunList.as_view(), name="job_runs"),
    path("job-runs/<int:pk>/", api.JobRunDetail.as_view(), name="job_run"),
    *import_urls(ImportBatch.Kind.PAYROLL, "imports/payroll"),
    *import_urls(ImportBatch.Kind.PENSION_FIGURES, "imports/pension-figures"),
    path("me/accounts/", api.MyAccountList.as_view(), name="my_accounts"),
    path("me/accounts/<int:pk>/", api.MyAccountDetail.as_view(), name="my_account"),
    path("me/accounts/<int:pk>/history/", api.MyAccountHistory.as_view(), name="my_account_history"),
    path("me/history/", api.MyBalanceHistory.as_view(), name="my_history"),
]
