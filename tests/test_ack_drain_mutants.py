"""The ack-drain protocol's mutant catalogue: every mutant is killed, by the property it expects,
in its built-in configurations; the shortest kill goes through a mutated step and replays; the
unmutated protocol cannot follow a safety kill; mutant names are unique across catalogues."""

from __future__ import annotations

import pytest

from models import readable
from prefetch_check.explorer.interface import ALWAYS
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.model.protocols.ack_drain.mutants import CATALOGUE
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from prefetch_check.mutation import KILLED, catalogue, run_mutants


@pytest.fixture(scope="module")
def run():
    mutants, configs = catalogue("ack-drain")
    return run_mutants(configs, mutants), dict((c.name, c.config) for c in configs)


def test_at_least_eight_mutants_all_killed(run):
    run, _ = run
    assert len(run.outcomes) >= 8
    assert run.score == (len(CATALOGUE), len(CATALOGUE)) and run.complete
    assert all(o.status == KILLED for o in run.outcomes)


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.name)
def test_each_mutant_is_caught_by_its_expected_property(run, mutant):
    run, _ = run
    assert run.outcome(mutant.name).killed_by(mutant.expected), [(k.scenario, k.prop) for k in run.outcome(mutant.name).kills]


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.name)
def test_the_shortest_kill_goes_through_a_mutated_step_and_replays(run, mutant):
    run, configs = run
    best = run.outcome(mutant.name).best
    assert any(step.action.kind in mutant.touches for step in best.trace.steps)
    again = replay(readable(configs[best.scenario], "fixed", protocol=mutant), best.trace.schedule)
    assert [s.state for s in again.steps] == [s.state for s in best.trace.steps]
    marked = [s.description for s in best.trace.steps if s.action.kind in mutant.touches]
    assert marked and all(text.endswith(f"<- mutated ({mutant.name})") for text in marked)


@pytest.mark.parametrize("mutant", CATALOGUE, ids=lambda m: m.name)
def test_the_unmutated_protocol_cannot_follow_a_state_kill(run, mutant):
    run, configs = run
    for kill in run.outcome(mutant.name).kills:
        original = readable(configs[kill.scenario], "fixed", protocol=AckDrainProtocol)
        prop = next(p for p in original.properties() if p.name == kill.prop)
        if prop.kind != ALWAYS:
            continue
        try:
            trace = replay(original, kill.trace.schedule)
        except Divergence:
            continue
        assert prop.check(trace.final_state) is None


def test_mutant_names_are_unique_across_the_catalogues():
    names = [m.name for protocol in ("predicate-poll", "ack-drain") for m in catalogue(protocol)[0]]
    assert len(names) == len(set(names))
