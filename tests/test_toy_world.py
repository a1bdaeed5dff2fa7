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
