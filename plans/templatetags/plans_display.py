"""Provision values rendered for people: scalars as text, lists of objects as tables, objects as key/value tables."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _label(key: object) -> str:
    return str(key).replace("_", " ")


def render_value(value: Any) -> SafeString:
    if value is None:
        return mark_safe('<span class="muted">none (not in this version)</span>')
    if isinstance(value, bool):
        return mark_safe("Yes" if value else "No")
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="muted">none</span>')
        if all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for row in value:
                columns += [k for k in row if k not in columns]
            nested = any(
                isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict) for x in v))
                for row in value
                for v in row.values()
            )
            if nested or len(columns) > 6:
                # Wide rules (benefits, triggers and dates) read better one rule at a time.
                return mark_safe(
                    '<ol class="plans-items">'
                    + "".join(f"<li>{render_value(row)}</li>" for row in value)
                    + "</ol>"
                )
            head = "".join(format_html("<th>{}</th>", _label(c)) for c in columns)
            body = "".join(
                "<tr>"
                + "".join(f"<td>{render_value(row[c]) if c in row else ''}</td>" for c in columns)
                + "</tr>"
                for row in value
            )
            return mark_safe(
                f'<table class="data plans-value"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
            )
        if all(not isinstance(v, dict | list) for v in value):
            return mark_safe(", ".join(escape(_label(v)) for v in value))
        return mark_safe(
            '<ol class="plans-value">' + "".join(f"<li>{render_value(v)}</li>" for v in value) + "</ol>"
        )
    if isinstance(value, dict):
        rows = "".join(
            format_html("<tr><th>{}</th><td>{}</td></tr>", _label(k), render_value(v))
            for k, v in value.items()
        )
        return mark_safe(f'<table class="compact plans-value">{rows}</table>')
    return escape(value)


@register.filter
def provision_value(value: Any) -> SafeString:
    return render_value(value)
