"""The state graph a search records for the progress analysis: edges, enabledness, pending bits.

An edge of the stored graph is one step, or a fused chain of steps (bfs.py), and carries a
`Label`: what the progress analysis needs of what it passes through. Edges are packed
into one int each (successor id and label index), a few bytes a state: the graph has
millions of states.
"""

from __future__ import annotations

from array import array
from typing import NamedTuple

EVERY = -1  # a bitmask with every bit set (the identity of &)
LABEL_BITS = 24  # an edge is succ_id << LABEL_BITS | label index
LABEL_MASK = (1 << LABEL_BITS) - 1
LABEL_SLOTS = 1 << LABEL_BITS


class Label(NamedTuple):
    """What an edge of the stored graph passes through (one step, or a fused chain of steps).

    fired:    bitmask of the actors (their indices) that take a step on the edge
    enabled:  bitmask of the actors enabled in every state passed inside the edge (EVERY for one step)
    pending:  bit i set when every state passed inside the edge is pending for the i-th
              progress property (EVERY for one step)
    """

    fired: int
    enabled: int = EVERY
    pending: int = EVERY


class Labels:
    """The distinct labels, interned: label tuple -> small index (edges store the index)."""

    def __init__(self):
        self.labels: list[Label] = []
        self._index: dict = {}

    def index(self, label: tuple) -> int:
        i = self._index.get(label)
        if i is None:
            i = self._index[label] = len(self.labels)
            self.labels.append(Label(*label))
            assert i < LABEL_SLOTS, "too many distinct edge labels for the edge encoding"
        return i


class GraphRecorder:
    """Observes a search and keeps its graph: per stored state its edges (packed ints), the
    bitmask of its enabled actors, and (with progress properties) its pending bits."""

    def __init__(self, progress_properties: int):
        self.edges: list = []  # id -> array of succ_id * LABEL_SLOTS + label index
        self.enabled: list = []  # id -> bitmask of actors with an enabled action
        self.pending_bits = array("q") if progress_properties else None  # id -> pending bits

    def expanded(self, edges: array, enabled: int) -> None:
        """The edges and enabled actors of the next stored state, in id order."""
        self.edges.append(edges)
        self.enabled.append(enabled)
