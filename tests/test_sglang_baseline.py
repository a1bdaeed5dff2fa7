"""`prefetch-check sglang --baseline SPEC|REPORT.json`: a CI gate for a fork of SGLang fails on what a
change brings, not on what the release it branched from already had."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from prefetch_check.cli import build_parser, main
from conftest import also_follow
from sglang_fixtures import LATE_ONCE, git, new_repo, tree

pytestmark = pytest.mark.usefixtures("fixture_trees_followed")

SCENARIOS = Path(__file__).parents[1] / "scenarios"
# tp2 holds under the release's predicate; alloc-failure (allocation failing on one rank) makes
# tp_agreement, progress and deadlock_freedom fail in the release itself
BASE_SCENARIOS = [str(SCENARIOS / "tp2.toml"), str(SCENARIOS / "alloc-failure.toml")]
GUARD = "len(operation.hash_value) > 0 and "
UPSTREAM_FAILS = {"tp_agreement", "progress", "deadlock_freedom"}


@pytest.fixture(autouse=True)
def wide_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # cells unfolded, so the marks read whole


def sglang(tmp_path: Path, capsys, *args: str) -> tuple[int, dict, str]:
    """The command with a JSON report in a file; (exit status, report, table)."""
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*.json')))}.json"
    argv = ["sglang", "--engine", "model", *args, "--cache-dir", str(tmp_path / "cache"), "--quiet", "--json", str(report)]
    for s in BASE_SCENARIOS:
        argv += ["--scenarios", s]
    status = main(argv)
    return status, json.loads(report.read_text()), capsys.readouterr().out


def marks(row: dict) -> dict:
    return {p: v.get("against_baseline") for p, v in row["properties"].items()}


def drop_guard(srt: Path) -> None:
    path = srt / "mem_cache" / "hiradix_cache.py"
    text = path.read_text()
    assert GUARD in text
    path.write_text(text.replace(GUARD, ""))


def test_the_release_itself_fails_without_a_baseline_and_passes_against_itself(tmp_path, capsys):
    release = tree(tmp_path / "release", *LATE_ONCE)
    status, doc, _ = sglang(tmp_path, capsys, str(release))
    [row] = doc["releases"]
    failing = {p for p, v in row["properties"].items() if v["release"]["verdict"] == "VIOLATED"}
    assert status == 1 and failing == UPSTREAM_FAILS
    status, doc, out = sglang(tmp_path, capsys, str(release), "--baseline", str(release))
    [row] = doc["releases"]
    assert status == 0 and doc["exit_status"] == 0
    assert {p for p, m in marks(row).items() if m == "also in the baseline"} == UPSTREAM_FAILS
    assert doc["baseline"]["verdicts"]["progress"] == "VIOLATED"
    assert "(also in the baseline)" in out and "baseline: " in out


def test_a_new_violation_fails_and_a_fixed_one_is_said(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    release = tree(tmp_path / "release", *LATE_ONCE)
    edited = tree(tmp_path / "edited", *LATE_ONCE)
    drop_guard(edited / "sglang" / "srt")
    also_follow(monkeypatch, fixture_trees_followed, "edited", edited / "sglang" / "srt")
    status, doc, out = sglang(tmp_path, capsys, str(edited), "--baseline", str(release))
    [row] = doc["releases"]
    assert status == 1
    assert marks(row)["no_early_acceptance"] == "new" and marks(row)["progress"] == "also in the baseline"
    assert "(new)" in out
    # the other way round: the guard is back, the early acceptance is fixed since the baseline
    status, doc, out = sglang(tmp_path, capsys, str(release), "--baseline", str(edited))
    [row] = doc["releases"]
    assert status == 0 and marks(row)["no_early_acceptance"] == "fixed since the baseline"
    assert "VERIFIED (fixed since the baseline)" in out


def test_an_earlier_json_report_is_a_baseline(tmp_path, capsys):
    release = tree(tmp_path / "release", *LATE_ONCE)
    _, _, _ = sglang(tmp_path, capsys, str(release))
    earlier = tmp_path / "report-0.json"
    status, doc, _ = sglang(tmp_path, capsys, str(release), "--baseline", str(earlier))
    assert status == 0 and marks(doc["releases"][0])["tp_agreement"] == "also in the baseline"
    assert str(earlier) in doc["baseline"]["label"]


@pytest.mark.parametrize("content, words", [
    ("{}", "not a report of"),
    ("not json", "not a readable JSON report"),
    ('{"tool": "prefetch-check sglang", "releases": []}', "exactly one checked tree"),
])
def test_a_bad_baseline_report_is_exit_2(tmp_path, capsys, content, words):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["sglang", "--engine", "model", str(tree(tmp_path / "t", *LATE_ONCE)), "--cache-dir", str(tmp_path / "c"),
                 "--baseline", str(bad), "--quiet"]) == 2
    assert words in capsys.readouterr().err


def test_a_baseline_without_verdicts_is_exit_2(tmp_path, capsys):
    unjudged = tree(tmp_path / "unjudged", *LATE_ONCE)
    drop_guard(unjudged / "sglang" / "srt")  # not followed: refused by the honest floor
    assert main(["sglang", "--engine", "model", str(tree(tmp_path / "t", *LATE_ONCE)), "--cache-dir", str(tmp_path / "c"),
                 "--baseline", str(unjudged), "--quiet", "--scenarios", BASE_SCENARIOS[0]]) == 2
    assert "got no verdicts (not modelled" in capsys.readouterr().err


def test_a_ci_job_on_a_fork_goes_0_0_1(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    """The done-when of issue 21: a fork branched from a release (a followed fixture tree), a harmless
    commit, then a regressing one the model can judge; the job at each commit, with the release as
    baseline, exits 0, 0, 1."""
    release = tree(tmp_path / "release", *LATE_ONCE)
    fork = new_repo(tmp_path / "fork")
    srt = tree(fork / "python", *LATE_ONCE) / "sglang" / "srt"
    controller = srt / "managers" / "cache_controller.py"

    def commit(message: str) -> str:
        git(fork, "add", "-A")
        git(fork, "commit", "-qm", message)
        return git(fork, "rev-parse", "HEAD")

    def job() -> int:
        return sglang(tmp_path, capsys, str(fork), "--baseline", str(release))[0]

    commit("the release the fork branched from")
    statuses = [job()]
    controller.write_text("# our fork\n" + controller.read_text())
    commit("a comment")
    statuses.append(job())
    drop_guard(srt)
    also_follow(monkeypatch, fixture_trees_followed, "regressing", srt)
    commit("drop the page-list test from the predicate")
    statuses.append(job())
    assert statuses == [0, 0, 1]


def fork_workflow_example() -> str:
    """The GitHub workflow of docs/sglang.md's "A CI gate on a fork"."""
    text = (Path(__file__).parents[1] / "docs" / "sglang.md").read_text(encoding="utf-8")
    section = text.split("## A CI gate on a fork", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_fork_workflow_example_is_valid_and_uses_real_options(tmp_path):
    workflow = tmp_path / "prefetch-check.yml"
    workflow.write_text(fork_workflow_example())
    if importlib.util.find_spec("check_jsonschema") is not None:
        done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                               "vendor.github-workflows", str(workflow)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml (with the check-jsonschema test extra) is not installed")
    doc = yaml.YAML(typ="safe").load(workflow.read_text())
    [job] = doc["jobs"].values()
    commands = [s["run"] for s in job["steps"] if s.get("run", "").startswith("prefetch-check sglang")]
    assert len(commands) == 2
    parsed = [build_parser().parse_args(shlex.split(c.replace("${{ github.base_ref }}", "main"))[1:]) for c in commands]
    assert parsed[0].baseline == "$UPSTREAM_RELEASE" and parsed[1].commits
