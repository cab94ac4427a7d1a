"""python manage.py simulate SCENARIO.json [--json | --check] (format: shared/scenarios/FORMAT.md)."""

from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand

from operations.simulation.runner import check_result, run_scenario
from operations.simulation.sandbox import rolled_back, scratch_database
from operations.simulation.scenario import ScenarioError, load_scenario


class Command(BaseCommand):
    help = "Replay a plan scenario through the real services and batch jobs, in a sandbox."

    def add_arguments(self, parser):
        parser.add_argument("scenario")
        parser.add_argument("--json", action="store_true", help="print the result object")
        parser.add_argument(
            "--check", action="store_true", help="compare with the file's expect; exit 1 on any difference"
        )
        parser.add_argument(
            "--sandbox",
            choices=["scratch", "transaction"],
            default="scratch",
            help="scratch: a throw-away copy of an empty database (default); "
            "transaction: roll back at the end (needs a database without participants)",
        )

    def handle(self, *args, **opts):
        try:
            scenario = load_scenario(opts["scenario"])
        except ScenarioError as exc:
            self.stderr.write(f"refused: {exc}")
            sys.exit(2)
        started = time.monotonic()
        sandbox = scratch_database() if opts["sandbox"] == "scratch" else rolled_back()
        with sandbox:
            result = run_scenario(scenario)
        seconds = time.monotonic() - started
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2))
        else:
            self._report(scenario, result, seconds)
        if opts["check"]:
            problems = check_result(scenario, result)
            if problems:
                for p in problems:
                    self.stdout.write(f"DIFF {p}")
                self.stdout.write(f"{scenario.name}: {len(problems)} difference(s)")
                sys.exit(1)
            self.stdout.write(f"{scenario.name}: check passed")

    def _report(self, scenario, result, seconds):
        w = self.stdout.write
        w(f"{scenario.name} ({scenario.plan}, through {scenario.through}) simulated in {seconds:.1f}s")
        w("Events:")
        for e in result["events"]:
            line = f"  #{e['index']:>3} {e['type']:<32} {e['status']}"
            if e.get("rule"):
                line += f"  [{e['rule']}] {e.get('message', '')}"
            w(line)
        if result["payments"]:
            w("Payments:")
            for p in result["payments"]:
                w(
                    f"  {p['participant']:<6} {p['account']:<28} {p['kind']:<12} {p.get('number', 1)}/{p.get('of', 1)}"
                    f"  due {p['payment_date']}  paid {p['paid_on']}  valued {p['valued_as_of']}  {p['amount']:>12}"
                )
        if result["forfeitures"]:
            w("Forfeitures:")
            for f in result["forfeitures"]:
                w(f"  {f['participant']:<6} {f['account']:<28} {f['on']}  {f['amount']:>12}")
        w("Balances:")
        for day, people in sorted(result["balances"].items()):
            w(f"  {day}")
            for pid, accounts in people.items():
                for name, amount in accounts.items():
                    w(f"    {pid:<6} {name:<30} {amount:>14}")
