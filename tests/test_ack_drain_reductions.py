"""The ack-drain protocol's reductions keep every verdict: on random small configurations (every
option and failure of the protocol), the search with rank symmetry, the partial-order reduction
and its solo steps gives the plain search's verdict for every property, under both predicates."""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from prefetch_check import Limits, check
from prefetch_check.model.engine.vouch import hidden_steps
from prefetch_check.model.interface import Action
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from prefetch_check.model.protocols.ack_drain.state import S_CHECK
from strategies import SETTINGS, ack_configs

BUDGET = 20_000  # states of the plain search; larger configurations are not compared


def verdicts(result) -> dict:
    return {name: r.verdict for name, r in result.results.items()}


@settings(max_examples=60, **SETTINGS)
@given(ack_configs(), st.sampled_from(["buggy", "fixed"]))
def test_the_reductions_keep_every_verdict(config, predicate):
    plain = check(config, predicate, Limits(max_states=BUDGET), reductions=False, protocol="ack-drain")
    if not plain.stats.complete:
        event("too large for the plain search")
        return
    event(f"compared, ranks={config.ranks}, {'some VIOLATED' if plain.violated else 'all hold'}")
    reduced = check(config, predicate, protocol="ack-drain")
    assert reduced.stats.complete
    assert verdicts(reduced) == verdicts(plain), config
    assert not hidden_steps(reduced, plain), (config, hidden_steps(reduced, plain))


# two requests of one page each (the plain search about 11,000 states and 1 s a row, against 8-15 s
# a row at two pages: 35 s of the suite's CPU); two pages in the two-rank rows
ISSUE_23 = [
    uniform_ack_config(ranks=r, requests=q, pages=p, storage_batch_size=1, policy="timeout", cache=cache)
    for r, q, p in ((1, 2, 1), (2, 1, 2)) for cache in ("unified", "hiradix")
] + [
    uniform_ack_config(ranks=2, requests=1, pages=2, storage_batch_size=1, policy="timeout", failing={1: {1}}),
    AckConfig(ranks=2, requests=(Request(pages=1, hits=(1, 1), failing=(frozenset(), frozenset()), abort_round=2),),
              storage_batch_size=1, policy="timeout"),
]


@pytest.mark.parametrize("predicate", ["buggy", "fixed"])
@pytest.mark.parametrize("config", ISSUE_23, ids=lambda c: f"R{c.ranks}xQ{c.num_requests}-{c.cache}-p{c.requests[0].pages}-abort{c.requests[0].abort_round}")
def test_issue_23_steps_taken_alone_and_the_postponed_clock_keep_every_verdict(config, predicate):
    """Y.take, I.stop, the drain where it commutes, and the clock postponed to the check that reads
    it: under timeout (where they matter) the reduced search judges as the plain one, takes every
    kind of step it takes (the clock included), and visits fewer states."""
    plain = check(config, predicate, Limits(max_states=400_000), reductions=False, protocol="ack-drain")
    assert plain.stats.complete
    reduced = check(config, predicate, protocol="ack-drain")
    assert verdicts(reduced) == verdicts(plain)
    assert not hidden_steps(reduced, plain)
    assert reduced.stats.action_counts["C.timeout"] > 0
    assert reduced.stats.states < plain.stats.states


def test_the_clock_is_postponed_only_away_from_its_check_and_never_under_the_admission_deadline():
    protocol = AckDrainProtocol(uniform_ack_config(ranks=1, requests=2, pages=1, policy="timeout"), "fixed")
    rank = protocol.initial_rank(0)
    clock = Action(0, "C", "timeout", 1)
    assert protocol.postponable(rank._replace(s_pc=(S_CHECK, 0, 0)), clock)  # checking q0: q1's clock waits
    assert not protocol.postponable(rank._replace(s_pc=(S_CHECK, 1, 0)), clock)  # about to read it
    assert not protocol.postponable(rank, Action(0, "S", "drain_arrive", -1))
    admission = AckDrainProtocol(uniform_ack_config(ranks=1, requests=2, pages=1, policy="timeout",
                                                    deadline="admission"), "fixed")
    assert not admission.postponable(rank._replace(s_pc=(S_CHECK, 0, 0)), clock)
    limited = AckDrainProtocol(uniform_ack_config(ranks=1, requests=2, pages=1, policy="timeout",
                                                  admission_limit=1), "fixed")
    assert not limited.postponable(rank._replace(s_pc=(S_CHECK, 0, 0)), clock)
