"""/accounts/: Django's sign-in, sign-out and password views (change and reset audited), and the second factor."""

from django.contrib.auth import views as auth_views
from django.urls import path

from core.signin import views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password_reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("two-factor/", views.overview, name="signin_overview"),
    path("two-factor/verify/", views.verify, name="signin_verify"),
    path("two-factor/enrol/", views.enrol, name="signin_enrol"),
    path("two-factor/recovery-codes/", views.recovery_codes_new, name="signin_recovery_codes"),
]
