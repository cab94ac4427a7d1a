"""One kind of refusal (STYLE 12): refusals derive from ApplicationError and people read them; anything
else is a bug, logged with its traceback, answered with the 500 page."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.test import Client, RequestFactory
from django.urls import reverse

from books.services.accounts import BooksError
from books.services.crediting import CreditingRefused
from books.services.payroll import PayrollError
from claims.services import ClaimRefused
from core.dates import parse_date, parse_month
from core.errors import ApplicationError, InvalidInput
from core.middleware import ApplicationErrorMiddleware
from core.money import parse_money
from elections.services import ElectionError
from participants.services import ParticipantError
from payments.services.annuities import AnnuityError
from payments.services.runs import PaymentRunError
from payments.services.withdrawals import WithdrawalError
from payments.services.withholding import WithholdingError
from pensions.services.benefit import BenefitError
from plans.services import CatalogError, TableError
from tests.payments.factories import staff_user
from tests.signin import sign_in

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "refusal",
    [
        BooksError,
        BenefitError,
        CreditingRefused,
        PayrollError,
        ClaimRefused,
        ElectionError,
        ParticipantError,
        AnnuityError,
        PaymentRunError,
        WithdrawalError,
        WithholdingError,
        CatalogError,
        TableError,
    ],
)
def test_every_service_refusal_is_an_application_error(refusal):
    assert issubclass(refusal, ApplicationError)


@pytest.mark.parametrize(
    "parse, text",
    [(parse_date, "2026-02-30"), (parse_month, "2026-13"), (parse_money, "12.345")],
)
def test_a_value_a_person_typed_that_cannot_be_read_is_refused_naming_it(parse, text):
    with pytest.raises(InvalidInput, match=text):
        parse(text)


def _caught_names(handler: ast.ExceptHandler) -> set[str]:
    node = handler.type
    nodes = node.elts if isinstance(node, ast.Tuple) else [node] if node is not None else []
    return {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in nodes}


def test_no_view_catches_a_bare_value_error_or_exception():
    """Views catch ApplicationError (or a subclass); a ValueError there would turn a bug into a message."""
    files = [
        p for p in ROOT.glob("*/**/*.py") if p.name.startswith(("views", "api")) and ".venv" not in p.parts
    ]
    assert len(files) > 10
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in files
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ExceptHandler)
        and (node.type is None or _caught_names(node) & {"ValueError", "Exception", "BaseException"})
    ]
    assert offenders == []


def _request(method: str = "get", **extra):
    request = getattr(RequestFactory(), method)("/staff/somewhere/", **extra)
    SessionMiddleware(lambda r: None).process_request(request)
    request._messages = FallbackStorage(request)
    return request


@pytest.mark.django_db
def test_a_refusal_leaving_a_page_is_shown_with_its_message_not_a_500():
    middleware = ApplicationErrorMiddleware(lambda r: None)
    request = _request()
    request.user = staff_user("ada", "administrator")
    response = middleware.process_exception(request, PaymentRunError("The run is already approved."))
    assert response.status_code == 400
    assert "The run is already approved." in response.content.decode()


@pytest.mark.django_db
def test_a_refused_form_post_goes_back_to_its_page_with_the_message():
    middleware = ApplicationErrorMiddleware(lambda r: None)
    request = _request("post", HTTP_REFERER="http://testserver/staff/payments/runs/")
    response = middleware.process_exception(request, WithdrawalError("Give either a percent or an amount."))
    assert (response.status_code, response["Location"]) == (302, "http://testserver/staff/payments/runs/")
    assert [m.message for m in request._messages] == ["Give either a percent or an amount."]


def test_any_other_exception_is_left_to_django_for_the_log_and_the_500_page():
    middleware = ApplicationErrorMiddleware(lambda r: None)
    assert middleware.process_exception(_request(), ValueError("a bug")) is None
    assert middleware.process_exception(_request(), KeyError("a bug")) is None


@pytest.mark.django_db
def test_the_api_answers_a_refusal_400_with_its_message(edcp):
    client = Client()
    sign_in(client, staff_user("cora", "committee"))
    opens = dt.datetime(2026, 11, 1, 9, tzinfo=dt.UTC)
    response = client.post(
        reverse("elections_api:windows"),
        {
            "plan": "EDCP",
            "plan_year": 2027,
            "kind": "performance",
            "opens_at": opens.isoformat(),
            "closes_at": (opens + dt.timedelta(days=10)).isoformat(),
        },
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "a Performance-Based Compensation window needs its performance period"
    }
