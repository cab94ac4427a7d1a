"""The pages under load: portal and staff pages with many people signed in at once (issue 15).

`python manage.py bench pages --participants N --users 20 [--seconds 60] [--workers 4] [--json]`, in a scratch
PostgreSQL database:

1. Population: `load_demo --participants N` (the demo built through the services, then copied set-based;
   operations.population), then ANALYZE; collectstatic, as the image does.
2. Sessions made on the server (operations.stack.session_cookie): three users in four are participants, each a
   different person spread over the population; the others are staff (the administrator role, second factor
   passed), each with a user of their own.
3. gunicorn (`DEBUG=false`, whitenoise, QUERY_COUNT_HEADER so each response says its query count) with
   `--workers` processes, started as docker-compose.yml starts the web service.
4. Each user is a thread that loads its role's pages in turn for `--seconds`: without pause (the default, the
   hardest reading: 20 users are then 20 requests in flight at every instant), or with `--think S`, pausing
   between pages for a time drawn uniformly from S/2 to 3S/2 seconds, as a person reads a page before the next
   (locust's `between`); each user's pauses come from its own seeded generator, so two runs pause alike.

With `--json` it prints one object: `participants`, `users`, `seconds`, `errors`, `requests`, and `pages` mapping
each page's name to `requests`, `p50_ms`, `p95_ms`, `p99_ms` and `queries` (the largest count seen). Targets on a
two-core machine: portal p95 under 150 ms, staff p95 under 300 ms, no error, and queries per page that do not grow
with the population (compare two runs at different N).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.db import connection, connections
from django.test.utils import override_settings

from books.models import Account
from core import valuation_calendar as cal
from core.roles import Role, role_groups_ensure
from operations.bench.reports import population_build
from operations.simulation.sandbox import scratch_database
from operations.stack import (
    Browser,
    Processes,
    StackFailure,
    free_port,
    session_cookie,
    wait_for,
    with_database,
)
from participants.models import Person

STARTUP_SECONDS = 90


def add_arguments(parser) -> None:
    parser.add_argument("--users", type=int, default=20, help="people signed in at once (default 20)")
    parser.add_argument("--seconds", type=int, default=60, help="how long the users load pages (default 60)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes (default 4)")
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean pause in seconds between a user's pages, drawn from S/2 to 3S/2 (default 0: no pause)",
    )
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 30))
    parser.add_argument("--history-days", type=int, default=21)
    parser.add_argument(
        "--reuse-database",
        action="store_true",
        help="drive the pages on DATABASE_URL's database as it is (a population load_demo built before, e.g. for "
        "bench reports --reuse-database), not a scratch one built now; its sessions and the staff users' "
        "authenticators are added to it",
    )


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (pct in 0-100) of the values; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil(n * pct / 100), at least 1
    return ordered[int(rank) - 1]


@dataclass
class Tally:
    """Every response's time and query count, by page name; errors as (page, status)."""

    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    queries: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, page: str, ms: float, status: int, headers: dict[str, str]) -> None:
        with self.lock:
            self.times[page].append(ms)
            count = int(headers.get("X-Queries") or headers.get("x-queries") or 0)
            self.queries[page] = max(self.queries[page], count)
            if status != 200:
                self.errors.append((page, status))

    def summary(self) -> dict[str, dict]:
        return {
            page: {
                "requests": len(times),
                "p50_ms": round(percentile(times, 50), 1),
                "p95_ms": round(percentile(times, 95), 1),
                "p99_ms": round(percentile(times, 99), 1),
                "queries": self.queries[page],
            }
            for page, times in sorted(self.times.items())
        }


def _participant_pages(person) -> list[tuple[str, str]]:
    account = Account.objects.filter(participation__person=person).order_by("pk").values_list("pk", flat=True)
    pages = [
        ("portal_home", "/portal/"),
        ("portal_calendar", "/portal/payments/"),
        ("portal_elections", "/portal/elections/"),
        ("portal_claims", "/portal/claims/"),
    ]
    if account:
        pages.insert(1, ("portal_account", f"/portal/books/accounts/{account[0]}/"))
    return pages


def _staff_pages(person) -> list[tuple[str, str]]:
    return [
        ("staff_dashboard", "/staff/"),
        ("staff_participant_search", f"/staff/participants/?q={person.last_name}"),
        ("staff_participant", f"/staff/participants/{person.pk}/"),
        ("staff_payments_upcoming", "/staff/payments/"),
        ("staff_payments_held", "/staff/payments/held/"),
        ("staff_claims_queue", "/staff/claims/"),
        ("staff_audit_log", "/staff/audit/"),
    ]


