from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.db import connection
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme

from core.errors import ApplicationError

OPEN_PREFIXES = (
    "/accounts/login/",
    "/accounts/password_reset/",
    "/accounts/reset/",
    "/static/",
    "/healthz",
    "/api/",
)


class LoginRequiredEverywhereMiddleware:
    """Deny by default: every page needs a signed-in user (the API answers 401/403 itself)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.user.is_authenticated and not request.path.startswith(OPEN_PREFIXES):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)


class ApplicationErrorMiddleware:
    """A refusal (core.errors.ApplicationError) that leaves a page is shown to the person, not a 500 (STYLE 12).

    A form post goes back to the page it came from with the message; anything else gets a 400 page
    with it. Every other exception is left to Django: logged with its traceback, answered with the
    500 page.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ApplicationError):
            return None
        back = request.META.get("HTTP_REFERER", "")
        if request.method == "POST" and url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            messages.error(request, exception.message)
            return redirect(back)
        return render(request, "core/refused.html", {"message": exception.message}, status=400)


class QueryCountHeaderMiddleware:
    """For `bench pages` only (settings.QUERY_COUNT_HEADER, off by default): each response says in `X-Queries` how
    many SQL statements it took, sessions and sign-in checks included, so the load benchmark can show that a page's
    queries do not grow with the population (issue 15). First in MIDDLEWARE when on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        count = 0

        def counted(execute, sql, params, many, context):
            nonlocal count
            count += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counted):
            response = self.get_response(request)
        response["X-Queries"] = str(count)
        return response
