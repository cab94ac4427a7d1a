"""Report pages whose figures a job computes (core.report_pages): press the page's compute button as a browser
does, with the queued task run in this process (the `eager_jobs` fixture of tests/conftest.py), and read the page
it comes back to."""

from __future__ import annotations

import html
import re

FORM = re.compile(r'<form method="post" action="(?P<action>[^"]+/prepare)">(?P<body>.*?)</form>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="(?P<name>[^"]+)" value="(?P<value>[^"]*)">')


def compute_form(page: str) -> tuple[str, dict[str, str]]:
    """The page's compute form: where it posts, and its fields (the report's parameters and where to come back)."""
    found = FORM.search(page)
    assert found, "the page offers no compute button"
    fields = {m["name"]: html.unescape(m["value"]) for m in HIDDEN.finditer(found["body"])}
    fields.pop("csrfmiddlewaretoken", None)
    return html.unescape(found["action"]), fields


def computed(client, url: str, capture) -> str:
    """The report page after pressing its compute button (the job run eagerly on commit): its text."""
    page = client.get(url).content.decode()
    action, fields = compute_form(page)
    with capture(execute=True):
        response = client.post(action, fields)
    assert response.status_code == 302 and response["Location"] == fields["next"]
    return client.get(response["Location"]).content.decode()
