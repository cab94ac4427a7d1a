"""make smoke: the processes of docker-compose.yml, started directly, driven like a first morning in production.

1. `docker compose config` validates docker-compose.yml (skipped, with a message, where docker is absent).
2. A fresh database of its own (SMOKE_DATABASE_NAME, default nqdc_smoke_<pid>) on DATABASE_URL's server
   and its own Redis database (SMOKE_REDIS_DB, default 14) on REDIS_URL's server;
   the web service's start-up commands (migrate, load_catalog, sync_schedules) and the image's collectstatic.
3. gunicorn (DEBUG=false, so whitenoise serves the static files), a Celery worker and Celery beat with the
   database scheduler, against that database and REDIS_URL, on a free port.
4. A participant signs in through the login form and loads the portal; a staff member loads the staff
   dashboard; every CSS and JS file those pages link answers 200. Anonymous staff pages are refused.
5. Beat sends a task the worker runs; a Valuation Date is credited through the worker (the crediting task),
   its JobRun ends done, and verify_books finds nothing.
6. Everything it started is stopped and its database dropped, also when a step fails (exit status 1).

Staff sign-in: the script creates the staff member's session server-side (`staff_session_cookie`), as
Django's test client `force_login` and tests/signin.py do, with a confirmed TOTP authenticator and the
session keys of a passed second factor; the participant (no authenticator) uses the real login form. Set SMOKE_KEEP=1 to keep the logs directory.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from operations.stack import (  # noqa: E402 - after the project root is on the path
    Browser,
    Processes,
    StackFailure,
    free_port,
    staff_session_cookie,
    wait_for,
    with_database,
)

ROOT = Path(__file__).resolve().parent.parent
# The key of the values encrypted at rest (config/settings.py FIELD_ENCRYPTION_KEYS), new for each run: a Fernet key.
FIELD_KEY = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
PY = sys.executable
STARTUP_SECONDS = 60
JOB_SECONDS = 120


SmokeFailure = StackFailure


def step(message: str) -> None:
    print(f"smoke: {message}", flush=True)


def compose_config() -> None:
    docker = shutil.which("docker")
    if docker is None:
        step("docker is not installed: docker-compose.yml not validated (docker compose config skipped)")
        return
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        step("docker has no compose plugin: docker-compose.yml not validated (docker compose config skipped)")
        return
    result = subprocess.run(
        [docker, "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        env={**os.environ, "SECRET_KEY": "x" * 50, "FIELD_ENCRYPTION_KEYS": FIELD_KEY},
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise SmokeFailure(
            f"docker compose config refused docker-compose.yml:\n{result.stderr}{result.stdout}"
        )
    step("docker compose config: docker-compose.yml is valid")


def manage(env: dict[str, str], *args: str) -> None:
    result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SmokeFailure(
            f"manage.py {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
        )


def assets_load(browser: Browser, page: str, body: str) -> list[str]:
    """Every stylesheet and script the page links from /static/ answers 200 with content; at least one CSS."""
    urls = sorted(set(re.findall(r"""(?:href|src)=["'](/static/[^"'?#]+\.(?:css|js))["']""", body)))
    if not any(u.endswith(".css") for u in urls):
        raise SmokeFailure(f"{page} links no stylesheet from /static/:\n{body[:1500]}")
    for url in urls:
        status, _, content = browser.get(url)
        if status != 200 or not content:
            raise SmokeFailure(f"{page}: {url} answered {status} ({len(content)} characters)")
    return urls


def population_prepare(password: str) -> dict:
    """Books with a Valuation Date to credit (operations.bench.crediting), a participant who signs in, a staff member."""
    from django.contrib.auth.models import Group, User

    from core.roles import Role, role_groups_ensure
    from operations.bench.crediting import DAY, generate
    from participants.models import Person

    built = generate(participants=20, paid=1.0)
    role_groups_ensure()
    person = Person.objects.order_by("id").first()
    participant = User.objects.create_user(username="smoke-participant", password=password)
    participant.groups.add(Group.objects.get(name=Role.PARTICIPANT.value))
    person.user = participant
    person.save(update_fields=["user"])
    staff = User.objects.create_user(username="smoke-administrator", password=password)
    staff.groups.add(Group.objects.get(name=Role.ADMINISTRATOR.value))
    return {"day": DAY, "built": built, "participant": participant, "staff": staff, "person": person}


def beat_task_schedule(queue: str) -> None:
    """A periodic task that beat sends every second to the smoke worker's queue (a harmless daily job)."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    every, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="smoke: beat reaches the worker", task="claims.flag_deadlines", interval=every, queue=queue
    )


