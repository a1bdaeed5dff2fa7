"""The reference model: global states are tuples of the protocol's own rank states.

It is the definition of what a protocol means (every rank's steps, interleaved; every
collective completed when its last rank arrives), with nothing cached and nothing reduced.
Traces hold its states, `replay` runs schedules through it, and the compiled model the
searches use (`compiled.py`) is tested against it step for step.
"""

from __future__ import annotations

from prefetch_check.model.engine.base import ProtocolModel
from prefetch_check.model.engine.collectives import arrived, complete, group_of
from prefetch_check.model.engine.properties import readable_properties
from prefetch_check.model.interface import Action


class ReadableModel(ProtocolModel):
    """An explorer model (`explorer.interface.Model`) of a `RankProtocol`."""

    def __init__(self, protocol):
        super().__init__(protocol, readable_properties(protocol))

    def initial_states(self):
        return [tuple(self.protocol.initial_rank(r) for r in range(self.protocol.ranks))]

    def successors(self, state) -> list:
        p = self.protocol
        out = []
        for r in range(p.ranks):
            for step in p.rank_steps(r, state[r]):
                action = Action(r, step.thread, step.name, step.q)
                if step.arrive is None:
                    out.append((action, state[:r] + (step.rank,) + state[r + 1 :]))
                    continue
                tag, value = step.arrive
                nxt = state[:r] + (arrived(p, step.rank, tag, value),) + state[r + 1 :]
                out.append((action, complete(p, nxt, group_of(p, tag))))
        return out

    def describe(self, state, action, next_state) -> str:
        return self.protocol.describe(state[action.rank], next_state[action.rank], action)

    def fields(self, state) -> dict:
        return self.protocol.fields(state)

    def settled(self, state) -> bool:
        return all(self.protocol.rank_settled(rank) for rank in state)
