"""Sampling strategies (explorer/walk.py, random_walk.py, pct.py, simulate.py) on tiny hand-built
models whose probabilities are worked out by hand, and on the protocol's seed race."""

from __future__ import annotations

import pytest

from prefetch_check.explorer.minimize import first_failure as _first_failure
from prefetch_check.explorer.confidence import wilson
from prefetch_check.explorer.interface import always, always_step, deadlock_free, eventually
from prefetch_check.explorer.pct import PCT, pct_bound
from prefetch_check.explorer.random_walk import RandomWalk
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.scripted import ScheduleNotEnabled, Scripted
from prefetch_check.explorer.simulate import run_rng, simulate
from prefetch_check.explorer.walk import DEADLOCK, DEPTH, SETTLED, judged_properties, run_once
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.sampling import sampling_model


class Interleaving:
    """Actor A takes two steps (a1, a2), actor B one (b1). The state is (A's steps, A's steps
    when B stepped, or -1 before).

    `between` fails in (1, 1): B's step between A's two, a bug of depth 2 (a1 before b1, b1
    before a2). Under fixed priorities it never happens (A first: a1 a2 b1; B first: b1 a1
    a2), so PCT needs one priority change, at step 2, with A on top: probability 1/2 * 1/k
    for change points drawn from k steps, which is exactly PCT's bound 1/(n k^(d-1)) for
    n = 2, d = 2. The uniform random walk hits it with probability 1/2 * 1/2 = 1/4.
    """

    def __init__(self, announce_actors: bool = True):
        if announce_actors:
            self.actors = lambda: ["A", "B"]

    def initial_states(self):
        return [(0, -1)]

    def successors(self, state):
        a, b = state
        out = []
        if a < 2:
            out.append((f"a{a + 1}", (a + 1, b)))
        if b < 0:
            out.append(("b1", (a, a)))
        return out

    def properties(self):
        return [
            always("between", lambda s: "b1 ran between a1 and a2" if s[1] == 1 else None),
            eventually("finished", lambda s: None if s[0] == 2 and s[1] >= 0 else "not finished"),
        ]

    def actor(self, action):
        return action[0].upper()

    def action_id(self, action):
        return action

    def describe(self, state, action, next_state):
        return f"{action}: {state} -> {next_state}"


def hits(model, strategy, runs: int, seed: int = 11, depth: int = 3) -> int:
    props = judged_properties(model)
    return sum(bool(run_once(model, strategy, run_rng(seed, i), depth, props).failures) for i in range(runs))


@pytest.mark.parametrize("announce", [True, False], ids=["actors announced", "actors found on the way"])
def test_pct_finds_the_depth_2_bug_at_least_as_often_as_its_bound(announce):
    model = Interleaving(announce)
    runs = 3000
    found = hits(model, PCT(2), runs)
    bound = pct_bound(actors=2, steps=3, depth=2)
    assert bound == pytest.approx(1 / 6)
    low, high = wilson(found, runs, 0.999)
    assert found > 0
    assert high >= bound  # the hit rate is not below the bound (99.9% interval)
    assert low <= bound + 0.05  # and the bound is tight here: the rate is 1/6, not more


def test_pct_without_a_change_point_never_finds_the_depth_2_bug():
    """Depth 1: fixed priorities, one actor runs to the end first; B cannot get between a1 and a2."""
    assert hits(Interleaving(), PCT(1), 500) == 0


def test_the_random_walk_hits_the_depth_2_bug_a_quarter_of_the_time():
    runs = 3000
    found = hits(Interleaving(), RandomWalk(), runs)
    low, high = wilson(found, runs, 0.999)
    assert low <= 0.25 <= high
    assert found / runs >= pct_bound(2, 3, 2)


def test_the_change_point_drops_the_actor_about_to_step():
    """With A on top and the change point at step 2, the run is a1 b1 a2 whatever else."""
    model = Interleaving()
    seen = 0
    for i in range(200):
        strategy = PCT(2)
        run = run_once(model, strategy, run_rng(5, i), 3, [])
        ids = [a for a, _ in run.path]
        assert sorted(ids) == ["a1", "a2", "b1"]
        a_on_top = ids[0] == "a1"
        if strategy._changes == {2: 1} and a_on_top:
            seen += 1
            assert ids == ["a1", "b1", "a2"]
        else:
            assert ids != ["a1", "b1", "a2"], f"run {i}: B got between A's steps without a change at step 2"
    assert seen > 0


