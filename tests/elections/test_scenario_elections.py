"""The shipped scenarios' election statuses and rules hold (their "expect.events"); their payments and
balances belong to the payments and books tests and are not compared here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from operations.simulation.runner import run_scenario
from operations.simulation.sandbox import rolled_back
from operations.simulation.scenario import load_scenario

SCENARIOS = Path(settings.BASE_DIR) / "scenarios"
ELECTION_EVENTS = {"deferral_election", "distribution_election", "investment_election", "schedule_change"}
FILES = ["edcp_lump_sum_after_separation.json"] + sorted(
    p.name for p in (SCENARIOS / "generated").glob("*.json")
)


def _path(name: str) -> Path:
    return SCENARIOS / name if (SCENARIOS / name).exists() else SCENARIOS / "generated" / name


def _event_problems(scenario, result) -> list[str]:
    got = {e["index"]: e for e in result["events"]}
    problems = []
    for want in scenario.expect.get("events", []):
        have = got.get(want["index"])
        if (
            have is None
            or have["status"] != want["status"]
            or ("rule" in want and have.get("rule") != want["rule"])
        ):
            problems.append(f"event {want['index']}: expected {want}, got {have}")
    return problems


@pytest.mark.django_db
# The first file in make check; every generated file (a replay of years, tens of seconds) in the slow tier.
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n == FILES[0] else pytest.mark.slow) for n in FILES]
)
def test_the_scenarios_election_statuses_and_rules_hold(name):
    scenario = load_scenario(_path(name))
    assert scenario.expect.get("events"), f"{name} expects no event statuses"
    assert {e.type for e in scenario.events} & ELECTION_EVENTS
    # An election's status depends only on what happened before it: stop the replay after the last one
    # expected (the years of crediting and payments after it are the other suites' business).
    expected = {e["index"] for e in scenario.expect["events"]}
    scenario.through = max(e.on for e in scenario.events if e.index in expected)
    scenario.checkpoints = []
    with rolled_back():
        result = run_scenario(scenario)
    assert _event_problems(scenario, result) == []


@pytest.mark.django_db
def test_the_sample_reports_its_refusals_with_their_sections_on_the_command_line(capsys):
    call_command(
        "simulate",
        str(SCENARIOS / "edcp_lump_sum_after_separation.json"),
        "--json",
        "--sandbox",
        "transaction",
    )
    events = {e["index"]: e for e in json.loads(capsys.readouterr().out)["events"]}
    assert events[0]["status"] == "accepted"
    assert (events[3]["status"], events[3]["rule"]) == ("rejected", "EDCP 3.2(b)")
    assert (events[4]["status"], events[4]["rule"]) == ("rejected", "EDCP 1.12")
