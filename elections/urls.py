"""URLs of the elections app: staff pages (/staff/), portal pages (/portal/) and API endpoints (/api/)."""

from django.urls import path

from elections import api, views

app_name = "elections"
KIND = "<str:kind>/<int:pk>"

staff_urlpatterns: list = [
    path("", views.staff_windows, name="windows"),
    path("windows/<int:pk>/withdraw/", views.staff_window_cancel, name="window_cancel"),
    path("reminders/", views.staff_send_reminders, name="send_reminders"),
    path("year/<str:plan_code>/<year:year>/", views.staff_plan_year, name="plan_year"),
    path("year/<str:plan_code>/<year:year>/in-force.csv", views.staff_export, name="export"),
    path("forms/<str:plan_code>/<year:year>/", views.staff_blank_form, name="blank_form"),
    path("refused/", views.staff_refused, name="refused"),
    path("participants/", views.staff_participants, name="participants"),
    path("participants/<int:pk>/", views.staff_participant, name="participant"),
    path("participants/<int:pk>/paper/<str:kind>/", views.staff_paper, name="paper"),
    path("participants/<int:pk>/notice/", views.staff_notice, name="notice"),
    path("participants/<int:pk>/cancel-deferrals/", views.staff_cancel_deferrals, name="cancel_deferrals"),
    path(f"election/{KIND}/", views.staff_election, name="election"),
    path(f"election/{KIND}/pdf/", views.staff_election_pdf, name="election_pdf"),
]
portal_urlpatterns: list = [
    path("", views.portal_home, name="home"),
    path("election/<str:kind>/<int:pk>/", views.portal_election, name="election"),
    path("election/<str:kind>/<int:pk>/pdf/", views.portal_election_pdf, name="election_pdf"),
    path("<str:plan_code>/enrol/", views.portal_enrol, name="enrol"),
    path("<str:plan_code>/stop/", views.portal_stop, name="stop"),
    path("<str:plan_code>/payment/", views.portal_payment, name="payment"),
    path("<str:plan_code>/schedule-change/", views.portal_schedule_change, name="schedule_change"),
    path("<str:plan_code>/investments/", views.portal_investments, name="investments"),
    path("<str:plan_code>/annuity/", views.portal_annuity, name="annuity"),
    path("<str:plan_code>/form/<year:year>/", views.portal_blank_form, name="blank_form"),
]
api_urlpatterns: list = [
    path("mine/", api.MyElections.as_view(), name="mine"),
    path("mine/<str:kind>/<int:pk>/", api.MyElection.as_view(), name="mine_detail"),
    path("mine/deferral/", api.MyDeferral.as_view(), name="mine_deferral"),
    path("mine/distribution/", api.MyDistribution.as_view(), name="mine_distribution"),
    path("mine/investment/", api.MyInvestment.as_view(), name="mine_investment"),
    path("mine/schedule-change/", api.MyScheduleChange.as_view(), name="mine_schedule_change"),
    path(
        "mine/schedule-change/preview/", api.MyScheduleChangePreview.as_view(), name="mine_schedule_preview"
    ),
    path("mine/annuity/", api.MyAnnuity.as_view(), name="mine_annuity"),
    path("deferral/", api.StaffDeferrals.as_view(), name="deferrals"),
    path("refused/", api.StaffRefused.as_view(), name="refused"),
    path("windows/", api.StaffWindows.as_view(), name="windows"),
    path("in-force/", api.StaffInForce.as_view(), name="in_force"),
]
