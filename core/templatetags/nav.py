"""The staff menu shows only what the signed-in user may open (issue 11: no menu item leads to a 403).

A link's view declares its capability (`capability_required` sets `required_capability`); the tag reads it
from the resolved view, so the menu and the page cannot disagree.

What a URL needs and where a link's name points are fixed by the URL configuration, so both are kept per
configuration and script prefix (issue 15: the staff menu's thirty links reversed and resolved on every page
were a quarter of a small staff page's CPU); what the user holds is checked on each call.
"""

from __future__ import annotations

from functools import lru_cache

from django import template
from django.conf import settings
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, resolve, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from core.roles import Cap, has_cap

register = template.Library()

NEEDS_ADMIN = "admin"  # Django's admin: its is_staff flag
NEEDS_SIGN_IN = "signed_in"


@lru_cache(maxsize=1024)
def _needs(url: str, urlconf: str) -> str:
    """What opening `url` needs: a capability's value, NEEDS_ADMIN or NEEDS_SIGN_IN."""
    match = resolve(url, urlconf)
    cap = getattr(match.func, "required_capability", None)
    if cap is not None:
        return Cap(cap).value
    if match.app_name == "admin" or match.namespace == "admin":
        return NEEDS_ADMIN
    return NEEDS_SIGN_IN


@lru_cache(maxsize=1024)
def _url_of(name: str, args: tuple, urlconf: str, prefix: str) -> str | None:
    """The URL a link's name points at under `urlconf` and the script `prefix` (both part of the key); None when
    it does not reverse."""
    try:
        return reverse(name, urlconf=urlconf, args=args)
    except NoReverseMatch:
        return None


def _urlconf() -> str:
    return get_urlconf() or settings.ROOT_URLCONF


def link_allowed(user, url: str) -> bool:
    """May `user` open `url`? The view's declared capability decides; Django's admin needs its is_staff flag."""
    needs = _needs(url, _urlconf())
    if needs == NEEDS_ADMIN:
        return bool(user.is_active and user.is_staff)
    if needs == NEEDS_SIGN_IN:
        return bool(user.is_authenticated)
    return has_cap(user, Cap(needs))


@register.simple_tag(takes_context=True)
def staff_link(context, name: str, label: str, *args) -> str:
    """`{% staff_link "payments_staff:held" "Held" %}`: the link, or nothing when the user may not open it."""
    request = context.get("request")
    if request is None:
        return ""
    url = _url_of(name, tuple(args), _urlconf(), get_script_prefix())
    if url is None or not link_allowed(request.user, url):
        return ""
    current = mark_safe(' aria-current="page"') if request.path == url else ""  # a constant, no user text
    return format_html('<a href="{}"{}>{}</a>', url, current, label)
