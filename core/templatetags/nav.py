"""The staff menu shows only what the signed-in user may open (issue 11: no menu item leads to a 403).

A link's view declares its capability (`capability_required` sets `required_capability`); the tag reads it
from the resolved view, so the menu and the page cannot disagree.
"""

from __future__ import annotations

from django import template
from django.urls import NoReverseMatch, resolve, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from core.roles import Cap, has_cap

register = template.Library()


def link_allowed(user, url: str) -> bool:
    """May `user` open `url`? The view's declared capability decides; Django's admin needs its is_staff flag."""
    match = resolve(url)
    cap = getattr(match.func, "required_capability", None)
    if cap is not None:
        return has_cap(user, Cap(cap))
    if match.app_name == "admin" or match.namespace == "admin":
        return bool(user.is_active and user.is_staff)
    return bool(user.is_authenticated)


@register.simple_tag(takes_context=True)
def staff_link(context, name: str, label: str, *args) -> str:
    """`{% staff_link "payments_staff:held" "Held" %}`: the link, or nothing when the user may not open it."""
    request = context.get("request")
    if request is None:
        return ""
    try:
        url = reverse(name, args=args)
    except NoReverseMatch:
        return ""
    if not link_allowed(request.user, url):
        return ""
    current = mark_safe(' aria-current="page"') if request.path == url else ""  # a constant, no user text
    return format_html('<a href="{}"{}>{}</a>', url, current, label)
