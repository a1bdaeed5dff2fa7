"""What a search leaves behind: the stored states, their bookkeeping and the recorded graph
(`bfs.py` fills one in this process, `parallel.py` gathers one from its workers)."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.explorer.graph import LABEL_SLOTS, GraphRecorder
from prefetch_check.explorer.interface import Model

# how often (in expanded states) limits are checked and progress is reported
CHECK_EVERY = 2048


@dataclass
class Exploration:
    model: Model
    states: list = field(default_factory=list)  # id -> (canonical) state
    parent: list = field(default_factory=list)  # id -> parent id (-1 for initial states)
    depth: array = field(default_factory=lambda: array("i"))  # id -> steps from an initial state
    findings: dict = field(default_factory=dict)  # property name -> Finding
    deadlocks: list = field(default_factory=list)  # ids without successors, in BFS order
    graph: Optional[GraphRecorder] = None  # the recorded graph (for the progress analysis)
    labels: list = field(default_factory=list)  # label index -> Label
    progress_bits: dict = field(default_factory=dict)  # progress property name -> its bit in Label.pending
    actors: dict = field(default_factory=dict)  # actor -> index
    transitions: int = 0
    expanded: int = 0
    fused: int = 0  # distinct states walked through without being stored (chain fusion)
    complete: bool = False
    stop_reason: Optional[str] = None
    seconds: float = 0.0
    action_counts: Counter = field(default_factory=Counter)
    peak_memory_mb: float = 0.0
    expand: Optional[object] = None  # the reduced expansion the search fused with (to re-walk fused edges)
    canonical: Optional[object] = None
    workers: int = 1  # processes the search ran on

    LABEL_SLOTS = LABEL_SLOTS  # edge encoding: succ_id * LABEL_SLOTS + label index

    @property
    def edges(self) -> Optional[list]:
        return None if self.graph is None else self.graph.edges

    @property
    def enabled(self) -> Optional[list]:
        return None if self.graph is None else self.graph.enabled

    @property
    def pending_bits(self) -> Optional[array]:
        return None if self.graph is None else self.graph.pending_bits

    @property
    def max_depth(self) -> int:
        return max(self.depth) if self.depth else 0

    @property
    def visited(self) -> int:
        """Distinct states visited: stored plus fused through."""
        return len(self.states) + self.fused

    def successors_of(self, sid: int):
        """(successor id, Label) of every stored edge leaving `sid`."""
        slots, labels = LABEL_SLOTS, self.labels
        for code in self.edges[sid]:
            yield code // slots, labels[code % slots]

    def state_path(self, ids: list[int]) -> list:
        """The (canonical) states along a path of stored ids, fused states included, so that
        consecutive states are one model step apart."""
        if self.expand is None:
            return [self.states[i] for i in ids]
        canon = self.canonical or (lambda s: s)
        out = [self.states[ids[0]]]
        for u, v in zip(ids, ids[1:]):
            out += self._walk_to(canon, self.states[u], self.states[v])
        return out

    def _walk_to(self, canon, start, target) -> list:
        """The states after `start` up to `target` along one fused edge of the stored graph."""
        for _, nxt in self.expand(start)[0]:
            walked = [canon(nxt)]
            while walked[-1] != target and len(walked) <= len(self.states) + self.fused:
                chosen = self.expand(walked[-1])[0]
                if len(chosen) != 1:
                    break
                walked.append(canon(chosen[0][1]))
            if walked[-1] == target:
                return walked
        raise AssertionError("search graph and model disagree: no fused edge reaches the next state")
