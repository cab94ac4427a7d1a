"""URLs of the taxes app: staff pages (/staff/taxes/), the portal's Tax section and the FICA feed API."""

from django.urls import path

from taxes import api, views

app_name = "taxes"
staff_urlpatterns: list = [
    path("fica/", views.feed_list, name="feeds"),
    path("fica/record/", views.feed_record, name="feed_record"),
    path("fica/<str:day>/", views.feed_detail, name="feed"),
    path("fica/<str:day>/feed.csv", views.feed_download, name="feed_csv"),
    path("year-end/<int:year>/", views.year_end, name="year_end"),
    path("year-end/<int:year>/<str:file>.csv", views.year_end_file, name="year_end_file"),
    path("beneficiaries/<int:pk>/tax-information/", views.beneficiary_tax_info, name="beneficiary_tax_info"),
]
portal_urlpatterns: list = [
    path("", views.portal_tax, name="tax"),
]
api_urlpatterns: list = [
    path("fica/<str:day>/", api.FicaFeed.as_view(), name="fica_feed"),
    path("me/years/", api.MyTaxYears.as_view(), name="my_tax_years"),
]
