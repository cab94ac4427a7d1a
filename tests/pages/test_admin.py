"""The admin: every model registered (history through simple-history), the books read-only."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from simple_history.admin import SimpleHistoryAdmin

from books.models import DailyValuation, LedgerEntry, PendingTransaction
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
APPS = ("core", "plans", "participants", "books", "elections")


def our_models():
    return [
        m
        for a in APPS
        for m in apps.get_app_config(a).get_models()
        if not m.__name__.startswith("Historical")
    ]


def test_every_model_of_the_books_apps_is_registered_and_history_models_use_simple_history():
    for model in our_models():
        assert admin.site.is_registered(model), model
        if hasattr(model, "history"):
            assert isinstance(admin.site._registry[model], SimpleHistoryAdmin), model


@pytest.fixture
def superuser_client(client):
    sign_in(client, get_user_model().objects.create_superuser("root", "root@example.com", "x"))
    return client


def test_every_changelist_and_add_page_opens(superuser_client, books):
    for model in our_models():
        opts = model._meta
        response = superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert response.status_code == 200, model


def test_posted_books_cannot_be_changed_or_deleted_in_the_admin(superuser_client, books):
    entry = LedgerEntry.objects.first()
    valuation = DailyValuation.objects.first()
    applied = PendingTransaction.objects.filter(status="applied").first()
    for model, obj in ((LedgerEntry, entry), (DailyValuation, valuation), (PendingTransaction, applied)):
        model_admin = admin.site._registry[model]
        request = type("R", (), {"user": get_user_model().objects.get(username="root")})()
        assert not model_admin.has_change_permission(request, obj), model
        assert not model_admin.has_delete_permission(request, obj), model
    opts = LedgerEntry._meta
    assert superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add")).status_code == 403
    response = superuser_client.post(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[entry.pk]), {"post": "yes"}
    )
    assert response.status_code == 403
    assert LedgerEntry.objects.filter(pk=entry.pk).exists()


def test_a_role_user_without_django_staff_status_cannot_use_the_admin(staff):
    for client in staff.values():
        response = client.get(reverse("admin:index"))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
