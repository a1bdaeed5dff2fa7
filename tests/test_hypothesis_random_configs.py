"""Random small configurations (Hypothesis, derandomized so every run tests the same examples).

(a) `fixed` never violates the safety properties it must keep (see SAFE_FOR_FIXED), and
    `buggy` is always caught when the policy waits;
(b) the search does not depend on the order in which the model enumerates actions;
(c) a random walk never reaches a state the exhaustive search did not find.
"""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions

import random
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from prefetch_check.explorer.bfs import explore
from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.engine.compiled import CompiledModel
from models import compiled, readable
from prefetch_check.model.protocols.poll.config import Config
from strategies import SETTINGS, configs
from prefetch_check import check



# ---- (a) what fixed must never violate ----


def safe_for_fixed(config: Config) -> set[str]:
    """The safety properties `fixed` must keep in this configuration, and why.

    - no_early_acceptance: fixed needs `len(hash_value) > 0` to call an operation complete,
      and the property excuses a timed-out operation: it can never accept an empty list.
    - wait_complete_delivers: fixed accepts only when every rank counted every agreed page,
      or when some rank is terminated; without the scheduler's own terminate that takes a
      failed load (excused) or a timeout (excused).
    - host_memory, data_integrity: each range of slots has exactly one path back (publish
      [hits, L), IO [completed, hits), insert [0, min) to the tree and [min, completed)),
      and only counted pages, which were written first, reach the tree; true for any predicate.
    - tp_agreement and deadlock_freedom: every rank issues every request, so the ranks run
      the same collectives in the same order. NOT when host allocation may fail on some rank
      of several: one rank skips the request and the schedulers meet in different collectives,
      whatever the predicate.
    - progress is not a safety property: fixed hangs when an empty page list is published
      (unclamped threshold 0 and no hits), in the seed shape when a page fails to load, and
      when allocation fails on one rank of several (see `why_fixed_hangs`).
    """
    safe = {"no_early_acceptance", "wait_complete_delivers", "host_memory", "data_integrity"}
    if config.ranks == 1 or not any(config.alloc_may_fail):
        safe |= {"tp_agreement", "deadlock_freedom"}
    return safe


@settings(max_examples=40, **SETTINGS)
@given(configs())
def test_fixed_never_violates_a_safety_property_it_must_keep(config):
    result = check(config, "fixed", Limits(max_states=3000))
    broken = safe_for_fixed(config) & set(result.violated)
    assert not broken, {n: (result.results[n].reason, result.trace(n).schedule) for n in broken}


@settings(max_examples=30, **SETTINGS)
@given(configs())
def test_buggy_is_caught_whenever_the_policy_waits(config):
    """The scheduler can always check before the prefetch thread publishes (even with allocation
    failure on a rank, allocation may succeed; the clock may fire late)."""
    waits = config.policy != "best_effort"
    issued = any(config.is_issued_by_threshold(q) for q in range(config.num_requests))
    result = check(config, "buggy", Limits(max_depth=24))  # the reduced search takes solo steps first: deeper than 6
    assert (result.verdict("no_early_acceptance") == VIOLATED) == (waits and issued)


@settings(max_examples=30, **SETTINGS)
@given(configs())
def test_no_predicate_breaks_host_memory_or_data_integrity(config):
    result = check(config, "buggy", Limits(max_states=3000))
    assert not {"host_memory", "data_integrity"} & set(result.violated)


def why_fixed_hangs(config: Config) -> set[str]:
    """The only reasons a request stays unresolved forever under `fixed` (progress is not safety,
    but the checker should find exactly these and nothing else)."""
    waits_forever = config.policy == "wait_complete" or (config.policy == "timeout" and not config.timeout_clock)
    issued = [q for q in range(config.num_requests) if config.is_issued_by_threshold(q)]
    why = set()
    if config.ranks > 1 and any(config.alloc_may_fail) and issued:
        why.add("allocation fails on one rank only: the schedulers deadlock in different collectives")
    for q in issued:
        if config.is_revoked(q) or not waits_forever:
            continue
        agreed = config.agreed_hit_pages(q)
        if agreed == 0:
            why.add("an empty page list is published (unclamped threshold 0): never complete")
        if config.shape == "seed" and any(p < agreed for pages in config.requests[q].failing for p in pages):
            why.add("seed shape: a failed page is never counted and nobody marks the operation terminated")
    return why


@settings(max_examples=40, **SETTINGS)
@given(configs())
def test_fixed_hangs_exactly_for_the_known_reasons(config):
    result = check(config, "fixed", Limits(max_states=3000))
    if not result.stats.complete:
        return  # progress is judged on a finished graph only
    assert (result.verdict("progress") == VIOLATED) == bool(why_fixed_hangs(config)), result.results["progress"].reason


# ---- (b) the order of enumeration does not matter ----


class Permuted:
    """The same model, but `successors` lists the enabled steps in a seeded random order."""

    def __init__(self, inner, seed: int):
        self.inner, self.rng = inner, random.Random(seed)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def successors(self, state):
        succ = list(self.inner.successors(state))
        self.rng.shuffle(succ)
        return succ


def summary(result, depth: bool = True):
    """What must not depend on the order: counts, verdicts, and shortest safety-trace lengths (and the
    depth reached, except with chain fusion: a stored state keeps the depth of the chain that reached
    it first, and chains of different lengths can reach it in one BFS round)."""
    safety = {n: len(r.trace) for n, r in result.results.items() if r.trace is not None and r.trace.cycle_start is None}
    safety.pop("progress", None)  # a lasso's shape may differ; its verdict may not
    return (
        result.stats.states,
        result.stats.transitions,
        result.stats.max_depth if depth else None,
        dict(result.stats.action_counts),
        {n: r.verdict for n, r in result.results.items()},
        safety,
    )


