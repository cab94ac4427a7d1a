"""Start the web server, a Celery worker and Celery beat; stop all three on Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="8000")
    args = parser.parse_args()
    env = dict(os.environ)
    celery = [PY, "-m", "celery", "-A", "config"]
    procs = {
        "web": subprocess.Popen(
            [PY, "manage.py", "runserver", f"{args.host}:{args.port}", "--noreload"], cwd=ROOT, env=env
        ),
        "worker": subprocess.Popen(
            celery + ["worker", "--loglevel=INFO", "--concurrency=2", "--pool=prefork"], cwd=ROOT, env=env
        ),
        "beat": subprocess.Popen(celery + ["beat", "--loglevel=INFO"], cwd=ROOT, env=env),
    }
    print(
        f"web http://{args.host}:{args.port}/  worker and beat started (Ctrl-C stops all three)", flush=True
    )

    def stop(*_):
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        for p in procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
        sys.exit(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while True:
        for name, p in procs.items():
            if p.poll() is not None:
                print(f"{name} exited with status {p.returncode}; stopping the others", flush=True)
                stop()
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
