"""Traces read like the upstream code: every step of a counterexample is described in protocol words."""

from __future__ import annotations

from prefetch_check.explorer.bfs import explore
from prefetch_check.explorer.replay import replay
from models import ACTION_KINDS
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.model.protocols.poll.releases import options
from models import readable


def described(model, schedule):
    return [s.description for s in replay(model, schedule).steps]


def test_the_race_reads_like_the_upstream_code():
    model = readable(uniform_config(pages=2), "buggy")
    lines = described(model, "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0 S0.terminate.q0 S0.insert.q0")
    assert "allocate 2 host slots" in lines[0] and "prefetch_queue" in lines[0]
    assert "all_reduce(MIN)" in lines[1]
    assert "completed_tokens=0, len(hash_value)=0 -> 0 == 0 -> accept" in lines[3]
    assert "mark_terminate" in lines[4]
    assert "min_completed=0" in lines[5] and "hash_value[:0]" in lines[5]


def test_the_fixed_check_shows_its_guard():
    model = readable(uniform_config(pages=2), "fixed")
    (line,) = described(model, "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0")[3:]
    assert "0 > 0 and 0 == 0 -> wait" in line


def test_the_round_collectives_say_which_check_makes_them():
    model = readable(uniform_config(ranks=2, pages=1, round_collectives=2), "fixed")
    lines = described(model, "S0.issue.q0 S1.issue.q0 S0.round_arrive S1.round_arrive S0.round_leave")
    assert "writing_check" in lines[2] and "all_reduce(MIN)" in lines[2] and "waits for the other ranks" in lines[2]
    assert "last to arrive" in lines[3] and "nothing to pop" in lines[4]


def test_the_whole_batch_count_says_how_many_pages_it_counts():
    model = readable(uniform_config(pages=2, count_before_write=True, count_whole_batch=True), "fixed")
    lines = described(model, "S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.increment.q0 I0.write.q0")
    assert "increment(page_size * 2)" in lines[4] and "completed_tokens 0 -> 2" in lines[4]
    assert "write page 0" in lines[5] and "counted already" in lines[5]


def test_every_action_kind_has_its_own_description():
    """No step falls back to its bare action id."""
    configs = [
        uniform_config(ranks=2, pages=2, alloc_may_fail=(True, False), failing={1: {1}}),
        uniform_config(pages=2, hits=0, policy="timeout"),
        uniform_config(pages=1, prefetch_threshold=2),
        uniform_config(pages=1, policy="best_effort"),
        uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), **options("seed")),
        uniform_config(pages=2, **options("staged")),
        uniform_config(ranks=2, pages=1, round_collectives=2),
    ]
    seen = set()
    for predicate in ("buggy", "fixed"):
        for config in configs:
            model = readable(config, predicate)
            for state in explore(model).states:
                for action, nxt in model.successors(state):
                    text = model.describe(state, action, nxt)
                    assert text and text != action.id, action.id
                    seen.add(action.kind)
    assert seen == set(ACTION_KINDS)
