"""The scenarios shipped in scenarios/ (copies of ../shared/scenarios and our own) pass --check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from operations.simulation.runner import check_result, run_scenario
from operations.simulation.sandbox import rolled_back
from operations.simulation.scenario import ScenarioError, load_scenario, parse_scenario

SCENARIOS = Path(settings.BASE_DIR) / "scenarios"
# Every shipped sample: ours and the generated ones (copies of ../shared/scenarios), with the same check as --check.
OURS = sorted(
    str(p.relative_to(SCENARIOS))
    for p in [*SCENARIOS.glob("*.json"), *SCENARIOS.glob("generated/*.json"), *SCENARIOS.glob("tax/*.json")]
)


def run(path: Path) -> tuple[dict, list[str]]:
    scenario = load_scenario(path)
    with rolled_back():
        result = run_scenario(scenario)
    return result, check_result(scenario, result)


# The smallest sample in make check; every other whole replay (tens of seconds each) in the slow tier (make test).
FAST_SAMPLE = "edcp_lump_sum_after_separation.json"


def _marks(name: str) -> list:
    return [] if name == FAST_SAMPLE else [pytest.mark.slow]


@pytest.mark.django_db(transaction=False)
@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in OURS])
def test_our_scenarios_pass_check(name):
    result, problems = run(SCENARIOS / name)
    assert problems == []


def test_every_scenario_file_is_in_the_list():
    assert len(OURS) >= 15 and "generated/gen_42_003_edcp.json" in OURS
    assert {"tax/tax_edcp_company_contribution_vesting.json", "tax/tax_ours_brp_resolution.json"} <= set(OURS)


@pytest.mark.django_db
def test_a_malformed_scenario_is_refused_with_exit_2_naming_event_and_field(tmp_path, capsys):
    data = json.loads((SCENARIOS / "edcp_lump_sum_after_separation.json").read_text())
    data["events"][0]["percentages"]["base_salary"] = 10.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exit_:
        call_command("simulate", str(bad))
    assert exit_.value.code == 2
    assert "event 0 (deferral_election) field percentages.base_salary" in capsys.readouterr().err


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda d: d["events"].append({"on": "2026-01-01", "type": "bonus", "participant": "P1"}),
            "unknown event type",
        ),
        (
            lambda d: d["events"].append({"on": "2026-13-01", "type": "death", "participant": "P1"}),
            "field on",
        ),
        (
            lambda d: d["events"].append({"on": "2026-01-02", "type": "death", "participant": "NOBODY"}),
            "unknown participant",
        ),
        (lambda d: d["funds"]["SV"].update(default=False), "exactly one fund"),
    ],
)
def test_scenario_format_errors_name_the_problem(mutate, message):
    data = json.loads((SCENARIOS / "edcp_lump_sum_after_separation.json").read_text())
    mutate(data)
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(data)
