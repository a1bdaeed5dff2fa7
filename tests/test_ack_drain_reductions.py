"""The ack-drain protocol's reductions keep every verdict: on random small configurations (every
option and failure of the protocol), the search with rank symmetry, the partial-order reduction
and its solo steps gives the plain search's verdict for every property, under both predicates."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from prefetch_check import Limits, check
from prefetch_check.model.engine.vouch import hidden_steps
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
