"""What a row of `prefetch-check sglang` says per property: the findings under upstream's stated
assumptions apart from those only a scenario that drops one has (its `drops_assumption` key), every
violating case, and footnote commands that run from any folder."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from prefetch_check.cli import main
from sglang_fixtures import LATE_ONCE, tree

pytestmark = pytest.mark.usefixtures("fixture_trees_followed")

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def sglang(tmp_path: Path, capsys, tree_path: Path, *scenarios: str) -> tuple[int, dict]:
    argv = ["sglang", "--engine", "model", str(tree_path), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--json", "-"]
    for s in scenarios:
        argv += ["--scenarios", str(SCENARIOS / s)]
    status = main(argv)
    return status, json.loads(capsys.readouterr().out)


def table(tmp_path: Path, capsys, monkeypatch, tree_path: Path, *scenarios: str) -> str:
    monkeypatch.setenv("COLUMNS", "400")
    argv = ["sglang", "--engine", "model", str(tree_path), "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    for s in scenarios:
        argv += ["--scenarios", str(SCENARIOS / s)]
    main(argv)
    return capsys.readouterr().out


def test_a_finding_only_without_an_upstream_assumption_is_apart(tmp_path, capsys, monkeypatch):
    """late2025 holds under upstream's assumptions; allocation failing on one rank only
    (alloc-failure.toml, which drops that assumption) deadlocks it."""
    late = tree(tmp_path / "late", *LATE_ONCE)
    status, doc = sglang(tmp_path, capsys, late, "tp2.toml", "alloc-failure.toml")
    [row] = doc["releases"]
    progress = row["properties"]["progress"]["release"]
    assert status == 1 and progress["verdict"] == "VIOLATED"  # the exit status counts every finding
    assert progress["upstream_assumptions"]["verdict"] == "VERIFIED"
    assert progress["assumption_dropped"]["verdict"] == "VIOLATED"
    assert progress["assumption_dropped"]["case"] == "alloc-failure"
    [case] = progress["cases"]
    assert case["case"] == "alloc-failure" and "same outcome on every rank" in case["drops_assumption"]
    out = table(tmp_path, capsys, monkeypatch, late, "tp2.toml", "alloc-failure.toml")
    assert "the model, under upstream's assumptions" in out and "only without" in out
    [line] = [l for l in out.splitlines() if l.startswith("  progress ")]
    cells = re.split(r"\s{2,}", line.strip())  # property, under upstream's assumptions, only without one
    assert cells[1] == "VERIFIED" and cells[2].startswith("VIOLATED, ")


def test_every_violating_case_is_listed_and_its_command_runs_from_any_folder(tmp_path, capsys, monkeypatch):
    seed = tree(tmp_path / "seed", "seed")  # the seed race: its predicate has no page-list test
    status, doc = sglang(tmp_path, capsys, seed, "tp2.toml", "seed-race.toml")
    [row] = doc["releases"]
    early = row["properties"]["no_early_acceptance"]["release"]
    assert status == 1 and {c["case"] for c in early["cases"]} == {"tp2", "seed-race"}
    steps = [c["steps"] for c in early["cases"]]
    assert steps == sorted(steps) and early["steps"] == steps[0]
    assert all("drops_assumption" not in c for c in early["cases"])
    out = table(tmp_path, capsys, monkeypatch, seed, "tp2.toml", "seed-race.toml")
    assert "(+1 case)" in out
    other = early["cases"][1]
    assert f"also violated in {other['case']} ({other['steps']} steps)" in out
    # the command of the longer case, from a folder with no scenarios/ in it
    monkeypatch.chdir(tmp_path)
    command = shlex.split(other["command"])
    assert Path(command[2]).is_absolute()
    assert main(command[1:] + ["--quiet", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["steps"]) == other["steps"] and shown["property"]["name"] == "no_early_acceptance"


def test_a_scenario_that_drops_an_assumption_says_which(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('drops_assumption = 3\nranks = 1\n')
    assert main(["run", str(bad), "--quiet"]) == 2
    assert "drops_assumption must be a string" in capsys.readouterr().err


def test_each_violation_says_its_consequence_for_a_serving_system(tmp_path, capsys, monkeypatch):
    seed = tree(tmp_path / "seed", "seed")  # the seed race, and a page counted before it is written
    _, doc = sglang(tmp_path, capsys, seed, "tp2.toml", "alloc-failure.toml")
    props = doc["releases"][0]["properties"]
    said = {p: v["release"]["consequence"] for p, v in props.items() if v["release"]["verdict"] == "VIOLATED"}
    assert said["no_early_acceptance"].startswith("a prefetch lost (slower, output correct)")
    assert said["data_integrity"].startswith("wrong KV data served")
    assert said["tp_agreement"].startswith("request hangs: the ranks wait in different collectives")  # from its reason
    assert said["deadlock_freedom"].startswith("request hangs")
    assert all(c["consequence"] for v in props.values() for c in v["release"].get("cases", []))
    out = table(tmp_path, capsys, monkeypatch, seed, "tp2.toml", "alloc-failure.toml")
    assert f"    consequence: {said['data_integrity']}" in out.splitlines()


def test_a_tree_without_storage_prefetch_says_so_plainly(tmp_path, capsys):
    srt = tmp_path / "old" / "sglang" / "srt"
    (srt / "mem_cache").mkdir(parents=True)
    (srt / "managers").mkdir()
    (srt / "mem_cache" / "hiradix_cache.py").write_text(
        "class HiRadixCache:\n    def write_backup(self, node):\n        return 0\n")
    (srt / "managers" / "cache_controller.py").write_text(
        "class HiCacheController:\n    def load(self, host_indices):\n        return host_indices\n")
    status, doc = sglang(tmp_path, capsys, tmp_path / "old", "tp2.toml")
    [row] = doc["releases"]
    assert status == 3 and row["status"] == "not modelled"
    assert row["note"].startswith("this release has no storage prefetch") and "properties" not in row


def test_the_settings_a_case_runs_with_are_named_against_the_release_defaults():
    from prefetch_check.model.protocols.poll.config import uniform_config
    from prefetch_check.sglang.settings import default_policy, non_default_settings

    assert (default_policy("0.5.11"), default_policy("0.5.12"), default_policy("/a/path")) == ("best_effort", "timeout", None)
    wait = uniform_config(ranks=1, pages=2)
    assert wait.policy == "wait_complete" and "policy=wait_complete" in non_default_settings(wait, "0.5.16")[0]
    timeout = uniform_config(ranks=1, pages=2, policy="timeout")
    assert non_default_settings(timeout, "0.5.16") == ()  # the default since 0.5.12
    assert non_default_settings(timeout, "0.5.6") == ("policy=timeout (this release's default: best_effort)",)
    assert non_default_settings(timeout, None) == ()  # a tree whose release is unknown: only what is never a default
    zero = uniform_config(ranks=1, pages=2, policy="timeout", prefetch_threshold=0, clamp_threshold=False, hits=0)
    assert [s.split(" ")[0] for s in non_default_settings(zero, "0.5.18")] == ["prefetch_threshold=0"]


def test_0_5_16_hangs_at_threshold_0_when_the_host_is_full_and_the_row_names_its_settings(tmp_path, capsys, monkeypatch):
    """Issue 21, item 7: the clamp of 0.5.16-0.5.17 guards only the prefetch thread; the drain's
    memory-pressure fallback compares the raw threshold, so threshold 0 and no free host page
    publish an empty page list and the fixed predicate waits forever, under upstream's assumptions."""
    from prefetch_check.sglang.cache import cache_root
    from prefetch_check.sglang.errors import SglangSourceError
    from prefetch_check.sglang.fetch import fetch_release

    try:
        fetch_release("0.5.16", cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable and 0.5.16 not cached: {exc}")
    argv = ["sglang", "0.5.16", "--engine", "model", "--quiet", "--json", "-",
            "--scenarios", str(SCENARIOS / "release-staged-threshold-zero-full-host.toml"),
            "--scenarios", str(SCENARIOS / "release-staged-timeout.toml")]
    assert main(argv) == 1
    [row] = json.loads(capsys.readouterr().out)["releases"]
    progress = row["properties"]["progress"]["release"]
    assert progress["upstream_assumptions"]["verdict"] == "VIOLATED"
    assert progress["steps"] == 11 and progress["case"] == "release-staged-threshold-zero-full-host[ranks=1]"
    settings = progress["non_default_settings"]
    assert any(s.startswith("prefetch_threshold=0") for s in settings) and any(s.startswith("policy=wait_complete") for s in settings)
    assert "non_default_settings" not in row["properties"]["no_early_acceptance"]["release"]  # VERIFIED: no finding to label


def test_a_finding_under_the_release_defaults_is_shown_before_one_with_other_settings(tmp_path, capsys, monkeypatch):
    """The seed predicate accepts early under wait_complete (seed-race) and under timeout
    (timeout); wait_complete is never SGLang's default, so the timeout case is the
    one the cell shows, and the other is listed with the settings it runs with."""
    seed = tree(tmp_path / "seed", "seed")
    status, doc = sglang(tmp_path, capsys, seed, "seed-race.toml", "timeout.toml")
    early = doc["releases"][0]["properties"]["no_early_acceptance"]["release"]
    assert status == 1 and early["case"].startswith("timeout") and "non_default_settings" not in early
    [other] = [c for c in early["cases"] if not c["case"].startswith("timeout")]
    assert other["case"].startswith("seed-race") and other["non_default_settings"][0].startswith("policy=wait_complete")
    out = table(tmp_path, capsys, monkeypatch, seed, "seed-race.toml")
    assert "(non-default settings)" in out and "its case runs with settings that are not the release's defaults: policy=wait_complete" in out
