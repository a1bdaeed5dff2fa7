"""A variant with state of its own (issue 20, defect 4): a rank type with the built-in rank's
fields plus the variant's, returned by `initial_rank`. Every built-in step keeps working (they
read and `_replace` fields by name), the variant's steps and properties read its fields, and
the viewers show them through its `fields`. docs/variants.md describes this route."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from cli_helpers import run, write_scenario
from prefetch_check import check
from prefetch_check.model.interface import step_invariant
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from prefetch_check.model.protocols.ack_drain.state import Rank as AckRank
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.model.protocols.poll.state import Rank as PollRank
from prefetch_check.scenario import load_scenario

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def counting_terminations(base, rank_type):
    """A variant of `base` whose ranks count their terminate steps (capped at 2: finite)."""
    with_count = NamedTuple(f"{rank_type.__name__}WithTerminations", [*rank_type.__annotations__.items(), ("terminations", int)])

    class CountsTerminations(base):
        property_names = base.property_names + ("terminates_once",)

        def initial_rank(self, r):
            return with_count(*super().initial_rank(r), terminations=0)

        def scheduler_steps(self, r, rank):
            return [s._replace(rank=s.rank._replace(terminations=min(2, s.rank.terminations + 1)))
                    if s.name == "terminate" else s for s in super().scheduler_steps(r, rank)]

        def fields(self, state):
            return {**super().fields(state), **{f"r{r}.terminations": rank.terminations for r, rank in enumerate(state)}}

        def properties(self):
            return super().properties() + [step_invariant(
                "terminates_once", lambda rank, a: None if rank.terminations == 0 else f"rank {a.rank} terminates again",
                "a rank of one request terminates it at most once", concerns=lambda a: a.kind == "S.terminate")]

    CountsTerminations.__qualname__ = f"CountsTerminations{base.__name__}"
    return CountsTerminations


PollCounts = counting_terminations(PollProtocol, PollRank)
AckCounts = counting_terminations(AckDrainProtocol, AckRank)
ACK_TIMEOUT = """
    protocol = "ack-drain"
    ranks = 2
    pages = 1
    policy = "timeout"
"""  # the unified cache votes (and terminates) only under the timeout policy
CASES = {"predicate-poll": (PollCounts, "PollCounts"), "ack-drain": (AckCounts, "AckCounts")}


def scenario(protocol, tmp_path) -> str:
    return str(SCENARIOS / "tp2.toml") if protocol == "predicate-poll" else write_scenario(tmp_path, ACK_TIMEOUT)


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_the_variant_keeps_every_verdict_and_judges_its_own_property(protocol, tmp_path):
    cls, _ = CASES[protocol]
    case = load_scenario(scenario(protocol, tmp_path)).cases[0]
    for predicate in ("buggy", "fixed"):
        # plain searches: the soundness harness would vouch for the variant's reductions first (seconds)
        plain = check(case.config, predicate, reductions=False, protocol=case.protocol)
        own = check(case.config, predicate, reductions=False, protocol=cls)
        assert {p: r.verdict for p, r in own.results.items() if p != "terminates_once"} == \
               {p: r.verdict for p, r in plain.results.items()}
        assert own.results["terminates_once"].verdict == "VERIFIED"
        assert own.stats.states >= plain.stats.states  # the count only ever splits states


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_trace_shows_the_variants_field(protocol, capsys, tmp_path):
    _, attr = CASES[protocol]
    code, out, err = run(capsys, "trace", scenario(protocol, tmp_path), "--protocol", f"{__name__}:{attr}",
                         "--predicate", "buggy", "--property", "wait_complete_delivers", "--format", "json", "-q",
                         "--no-reductions")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["initial"]["r0.terminations"] == 0
    counted = [(s["action_id"], s["changed"]["r0.terminations"]) for s in doc["steps"] if "r0.terminations" in s["changed"]]
    assert counted == [("S0.terminate.q0", {"old": 0, "new": 1})], counted
