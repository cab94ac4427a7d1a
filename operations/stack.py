"""The production processes started directly, and a cookie-keeping client to drive them: shared by `make smoke`
(scripts/smoke.py) and `bench pages` (operations/bench/pages.py).

Nothing here imports Django at module level: the smoke script imports it before it has set up Django.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import Cookie, CookieJar
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class StackFailure(Exception):
    """A process of the stack exited, or a wait timed out."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


class Processes:
    """The processes started, each in its own process group; stop() ends them all."""

    def __init__(self, logs: Path, env: dict[str, str]):
        self.logs, self.env = logs, env
        self.started: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        out = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        self.started[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def check_alive(self) -> None:
        for name, process in self.started.items():
            if process.poll() is not None:
                raise StackFailure(f"{name} exited with {process.returncode}:\n{self.log(name)[-3000:]}")

    def stop(self) -> None:
        for process in self.started.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for name, process in self.started.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{name} did not stop on SIGTERM: killed", file=sys.stderr, flush=True)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def wait_for(condition, *, timeout: float, what: str, processes: Processes, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        processes.check_alive()
        if time.monotonic() > deadline:
            raise StackFailure(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Browser:
    """A cookie-keeping HTTP client: what a person's browser does with the pages, without running scripts."""

    def __init__(self, base: str):
        self.base = base
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str, str]:
        """(status, final URL, body); redirects are followed."""
        status, url, _headers, body = self.fetch(path)
        return status, url, body

    def fetch(self, path: str) -> tuple[int, str, dict[str, str], str]:
        """(status, final URL, response headers, body); redirects are followed."""
        try:
            with self.opener.open(self.base + path, timeout=30) as response:
                body = response.read().decode("utf-8", "replace")
                return response.status, response.url, dict(response.headers.items()), body
        except urllib.error.HTTPError as exc:
            return exc.code, exc.url, dict(exc.headers.items()), exc.read().decode("utf-8", "replace")
        except OSError as exc:  # not listening yet, gone, or timed out (URLError is an OSError)
            return 0, self.base + path, {}, str(exc)

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str, str]:
        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + path})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.url, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.url, exc.read().decode("utf-8", "replace")

    def set_cookie(self, name: str, value: str) -> None:
        host = urllib.parse.urlsplit(self.base).hostname or "127.0.0.1"
        self.jar.set_cookie(
            Cookie(
                0, name, value, None, False, host, False, False, "/", True, False, None, False, None, None, {}
            )
        )


def session_cookie(user, *, second_factor: bool) -> tuple[str, str]:
    """A signed-in session created on the server as the tests' sign_in (tests/signin.py) does: force_login's keys
    and, for staff (`second_factor`), a confirmed TOTP authenticator and the keys django-otp and core.signin set when
    its code is accepted (the code itself cannot be typed by a script)."""
    # on use: scripts/smoke.py imports this module before Django is set up
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from core.signin.services import VERIFIED_AT_SESSION_KEY  # on use, as above

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    if second_factor:
        device = TOTPDevice.objects.create(user=user, name="script authenticator", confirmed=True)
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session[VERIFIED_AT_SESSION_KEY] = timezone.now().timestamp()
    session.create()
    assert session.session_key is not None  # create() gave it one
    return settings.SESSION_COOKIE_NAME, session.session_key


def staff_session_cookie(user) -> tuple[str, str]:
    """A staff member's session that has passed the second factor (make smoke)."""
    return session_cookie(user, second_factor=True)