def _people_who_sign_in(count: int) -> list:
    """`count` participants who have a sign-in, spread evenly over the population (copies included)."""
    ids = list(Person.objects.filter(user__isnull=False).order_by("pk").values_list("pk", flat=True))
    if not ids:
        raise StackFailure("the population has nobody who signs in")
    step = max(1, len(ids) // max(1, count))
    chosen = [ids[(i * step) % len(ids)] for i in range(count)]
    by_id = Person.objects.select_related("user").in_bulk(chosen)
    return [by_id[i] for i in chosen]


def _users(count: int) -> list[dict]:
    """Each simulated user: its session cookie and the pages it loads in turn."""
    role_groups_ensure()
    staff_count = count // 4
    people = _people_who_sign_in(count)
    users = []
    for i, person in enumerate(people):
        if i < staff_count:
            # get_or_create: a database reused (--reuse-database) keeps the staff users of an earlier run
            staff, _ = User.objects.get_or_create(username=f"bench-staff-{i}")
            staff.set_password(secrets.token_urlsafe(18))
            staff.save(update_fields=["password"])
            staff.groups.add(Group.objects.get(name=Role.ADMINISTRATOR.value))
            users.append({"cookie": session_cookie(staff, second_factor=True), "pages": _staff_pages(person)})
        else:
            users.append(
                {
                    "cookie": session_cookie(person.user, second_factor=False),
                    "pages": _participant_pages(person),
                }
            )
    return users


def think_pauses(think: float, seed: int) -> Iterator[float]:
    """A user's pauses between pages: uniform from think/2 to 3*think/2 seconds (mean `think`); 0 for none."""
    rng = random.Random(seed)
    while True:
        yield rng.uniform(think / 2, think * 3 / 2) if think > 0 else 0.0


def _drive(base: str, users: list[dict], seconds: int, tally: Tally, think: float = 0.0) -> None:
    deadline = time.monotonic() + seconds

    def one_user(index: int, user: dict) -> None:
        browser = Browser(base)
        browser.set_cookie(*user["cookie"])
        pauses = think_pauses(think, seed=index)
        while time.monotonic() < deadline:
            for page, path in user["pages"]:
                pause = next(pauses)
                if pause:
                    time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                if time.monotonic() >= deadline:
                    return
                started = time.perf_counter()
                status, url, headers, _body = browser.fetch(path)
                if status == 200 and not url.endswith(path):
                    status = 302  # sent elsewhere (the sign-in page): the page itself was not served
                tally.add(page, (time.perf_counter() - started) * 1000, status, headers)

    threads = [threading.Thread(target=one_user, args=(i, u), daemon=True) for i, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)


def _environment(name: str, workdir: Path, secret_key: str) -> dict[str, str]:
    base_url = os.environ["DATABASE_URL"]
    return {
        **{k: v for k, v in os.environ.items() if k not in ("TESTING", "TEST_DATABASE_NAME")},
        "DEBUG": "false",
        "SECRET_KEY": secret_key,
        "REQUIRE_SECRET_KEY": "true",
        "DATABASE_URL": with_database(base_url, name),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SESSION_COOKIE_SECURE": "false",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_HSTS_SECONDS": "0",
        "MEDIA_ROOT": str(workdir / "media"),
        "QUERY_COUNT_HEADER": "true",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


def _serve_and_drive(
    name: str, users: list[dict], *, secret_key: str, workers: int, seconds: int, tally: Tally, think: float
) -> None:
    with tempfile.TemporaryDirectory(prefix="nqdc-bench-pages-") as tmp:
        workdir = Path(tmp)
        (workdir / "media").mkdir()
        env = _environment(name, workdir, secret_key)
        collected = Processes(workdir, env)
        collected.start(
            "collectstatic", [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"]
        )
        if collected.started["collectstatic"].wait(timeout=300) != 0:
            raise StackFailure(f"collectstatic failed:\n{collected.log('collectstatic')[-2000:]}")
        base = f"http://127.0.0.1:{free_port()}"
        processes = Processes(workdir, env)
        try:
            processes.start(
                "web",
                [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", base.removeprefix("http://")]
                + ["--workers", str(workers), "--timeout", "120"],
            )
            probe = Browser(base)
            wait_for(
                lambda: probe.get("/healthz")[0] == 200,
                timeout=STARTUP_SECONDS,
                what="gunicorn's /healthz",
                processes=processes,
            )
            _drive(base, users, seconds, tally, think)
        finally:
            processes.stop()


@contextlib.contextmanager
def _database(reuse: bool) -> Iterator[str]:
    """The database the pages are served from: DATABASE_URL's own (`--reuse-database`), else a scratch one."""
    if reuse:
        yield str(connection.settings_dict["NAME"])
        return
    with scratch_database() as name:
        yield name


def run(
    *,
    participants: int,
    json: bool,
    users: int = 20,
    seconds: int = 60,
    workers: int = 4,
    as_of: dt.date | None = None,
    history_days: int = 21,
    reuse_database: bool = False,
    think: float = 0.0,
) -> dict:
    quiet = json
    as_of = as_of or dt.date(2026, 11, 30)
    if not cal.is_valuation_date(as_of):
        as_of = cal.previous_valuation_date(as_of)
    with _database(reuse_database) as name:
        if connection.vendor != "postgresql":
            raise RuntimeError("bench pages needs PostgreSQL (DATABASE_URL)")
        started = time.perf_counter()
        if reuse_database:
            people = Person.objects.count()
            if not quiet:
                print(f"database {name}: {people} participants", file=sys.stderr)
        else:
            if not quiet:
                print(f"scratch database {name}: building {participants} participants", file=sys.stderr)
            people = population_build(participants, as_of, history_days, quiet)
        # The sessions are signed with the key gunicorn will use (session data and the user's auth hash).
        secret_key = secrets.token_urlsafe(50)
        with override_settings(SECRET_KEY=secret_key):
            simulated = _users(users)
        built = time.perf_counter() - started
        connections.close_all()  # gunicorn's workers open their own
        if not quiet:
            print(f"{people} people in {built:.0f} s; {users} users for {seconds} s", file=sys.stderr)
        tally = Tally()
        _serve_and_drive(
            name, simulated, secret_key=secret_key, workers=workers, seconds=seconds, tally=tally, think=think
        )
    pages = tally.summary()
    return {
        "participants": people,
        "users": users,
        "seconds": seconds,
        "workers": workers,
        "population_seconds": round(built, 1),
        "reused_database": reuse_database,
        "think_seconds": think,
        "requests": sum(p["requests"] for p in pages.values()),
        "requests_per_second": round(sum(p["requests"] for p in pages.values()) / max(1, seconds), 1),
        "errors": len(tally.errors),
        "error_pages": sorted({f"{page} {status}" for page, status in tally.errors}),
        "pages": pages,
    }