def order_independent_limits(model) -> Limits:
    """The full search when it is small; otherwise a depth bound (the same states in any order)."""
    if explore(model, SearchOptions(Limits(max_states=4000))).complete:
        return Limits()
    return Limits(max_depth=9)


@settings(max_examples=20, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]), st.integers(0, 2**32 - 1))
def test_plain_search_does_not_depend_on_action_order(config, predicate, seed):
    model = readable(config, predicate)
    limits = order_independent_limits(model)
    assert summary(check_model(model, SearchOptions(limits))) == summary(check_model(Permuted(model, seed), SearchOptions(limits)))


@settings(max_examples=25, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]), st.integers(0, 2**32 - 1))
def test_symmetry_reduced_search_does_not_depend_on_action_order(config, predicate, seed):
    model = compiled(config, predicate)  # rank symmetry lives on the compiled states
    limits = order_independent_limits(model)
    canonical = model.canonicalizer()
    plain = check_model(model, SearchOptions(limits, canonical=canonical))
    assert summary(plain) == summary(check_model(Permuted(model, seed), SearchOptions(limits, canonical=canonical)))


@settings(max_examples=20, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]), st.integers(0, 2**32 - 1))
def test_api_search_does_not_depend_on_action_order(config, predicate, seed):
    """The public API with every reduction it applies, the model's successors shuffled underneath."""
    limits = order_independent_limits(readable(config, predicate))
    before = summary(check(config, predicate, limits), depth=False)
    rng = random.Random(seed)
    # what the API searches (the specification only replays traces): the plain successors, and
    # with reductions the lazy expansion that lists the chosen successors and the enabled steps
    real, real_reduced = CompiledModel.successors, CompiledModel.reduced_successors
    calls = []

    def shuffled(self, state):
        calls.append(1)
        succ = list(real(self, state))
        rng.shuffle(succ)
        return succ

    def shuffled_reduced(self, state):
        calls.append(1)
        chosen, enabled = real_reduced(self, state)  # enabled: a bitmask of actors, no order
        chosen = list(chosen)
        rng.shuffle(chosen)
        return chosen, enabled

    with mock.patch.object(CompiledModel, "successors", shuffled), mock.patch.object(
        CompiledModel, "reduced_successors", shuffled_reduced
    ):
        after = summary(check(config, predicate, limits), depth=False)
    assert calls and before == after


@settings(max_examples=25, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]))
def test_compiled_search_equals_the_specification(config, predicate):
    """The API searches a compiled form of the protocol; without reductions it must explore
    exactly the specification's graph and report the same counterexamples."""
    spec = readable(config, predicate)
    limits = order_independent_limits(spec)
    compiled = check(config, predicate, limits, reductions=False)
    plain = check_model(spec, SearchOptions(limits))
    assert summary(compiled) == summary(plain)
    assert {n: r.trace.schedule for n, r in compiled.results.items() if r.trace} == {
        n: r.trace.schedule for n, r in plain.results.items() if r.trace
    }


@settings(max_examples=20, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]))
def test_api_reductions_keep_every_verdict(config, predicate):
    """Trace lengths may differ: the partial-order reduction does not keep traces shortest."""
    plain = check(config, predicate, Limits(max_states=4000), reductions=False)
    if not plain.stats.complete:
        return  # too large for the reference search
    reduced = check(config, predicate)
    assert summary(reduced)[4] == summary(plain)[4]


# ---- (c) a random walk stays inside the explored state space ----


def reachable(model, canonical=None):
    """(the explored states, how far a walk may go and stay comparable): the whole graph when
    it is small, else every state within a depth bound (then the walk stops at that depth)."""
    full = explore(model, SearchOptions(Limits(max_states=4000), canonical=canonical))
    if full.complete:
        return set(full.states), 80
    return set(explore(model, SearchOptions(Limits(max_depth=9), canonical=canonical)).states), 9


@settings(max_examples=25, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]), st.integers(0, 2**32 - 1))
def test_a_random_walk_never_leaves_the_explored_states(config, predicate, seed):
    model = compiled(config, predicate)
    canonical = model.canonicalizer()
    known, steps = reachable(model)
    representatives, rep_steps = reachable(model, canonical) if canonical else (known, steps)
    canon = canonical or (lambda s: s)
    rng = random.Random(seed)
    for _walk in range(5):
        state = model.initial_states()[0]
        for depth in range(max(steps, rep_steps) + 1):
            if depth <= steps:
                assert state in known
            if depth <= rep_steps:
                assert canon(state) in representatives
            succ = model.successors(state)
            if not succ:
                break
            state = rng.choice(succ)[1]


# ---- a lasso is a real lasso: its cycle closes on the concrete state and can run again ----


@settings(max_examples=30, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]))
def test_every_progress_lasso_repeats_on_concrete_states(config, predicate):
    result = check(config, predicate, Limits(max_states=3000))
    trace = result.trace("progress")
    if trace is None or trace.cycle_start is None:
        return
    model = readable(config, predicate)
    entry = trace.steps[trace.cycle_start - 1].state if trace.cycle_start else trace.initial
    assert trace.final_state == entry  # not merely the same up to a permutation of ranks
    cycle = [s.action_id for s in trace.steps[trace.cycle_start :]]
    again = replay(model, cycle, initial=trace.final_state)
    assert again.final_state == entry