def run(env: dict[str, str], base: str, processes: Processes, queue: str) -> None:
    step("migrate, load_catalog, sync_schedules (the web service's start-up), collectstatic (the image's)")
    for command in (
        ["migrate", "--noinput"],
        ["load_catalog"],
        ["sync_schedules"],
        ["collectstatic", "--noinput", "--verbosity", "0"],
    ):
        manage(env, *command)

    import django

    django.setup()
    from django.db import connection

    password = secrets.token_urlsafe(18)
    population = population_prepare(password)
    beat_task_schedule(queue)
    connection.close()

    step(f"starting gunicorn on {base}, a Celery worker and Celery beat")
    processes.start(
        "web",
        [
            PY,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            base.removeprefix("http://"),
            "--workers",
            "2",
            "--access-logfile",
            "-",
        ],
    )
    processes.start(
        "worker",
        [
            PY,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=INFO",
            "--concurrency=2",
            "--queues",
            f"celery,{queue}",
            "--hostname",
            f"{queue}@%h",
        ],
    )
    processes.start(
        "beat",
        [
            PY,
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            "--loglevel=INFO",
            "--scheduler",
            "core.beat:DatabaseScheduler",
            "--max-interval",
            "1",
        ],
    )
    anonymous = Browser(base)
    wait_for(
        lambda: anonymous.get("/healthz")[0] == 200,
        timeout=STARTUP_SECONDS,
        what="gunicorn's /healthz",
        processes=processes,
    )
    wait_for(
        lambda: "ready." in processes.log("worker"),
        timeout=STARTUP_SECONDS,
        what="the worker",
        processes=processes,
    )

    status, url, _ = anonymous.get("/staff/")
    if "/accounts/login/" not in url:
        raise SmokeFailure(
            f"an anonymous visitor reached /staff/ ({status} at {url}): deny by default is off"
        )

    step("a participant signs in through the login form and loads the portal")
    participant = Browser(base)
    status, _, form = participant.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    if status != 200 or token is None:
        raise SmokeFailure(f"the login page answered {status} without a CSRF token")
    status, url, body = participant.post(
        "/accounts/login/",
        {
            "username": population["participant"].username,
            "password": password,
            "csrfmiddlewaretoken": html.unescape(token.group(1)),
        },
    )
    if status != 200 or "/portal/" not in url:
        raise SmokeFailure(f"the participant's sign-in ended at {url} ({status}):\n{body[:1500]}")
    person = population["person"]
    if person.last_name not in body:
        raise SmokeFailure(f"the portal does not name the participant ({person.last_name}):\n{body[:1500]}")
    assets = assets_load(participant, "the portal", body)
    step(f"portal: 200, {len(assets)} static files 200 ({', '.join(assets)})")

    step("a staff member (session created on the server) loads the staff dashboard")
    staff = Browser(base)
    staff.set_cookie(*staff_session_cookie(population["staff"]))
    connection.close()
    status, url, body = staff.get("/staff/")
    if status != 200 or not url.endswith("/staff/"):
        raise SmokeFailure(f"the staff dashboard answered {status} at {url}:\n{body[:1500]}")
    assets = assets_load(staff, "the staff dashboard", body)
    step(f"staff dashboard: 200, {len(assets)} static files 200")

    wait_for(
        lambda: re.search(r"claims\.flag_deadlines\[[^\]]+\] succeeded", processes.log("worker")),
        timeout=STARTUP_SECONDS,
        what="beat's periodic task to run in the worker",
        processes=processes,
    )
    step("beat sent a periodic task and the worker ran it")

    from books.services.verify import books_verify
    from books.tasks import credit_valuation_date_task
    from core.models import JobRun

    day = population["day"]
    step(f"crediting Valuation Date {day} through the worker")
    credit_valuation_date_task.apply_async(args=[day.isoformat()], queue=queue)

    def crediting_finished():
        run = JobRun.objects.filter(kind="crediting", key=day.isoformat()).first()
        connection.close()
        return run if run is not None and run.status != "running" else None

    run = wait_for(
        crediting_finished, timeout=JOB_SECONDS, what="the crediting JobRun to finish", processes=processes
    )
    if run.status != "done":
        raise SmokeFailure(
            f"the crediting run ended {run.status}: {run.message}\n{processes.log('worker')[-3000:]}"
        )
    positions = population["built"]["positions"]
    if run.stats.get("positions_valued") != positions:
        raise SmokeFailure(f"the crediting run valued {run.stats} positions, expected {positions}")
    problems = books_verify()
    if problems:
        raise SmokeFailure(f"verify_books found: {problems}")
    step(f"crediting done ({json.dumps(run.stats, sort_keys=True)}); verify_books finds nothing")
    processes.check_alive()


