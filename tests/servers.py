"""Private PostgreSQL and Redis servers for the fault tests, which restart or stop them mid-job.

Other tests (and other checkouts on the same machine) share the PostgreSQL on 5432 and the Redis on 6379:
those are never touched. A fault test starts its own cluster (initdb into a temporary directory, on a free
port, as the `postgres` OS user when run as root, since initdb refuses root) and its own redis-server, and
restarts or stops only those.

    with private_postgres() as pg:      # pg.url("nqdc") -> postgres://postgres@127.0.0.1:PORT/nqdc
        pg.restart()                            # an immediate stop (a crash: no checkpoint), then a start
    with private_redis(tmp_path) as redis:      # redis.url(0); append-only file on, as docker-compose.yml
        redis.stop(); redis.start()
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        import pytest

        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    return Path(found[-1]).parent


@dataclass
class PrivatePostgres:
    data: Path
    port: int
    bin: Path
    user: str | None  # the OS user the server runs as (None: this process's user)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
            )
        return result

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.data}"
            " -c fsync=off -c full_page_writes=off -c max_connections=60"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-o", options, "-w", "start"
        )

    def stop(self, mode: str = "immediate") -> None:
        """`immediate`: every backend is killed and the next start runs crash recovery, as after a power cut."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self._run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-Atc", sql
        ).stdout

    def log(self) -> str:
        path = self.data / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    bin_dir = _postgres_bin()
    user = "postgres" if os.geteuid() == 0 else None
    # Under /tmp itself: the server's OS user must reach it (pytest's own temporary folders are private).
    root = Path(tempfile.mkdtemp(prefix="nqdc-fault-pg-"))
    if user:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PrivatePostgres(data=root / "data", port=free_port(), bin=bin_dir, user=user)
    server._run(
        "initdb",
        "-D",
        str(server.data),
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
        "--no-sync",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop("fast")
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class PrivateRedis:
    directory: Path
    port: int
    process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--daemonize",
                "no",
            ],
            stdout=(self.directory / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while not port_open(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start:\n{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM: redis-server writes its append-only file and exits, as `docker compose stop redis` does."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextlib.contextmanager
def private_redis(base: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        import pytest

        pytest.skip("redis-server is not installed")
    directory = base / "redis"
    directory.mkdir()
    server = PrivateRedis(directory=directory, port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
