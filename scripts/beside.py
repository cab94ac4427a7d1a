"""Run a command (the fast tier's pytest) while a chain of other steps (the lint steps) runs beside it.

    python scripts/beside.py --step "ruff check ." --step "mypy" -- python -m pytest ...

The main command writes to the terminal as it runs. The steps run one after another in the background, each to
its end even when one before it failed, with their output kept and printed when the main command has finished,
under the command line of each step and its exit status. The exit status is the main command's if that failed,
else 1 if a step failed, else 0. Used by `make check` (Makefile): on two cores mypy and the other lint steps take
a little CPU beside the tests instead of a quarter of a minute of wall time before them.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import threading
import time


def _run_steps(steps: list[str], results: list[tuple[str, int, float, str]]) -> None:
    for step in steps:
        started = time.monotonic()
        try:
            done = subprocess.run(
                shlex.split(step), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            code, output = done.returncode, done.stdout
        except OSError as exc:  # the step's program is missing: a failed step, said so
            code, output = 127, f"{exc}\n"
        results.append((step, code, time.monotonic() - started, output))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", action="append", default=[], help="a command to run beside (repeatable)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the main command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no main command after --")
    results: list[tuple[str, int, float, str]] = []
    chain = threading.Thread(target=_run_steps, args=(args.step, results), daemon=True)
    chain.start()
    try:
        main_code = subprocess.run(command).returncode
        chain.join()
    except KeyboardInterrupt:
        return 130
    failed = [step for step, code, _, _ in results if code != 0]
    print(f"\n--- run beside the tests ({len(results)} steps, {len(failed)} failed) ---", flush=True)
    for step, code, seconds, output in results:
        print(f"$ {step}\n{output.rstrip()}" if output.strip() else f"$ {step}")
        print(f"[exit {code}, {seconds:.1f} s]" + (" FAILED" if code else ""), flush=True)
    if main_code != 0:
        return main_code
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
