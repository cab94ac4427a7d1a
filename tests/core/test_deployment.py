"""Issue 12, findings 9 and 10: production settings pass `check --deploy`, pages carry a Content-Security-Policy
with no inline code, the proxy SSL header is a setting, docker compose publishes on 127.0.0.1 and needs a
database password, and the API schema and its documentation are for staff only."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from tests.signin import sign_in

ROOT = Path(settings.BASE_DIR)


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    # As in production: none of the test run's switches (DJANGO_ALLOW_ASYNC_UNSAFE is set by the browser tests).
    dropped = ("TESTING", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    run_env = {k: v for k, v in os.environ.items() if k not in dropped}
    run_env.update(env)
    return subprocess.run(
        [sys.executable, *args], env=run_env, capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_check_deploy_reports_nothing_with_production_settings():
    result = _run(
        "manage.py",
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_the_proxy_ssl_header_is_a_setting_and_a_malformed_one_stops_start_up():
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECURE_PROXY_SSL_HEADER)"
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true"}
    ok = _run("-c", code, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https", **env)
    assert ok.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')", ok.stderr
    bad = _run("-c", code, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto", **env)
    assert bad.returncode != 0 and "SECURE_PROXY_SSL_HEADER must be HEADER,value" in bad.stderr


def test_compose_publishes_the_web_port_on_localhost_and_requires_a_database_password():
    text = (ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    assert compose["services"]["web"]["ports"] == ["${WEB_BIND:-127.0.0.1}:8000:8000"]
    assert compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )
    assert "POSTGRES_PASSWORD:-" not in text  # no default password anywhere
    assert "${POSTGRES_PASSWORD:?" in compose["x-app"]["environment"]["DATABASE_URL"]


# Templates a browser renders (the PDF templates are rendered by WeasyPrint and never served as HTML).
INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|javascript:", re.IGNORECASE)


def test_no_browser_template_has_inline_script_or_style():
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in (ROOT / "templates").rglob("*.html")
        if "pdf" not in path.parts
        for match in INLINE.finditer(path.read_text())
    ]
    assert offenders == []


def _user(role: str) -> User:
    user = User.objects.create_user(username=f"deploy-{role}")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_unsafe_inline():
    client = Client()
    sign_in(client, _user("auditor"))
    response = client.get("/staff/jobs/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy


@pytest.mark.django_db
def test_the_api_schema_and_docs_are_for_staff_only():
    participant, staff = Client(), Client()
    sign_in(participant, _user("participant"))
    sign_in(staff, _user("auditor"))
    for url in ("/api/schema/", "/api/docs/"):
        assert participant.get(url).status_code == 403, url
        assert staff.get(url).status_code == 200, url
    docs = staff.get("/api/docs/").content.decode()
    assert not INLINE.search(docs)
    script = re.search(r'<script src="([^"]*\?script[^"]*)"', docs)
    assert script and staff.get(script.group(1).replace("&amp;", "&")).status_code == 200