def main() -> int:
    base_url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base_url.startswith(("postgres://", "postgresql://")) or not redis_url:
        print(
            "smoke: DATABASE_URL (PostgreSQL) and REDIS_URL must be set (make smoke sets both)",
            file=sys.stderr,
        )
        return 2
    name = os.environ.get("SMOKE_DATABASE_NAME") or f"nqdc_smoke_{os.getpid()}"
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        print(f"smoke: SMOKE_DATABASE_NAME {name!r} is not a plain database name", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="nqdc-smoke-"))
    (workdir / "media").mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    queue = f"smoke-{secrets.token_hex(4)}"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("TESTING", "TEST_DATABASE_NAME")},
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "REQUIRE_SECRET_KEY": "true",
        "FIELD_ENCRYPTION_KEYS": FIELD_KEY,
        "DATABASE_URL": with_database(base_url, name),
        # Its own Redis database (SMOKE_REDIS_DB, default 14), so beat's schedules land apart from the tests'.
        "REDIS_URL": with_database(redis_url, os.environ.get("SMOKE_REDIS_DB", "14")),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # Plain HTTP on the loopback: the README's plain-HTTP trial settings (production assumes HTTPS in front).
        "SESSION_COOKIE_SECURE": "false",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_HSTS_SECONDS": "0",
        "MEDIA_ROOT": str(workdir / "media"),
        "PYTHONUNBUFFERED": "1",
        "LOG_LEVEL": "INFO",
    }
    os.environ.clear()
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    processes = Processes(workdir, env)
    started = time.monotonic()
    import psycopg

    server = psycopg.connect(with_database(base_url, "postgres"), autocommit=True)
    server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.execute(f'CREATE DATABASE "{name}"')
    failed = None
    try:
        compose_config()
        run(env, base, processes, queue)
    except SmokeFailure as exc:
        failed = str(exc)
    except Exception as exc:  # a bug in the smoke test or the product: still stop everything
        import traceback

        failed = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    finally:
        processes.stop()
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.close()
        with contextlib.suppress(Exception):
            from config.celery import app

            with app.connection_for_write() as conn:
                conn.default_channel.client.delete(queue, f"_kombu.binding.{queue}")
    seconds = time.monotonic() - started
    if failed:
        print(f"smoke: FAILED after {seconds:.0f}s: {failed}", file=sys.stderr)
        for name_ in processes.started:
            print(f"--- {name_} log (last lines) ---\n{processes.log(name_)[-2500:]}", file=sys.stderr)
        print(f"smoke: logs kept in {workdir}", file=sys.stderr)
        return 1
    if not os.environ.get("SMOKE_KEEP"):
        shutil.rmtree(workdir, ignore_errors=True)
    step(f"passed in {seconds:.0f}s; everything it started is stopped and database {name} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
