"""The conformance check of `prefetch-check sglang` runs its configurations CHUNK to an executor
child (conformance_checks.run_conformance): one child for all of them ran past the executor's wall limit
under the coverage tracer, and every ack-drain release's check came back "could not run". The
answers come back in the planned order, the children's coverage as one answer, and a child that
fails fails the check (nothing cached)."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.model.code import ExecutorError
from prefetch_check.model.code.rt.tracer import merged
from prefetch_check.sglang import conformance_checks
from prefetch_check.sglang.conformance_checks import ConformanceCheck, run_conformance


def _cov(lines: dict, counted: dict, runs: int) -> dict:
    return {"runs": runs, "contexts": bool(counted), "lines": lines,
            "counted": {rel: [{"span": list(s), "runs": n, "load": load} for s, n, load in spans]
                        for rel, spans in counted.items()}}


def test_children_coverage_merges_lines_and_adds_runs_per_span():
    a = _cov({"x.py": [1, 2]}, {"x.py": [((1, 2), 3, False)]}, 3)
    b = _cov({"x.py": [2, 5], "y.py": [7]}, {"x.py": [((1, 2), 4, True), ((5, 5), 1, False)]}, 4)
    out = merged([a, None, b])
    assert out["lines"] == {"x.py": [1, 2, 5], "y.py": [7]}
    assert out["counted"] == {"x.py": [{"span": [1, 2], "runs": 7, "load": True}, {"span": [5, 5], "runs": 1, "load": False}]}
    assert out["runs"] == 7 and out["contexts"] is True
    assert merged([None, {}]) is None


def _check(names: list[str]) -> ConformanceCheck:
    return ConformanceCheck("k-" + "-".join(names), [{"name": n} for n in names], [], protocol="ack-drain")


def test_the_configurations_run_a_chunk_to_a_child_and_the_answers_keep_their_order(monkeypatch, tmp_path):
    calls = []

    def child(srt, items, limits, coverage):
        calls.append([i["name"] for i in items])
        return ([{"name": i["name"], "divergence": None} for i in items],
                _cov({"f.py": [len(i["name"]) for i in items]}, {}, len(items)))

    monkeypatch.setattr(conformance_checks, "conform_traced", child)
    monkeypatch.setattr(conformance_checks, "CHUNK", 2)
    one, two = _check(["a", "bb", "ccc"]), _check(["dddd"])
    assert run_conformance([(Path("t1"), one), (Path("t2"), two)], tmp_path, 2) == (0, 2)
    assert sorted(calls) == [["a", "ccc"], ["bb"], ["dddd"]]  # dealt round-robin over ceil(3 / 2) children
    assert one.coverage["runs"] == 3
    assert [a["name"] for a in one.answers] == ["a", "bb", "ccc"] and one.coverage["lines"] == {"f.py": [1, 2, 3]}
    assert [a["name"] for a in two.answers] == ["dddd"] and not one.error
    again = _check(["a", "bb", "ccc"])
    assert run_conformance([(Path("t1"), again)], tmp_path, 2) == (1, 0) and again.answers == one.answers


def test_a_child_that_fails_fails_its_check_and_nothing_is_cached(monkeypatch, tmp_path):
    def child(srt, items, limits, coverage):
        if items[0]["name"] == "slow":
            raise ExecutorError("the executor's child ran past 330 s and was killed")
        return [{"name": items[0]["name"]}], None

    monkeypatch.setattr(conformance_checks, "conform_traced", child)
    monkeypatch.setattr(conformance_checks, "CHUNK", 1)
    check = _check(["fast", "slow"])
    run_conformance([(Path("t"), check)], tmp_path, 1)
    assert check.error == "the conformance check could not run: the executor's child ran past 330 s and was killed"
    assert run_conformance([(Path("t"), _check(["fast", "slow"]))], tmp_path, 1) == (0, 1)