class Spinner:
    """Actor S spins (a step that changes nothing) until W has taken its one step; then it stops."""

    actors = staticmethod(lambda: ["S", "W"])

    def initial_states(self):
        return [0]

    def successors(self, state):
        if state == 0:
            return [("spin", 0), ("work", 1)]
        return []

    def properties(self):
        return []

    def actor(self, action):
        return "S" if action == "spin" else "W"

    def action_id(self, action):
        return action


def test_pct_lets_a_spinning_actor_yield():
    """A run that comes back to a state it has seen drops the looping actor below the others,
    so a spin loop on top priority does not starve the rest until the depth bound."""
    model = Spinner()
    for i in range(50):
        run = run_once(model, PCT(1), run_rng(1, i), 1000, [])
        assert run.end == DEADLOCK and run.steps <= 2


def test_runs_end_settled_deadlocked_or_at_the_depth_bound():
    model = Spinner()
    assert run_once(model, RandomWalk(), run_rng(1, 0), 0, []).end == DEPTH
    model.settled = lambda s: s == 0
    assert run_once(model, RandomWalk(), run_rng(1, 0), 10, []).end == SETTLED


def test_a_deadlock_is_judged():
    model = Spinner()
    prop = deadlock_free("deadlock_freedom")
    model.properties = lambda: [prop]
    run = run_once(model, Scripted(["spin", "work"]), run_rng(0, 0), 10, [prop])
    assert run.end == DEADLOCK
    assert run.failures["deadlock_freedom"].keep == 2


def test_a_step_invariant_is_judged_on_the_step_taken_only():
    model = Interleaving()
    b_late = always_step("b_first", lambda s, a, t: "b1 after a1" if a == "b1" and s[0] > 0 else None)
    run = run_once(model, Scripted(["b1", "a1", "a2"]), run_rng(0, 0), 3, [b_late])
    assert not run.failures
    run = run_once(model, Scripted(["a1", "b1", "a2"]), run_rng(0, 0), 3, [b_late])
    assert run.failures["b_first"].keep == 2


def test_scripted_says_where_a_schedule_is_not_enabled():
    with pytest.raises(ScheduleNotEnabled, match="step 3: 'a1' is not enabled"):
        run_once(Interleaving(), Scripted(["b1", "a1", "a1"]), run_rng(0, 0), 3, [])


def test_simulate_finds_shrinks_and_says_progress_is_not_judged():
    sim = simulate(Interleaving(), RandomWalk(), seed=3, schedules=100, depth=3)
    assert sim.judged == ("between",)
    assert "finished" in sim.not_judged
    v = sim.violations["between"]
    assert v.trace.schedule == "a1 b1"
    assert sim.stop_reason == "every judged property has a violation"
    assert sim.runs == v.run + 1


def test_the_same_seed_gives_the_same_runs_and_another_seed_other_runs():
    model = sampling_model(uniform_config(ranks=2, requests=1, pages=2), "fixed")

    def schedules(seed):
        props = judged_properties(model)
        return [
            " ".join(model.action_id(a) for a, _ in run_once(model, RandomWalk(), run_rng(seed, i), 500, props).path)
            for i in range(20)
        ]

    assert schedules(7) == schedules(7)
    assert schedules(7) != schedules(8)
    one = simulate(model, PCT(3), 7, 30, 500)
    two = simulate(model, PCT(3), 7, 30, 500)
    assert (one.runs, one.steps, one.longest, one.ends) == (two.runs, two.steps, two.longest, two.ends)


def test_a_sampled_seed_race_is_shrunk_to_a_replayable_schedule():
    """TP=4, buggy: the violations found are cut at their first failure, 1-minimal, and replay."""
    model = sampling_model(uniform_config(ranks=4, requests=1, pages=2), "buggy")
    sim = simulate(model, RandomWalk(), seed=1, schedules=200, depth=2000)
    assert set(sim.violations) == {"no_early_acceptance", "wait_complete_delivers"}
    props = {p.name: p for p in model.properties()}
    for name, v in sim.violations.items():
        assert len(v.trace) <= v.found_steps
        again = replay(model, v.trace.schedule)
        states = [again.initial] + [s.state for s in again.steps]
        fails = _first_failure(props[name], model)
        assert fails(states, [s.action for s in again.steps]) == len(again.steps)
    # the early acceptance needs every rank to issue and arrive in the drain collective, one
    # rank to leave it and check: nothing can be left out
    assert len(sim.violations["no_early_acceptance"].trace) == 4 + 4 + 1 + 1
