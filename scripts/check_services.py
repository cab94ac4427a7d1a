"""Stop at once, with a clear message, if PostgreSQL or Redis is unreachable (make test needs both)."""

from __future__ import annotations

import os
import socket
import sys
from urllib.parse import urlparse


def reachable(url: str, default_port: int) -> tuple[bool, str]:
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or default_port
    try:
        with socket.create_connection((host, port), timeout=3):
            return True, f"{host}:{port}"
    except OSError as exc:
        return False, f"{host}:{port} ({exc.strerror or exc})"


def main() -> int:
    failures = []
    db = os.environ.get("DATABASE_URL", "")
    if not db.startswith(("postgres://", "postgresql://")):
        failures.append(f"DATABASE_URL must point at PostgreSQL for the tests, not {db or '(unset)'}")
    else:
        ok, where = reachable(db, 5432)
        if not ok:
            failures.append(
                f"PostgreSQL is unreachable at {where}: start it (see README) and run make test again"
            )
        else:
            try:
                import psycopg  # on use: only a PostgreSQL DATABASE_URL needs the driver

                parsed = urlparse(db)
                psycopg.connect(
                    host=parsed.hostname,
                    port=parsed.port or 5432,
                    user=parsed.username or "postgres",
                    password=parsed.password,
                    dbname="postgres",
                    connect_timeout=3,
                ).close()
            except Exception as exc:  # noqa: BLE001 - any failure means the tests cannot run
                failures.append(f"PostgreSQL at {where} refused the connection: {exc}")
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        failures.append("REDIS_URL is unset")
    else:
        ok, where = reachable(redis_url, 6379)
        if not ok:
            failures.append(f"Redis is unreachable at {where}: start it (see README) and run make test again")
    for f in failures:
        print(f"make test: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
