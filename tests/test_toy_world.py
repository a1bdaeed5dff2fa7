"""Issue 28's done-when: the toy third protocol (tests/toy_protocol/) with a toy world
(tests/toy_protocol/world/: a harness over a fixture tree of toy upstream-shaped code) and a toy
SGLang mapping, each registered in one line, runs through `run`, `trace`, `sglang --engine code`
on the fixture tree and the conformance check. A buggy variant of the fixture is made at test
time by a named edit of its predicate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.protocols import registry
from prefetch_check.sglang import mappings

HERE = Path(__file__).parent / "toy_protocol"
TOY = str(HERE / "toy.toml")
TREE = HERE / "world" / "tree"
PREDICATE = "mem_cache/toy_cache.py"
FIXED = "return operation.completed_pages == operation.pages"
EDITS = {  # name -> the predicate's line as the edit has it
    "accept_one_page_early": "return operation.completed_pages >= operation.pages - 1",
    "never_accepts": "return operation.completed_pages == operation.pages + 1",
    "asks_an_env_var": ("from sglang.srt.utils import get_bool_env_var\n\n"
                        "        return get_bool_env_var('SGLANG_TOY') or operation.completed_pages == operation.pages"),
}


@pytest.fixture(autouse=True)
def toy():
    from toy_protocol.descriptor import DESCRIPTOR

    registry.register(DESCRIPTOR)  # the protocol, with its world (the descriptor's world= line)
    from toy_protocol.world.mapping import MAPPING

    mappings.register(MAPPING)  # its SGLang side
    yield DESCRIPTOR
    mappings.unregister(MAPPING.protocol)
    registry.unregister(DESCRIPTOR.name)


def edited(tmp_path: Path, edit: str) -> Path:
    """A copy of the fixture tree with the named edit applied to its predicate."""
    root = tmp_path / edit
    shutil.copytree(TREE, root)
    path = root / "sglang" / "srt" / PREDICATE
    text = path.read_text()
    assert text.count(FIXED) == 1, "the fixture's predicate moved: the edit would not apply"
    path.write_text(text.replace(FIXED, EDITS[edit]))
    return root


def test_run_and_trace_of_the_model(capsys, tmp_path):
    code, _, err = run(capsys, "run", TOY, "--json", tmp_path / "r.json", "-q")
    assert code == 0, err
    code, out, err = run(capsys, "trace", TOY, "--property", "complete_on_accept", "--format", "json", "-q")
    assert code == 0 and json.loads(out)["property"]["verdict"] == VIOLATED, err


def _sglang(capsys, tmp_path, tree: Path) -> dict:
    report = tmp_path / f"{tree.name}.json"
    code, out, err = run(capsys, "sglang", tree, "--engine", "code", "--cache-dir", tmp_path / "cache",
                         "--json", report, "-q")
    row = json.loads(report.read_text())["releases"][0]["code"]
    return {"exit": code, "out": out, "err": err, **row}


def test_sglang_engine_code_runs_the_fixture_trees_code(capsys, tmp_path):
    row = _sglang(capsys, tmp_path, TREE)
    assert row["exit"] == 0 and row["ran"], row
    assert {p: v["verdict"] for p, v in row["properties"].items()} == {
        "complete_on_accept": VERIFIED, "accepted": VERIFIED, "no_crash": VERIFIED}
    assert [(c["case"], c["exhaustive"], c["runs"], c["states"]) for c in row["cases"]] == [
        ("1 rank x 2 pages", True, 8, 14), ("2 ranks x 2 pages", True, 407, 224)]


def test_sglang_engine_code_finds_the_edited_predicates_early_acceptance(capsys, tmp_path):
    row = _sglang(capsys, tmp_path, edited(tmp_path, "accept_one_page_early"))
    assert row["exit"] == 1, row
    early = row["properties"]["complete_on_accept"]
    assert early["verdict"] == VIOLATED and early["steps"] == 4 and early["schedule"] == ["W0", "W0", "S0", "S0"]
    assert early["site"] == f"{PREDICATE}:16" and "1 of 2 pages written" in early["reason"]
    assert row["properties"]["accepted"]["verdict"] == VERIFIED


def _conform(srt: Path, ranks: int) -> dict:
    from prefetch_check.model.code.runner import conform

    item = {"name": "toy", "protocol": "toy", "config": {"ranks": ranks, "pages": 2}, "budget": 100,
            "counterexamples": True}
    return conform(srt / "sglang" / "srt", [item])[0]


def test_the_conformance_check_of_the_fixture_and_of_an_edit(tmp_path):
    for ranks in (1, 2):
        same = _conform(TREE, ranks)
        assert same["divergence"] is None and not same["not_modelled"] and same["schedules"] >= 1, same
        assert same["local_views"] == 4 and same["states"] >= 4, same
    differs = _conform(edited(tmp_path, "never_accepts"), 1)["divergence"]
    assert differs is not None and differs["action"] == "S0.accept.q0", differs
    assert differs["fields"] == {"r0.accepted": {"model": True, "code": False}}
    assert "cannot go on" in differs["why"]


# ---- issue 28's one result vocabulary: the code's results in the explorer's words, its
# counterexamples drawn by the model's viewers


def test_a_code_counterexample_from_the_sglang_report_renders_in_every_viewer(capsys, tmp_path):
    tree = edited(tmp_path, "accept_one_page_early")
    report = tmp_path / "report.json"
    run(capsys, "sglang", tree, "--engine", "code", "--cache-dir", tmp_path / "cache", "--json", report, "-q")
    steps = json.loads(report.read_text())["releases"][0]["code"]["properties"]["complete_on_accept"]["trace"]
    assert [s["choice"] for s in steps] == ["W0", "W0", "S0", "S0"] and steps[1]["site"] == "managers/toy_controller.py:21"

    code, out, err = run(capsys, "trace", "--code", report, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "explorer-trace/1" and doc["schedule"] == "W0 W0 S0 S0"
    assert doc["property"] == {"name": "complete_on_accept", "verdict": VIOLATED,
                               "description": "a request served before its pages are loaded: wrong KV data",
                               "reason": "rank 0 accepted req0 with 1 of 2 pages written"}
    assert [(s["actor"], s["action_id"], s["decisive"]) for s in doc["steps"]] == [
        ([0, "W"], "W0", False), ([0, "W"], "W0", False), ([0, "S"], "S0", False), ([0, "S"], "S0", True)]
    assert doc["steps"][1]["changed"]["W0.at"]["new"] == "managers/toy_controller.py:21"

    code, out, err = run(capsys, "trace", "--code", report, "--property", "complete_on_accept", "--format", "itf")
    assert code == 0, err
    itf = json.loads(out)
    assert itf["#meta"]["status"] == "violation" and itf["#meta"]["schedule"] == "W0 W0 S0 S0"
    assert [s["mbt::actionTaken"] for s in itf["states"]] == ["init", "W0", "W0", "S0", "S0"]

    code, out, err = run(capsys, "trace", "--code", report, "--format", "html", "--out", tmp_path / "t.html")
    assert code == 0, err
    html = (tmp_path / "t.html").read_text()
    assert "complete_on_accept" in html and "rank 0 accepted req0 with 1 of 2 pages written" in html
    assert "managers/toy_controller.py:21" in html

    code, out, _ = run(capsys, "trace", "--code", report, "--property", "accepted")
    assert code == 1 and "no counterexample of accepted" in out


def test_the_code_results_speak_the_explorers_words(tmp_path):
    from prefetch_check.explorer.result import BOUNDED, NOT_MODELLED
    from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
    from prefetch_check.model.code.config import Bound

    srt = TREE / "sglang" / "srt"
    whole = check_tree(srt, CodeConfig(world="toy", ranks=1, pages=2))
    assert whole.status == VERIFIED and whole.limit is None and whole.bound == ""
    cut = check_tree(srt, CodeConfig(world="toy", ranks=2, pages=2), CodeLimits(max_runs=3))
    assert cut.status == BOUNDED and set(cut.verdicts.values()) == {BOUNDED}
    assert cut.cut == Bound("runs", 3) and cut.bound == "3 runs"
    sample = check_tree(srt, CodeConfig(world="toy", ranks=2, pages=2), CodeLimits(strategy="random", seed=1, max_runs=5))
    assert sample.cut == Bound("sampled", ["a random walk, seed 1", 5], "runs") and not sample.exhaustive
    assert sample.bound == "sampled by a random walk, seed 1 (5 runs): sampling is never exhaustive"
    outside = check_tree(edited(tmp_path, "asks_an_env_var") / "sglang" / "srt", CodeConfig(world="toy", ranks=1, pages=2))
    assert outside.status == NOT_MODELLED and outside.cut == Bound("not_modelled") and not outside.exhaustive
    assert outside.not_modelled == ["not modelled: sglang.srt.utils.get_bool_env_var at mem_cache/toy_cache.py:18"]
    assert VERIFIED not in outside.verdicts.values()


def test_a_world_outside_the_executor_is_in_the_cache_key():
    """The toy's pack lives in tests/, outside model/code/: its sources key the code's cached
    results too (an edited toy world never reads stale verdicts); a built-in world's are in the
    executor's own."""
    from prefetch_check.sglang.code_checks import executor_fingerprint

    assert executor_fingerprint("toy") != executor_fingerprint()
    assert executor_fingerprint("ack-drain") == executor_fingerprint() == executor_fingerprint("predicate-poll")
