"""One search over several processes (explorer/parallel.py): the same counts and verdicts as the
search in one process, and the same ids, parents and counterexamples for any number of workers
from 2 on (ids follow the level and a stable key, never which worker found a state first)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from models import compiled
from prefetch_check import check
from prefetch_check.explorer.bfs import explore
from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.graph import GraphRecorder
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.options import SearchOptions
from prefetch_check.explorer.parallel import PackedStates, can_run_parallel
from prefetch_check.explorer.result import BOUNDED, VIOLATED
from prefetch_check.model.protocols.poll.config import uniform_config
from strategies import SETTINGS, configs

CASES = [
    (uniform_config(ranks=2, requests=2, pages=1), "buggy"),
    (uniform_config(ranks=2, pages=2, failing={1: {1}}), "buggy"),
    (uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), policy="timeout"), "fixed"),  # progress VIOLATED
]
LARGER = (uniform_config(ranks=3, requests=2, pages=1, policy="timeout"), "fixed")  # reduced search only


def summary(result) -> dict:
    s = result.stats
    return {
        "states": s.states, "transitions": s.transitions, "actions": s.action_counts, "complete": s.complete,
        "verdicts": {n: (p.verdict, p.reason) for n, p in result.results.items()},
    }


def verdicts_only(summary: dict) -> dict:
    return {**summary, "verdicts": {n: v for n, (v, _) in summary["verdicts"].items()}}


def schedules(result) -> dict:
    return {n: p.trace.schedule for n, p in result.results.items() if p.trace is not None}


@pytest.mark.parametrize("config, predicate, reductions",
                         [(c, p, r) for c, p in CASES for r in (True, "symmetry", False)] + [(*LARGER, True)])
def test_two_and_three_workers_agree_with_one_process_and_with_each_other(config, predicate, reductions):
    one = check(config, predicate, reductions=reductions)
    two = check(config, predicate, reductions=reductions, workers=2)
    three = check(config, predicate, reductions=reductions, workers=3)
    # one process keeps its own order: the same verdicts, but where several shortest
    # counterexamples exist it may pick another (a reason naming request 1 instead of 0)
    assert verdicts_only(summary(two)) == verdicts_only(summary(one))
    assert summary(three) == summary(two)
    assert schedules(three) == schedules(two)
    for name, p in one.results.items():  # counterexamples as short as the one process finds
        if p.trace is not None and p.trace.cycle_start is None and reductions is not True:
            assert len(two.results[name].trace) == len(p.trace), name


def test_a_progress_violation_is_found_on_the_gathered_graph():
    config, predicate = CASES[2]
    two = check(config, predicate, workers=2)
    assert two.verdict("progress") == VIOLATED and two.trace("progress") is not None


def explored(config, predicate, workers, **options):
    model = compiled(config, predicate)
    return explore(model, SearchOptions(canonical=model.canonicalizer(), workers=workers, **options), GraphRecorder(1))


def test_ids_parents_and_edges_do_not_depend_on_the_number_of_workers():
    config = uniform_config(ranks=2, requests=2, pages=2)
    two, three = explored(config, "buggy", 2), explored(config, "buggy", 3)
    assert isinstance(two.states, PackedStates)
    model = two.model
    decode = model.decode
    assert [decode(s) for s in two.states] == [three.model.decode(s) for s in three.states]
    assert list(two.parent) == list(three.parent) and list(two.depth) == list(three.depth)
    assert [list(two.edges[i]) for i in range(len(two.states))] == [list(three.edges[i]) for i in range(len(three.states))]
    assert two.deadlocks == three.deadlocks
    assert {n: (f.state_id, f.reason) for n, f in two.findings.items()} == {
        n: (f.state_id, f.reason) for n, f in three.findings.items()}
    one = explored(config, "buggy", 1)
    assert sorted(map(model.decode, two.states)) == sorted(map(one.model.decode, one.states))


def test_a_state_limit_keeps_the_first_states_in_id_order():
    config = uniform_config(ranks=3, requests=2, pages=2)
    limits = Limits(max_states=700)
    two, three = explored(config, "fixed", 2, limits=limits), explored(config, "fixed", 3, limits=limits)
    assert len(two.states) == len(three.states) == 700
    assert not two.complete and "state limit" in two.stop_reason
    assert [two.model.decode(s) for s in two.states] == [three.model.decode(s) for s in three.states]
    result = check(config, "fixed", limits, reductions="symmetry", workers=2)
    assert result.stats.states == 700 and all(p.verdict == BOUNDED for p in result.results.values())


def test_a_depth_limit_is_bounded_like_in_one_process():
    config = uniform_config(ranks=2, requests=2, pages=2)
    limits = Limits(max_depth=10)
    one, two = explored(config, "fixed", 1, limits=limits), explored(config, "fixed", 2, limits=limits)
    assert (one.visited, one.complete) == (two.visited, two.complete) == (one.visited, False)
    assert "depth limit" in two.stop_reason


def test_a_model_without_a_state_codec_searches_in_one_process():
    model = compiled(uniform_config(ranks=2, pages=1), "fixed")

    class NoCodec:
        def __getattr__(self, name):
            if name == "state_codec":
                raise AttributeError(name)
            return getattr(model, name)

    assert can_run_parallel(model) and not can_run_parallel(NoCodec())
    result = check_model(NoCodec(), SearchOptions(canonical=model.canonicalizer(), workers=2))
    assert result.stats.stored_states is None and result.all_verified


@settings(max_examples=25, **SETTINGS)
@given(configs(max_ranks=3))
def test_random_configurations_give_the_same_counts_and_verdicts_on_two_workers(config):
    for predicate in ("buggy", "fixed"):
        limits = Limits(max_states=20_000)
        one = check(config, predicate, limits)
        if not one.stats.complete:
            continue
        assert summary(check(config, predicate, limits, workers=2)) == summary(one)


def test_the_command_line_runs_one_search_on_several_workers_and_refuses_it_with_jobs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    scenario = str(Path(__file__).parent.parent / "scenarios" / "two-requests.toml")
    run = [sys.executable, "-m", "prefetch_check", "run", scenario, "-q", "--json", "-"]
    one = subprocess.run(run, capture_output=True, text=True)
    two = subprocess.run(run + ["--workers", "2"], capture_output=True, text=True)
    assert one.returncode == two.returncode == 0, two.stderr
    import json

    def counts(out):
        return [(r["predicate"], r["stats"]["states"], r["stats"]["transitions"],
                 [(p["name"], p["verdict"]) for p in r["properties"]]) for r in json.loads(out)["runs"]]

    assert counts(one.stdout) == counts(two.stdout)
    both = subprocess.run(run + ["--workers", "2", "--jobs", "2"], capture_output=True, text=True)
    assert both.returncode == 2 and "--workers" in both.stderr and "Traceback" not in both.stderr
    negative = subprocess.run(run + ["--workers", "-1"], capture_output=True, text=True)
    assert negative.returncode == 2 and "--workers" in negative.stderr


def test_more_workers_than_the_packing_allows_run_on_the_most_it_allows(monkeypatch):
    import prefetch_check.explorer.bfs as bfs
    from prefetch_check.explorer.parallel import MAX_WORKERS

    asked = []
    monkeypatch.setattr(bfs, "explore_parallel", lambda model, options, graph, workers: asked.append(workers))
    model = compiled(uniform_config(ranks=2, pages=1), "fixed")
    explore(model, SearchOptions(canonical=model.canonicalizer(), workers=MAX_WORKERS + 50))
    assert asked == [MAX_WORKERS] == [127]
