from django.conf import settings
from django.contrib.auth.views import redirect_to_login

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
