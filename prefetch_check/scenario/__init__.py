"""Scenario files: TOML that names protocol parameters and the verdicts its author expects."""

from prefetch_check.scenario.errors import InputError, ScenarioError
from prefetch_check.scenario.loader import Case, Scenario, load_scenario, load_scenarios, one_case, scenario_files

__all__ = ["Case", "InputError", "Scenario", "ScenarioError", "load_scenario", "load_scenarios", "one_case", "scenario_files"]
