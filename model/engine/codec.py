"""Compact states between processes: what the parallel search (`explorer/parallel.py`) needs
of the compiled model.

A compact state is a tuple of rank codes, and codes are numbered per process in the order
that process met the rank states, so the same state has different codes in different
worker processes. What crosses between processes is therefore the codes plus, once, the
rank state behind every code new since the last exchange (a few thousand rank states in
a search of millions of global states); the receiver interns each and keeps a table
from the sender's codes to its own. A state's `group_key` is the same number in every
process and every run: a hash over a stable hash of each rank's view (crc32 of its repr;
Python's own `hash` of a string differs between runs). States with equal views have equal
property answers (`CompiledModel.property_key`), and the parallel search gives all of them
to one process, which then judges each combination of views once, as one process alone
would, instead of every process judging most of them.
"""

from __future__ import annotations

import zlib


class CodeCodec:
    """The `state_codec` of a `CompiledModel` in one process."""

    def __init__(self, model):
        self.model = model
        self.width = model.ranks  # ints per state
        self._sent = 0  # codes up to here were handed out by `news`
        self._stable_view: list[int] = []  # code -> stable hash of its rank's view
        self._tables: dict = {}  # sender -> [local code of each sender code]

    def news(self) -> list:
        """The rank states behind the codes made since the last call (to be sent to every other process)."""
        rank_of = self.model.rank_of
        out = rank_of[self._sent :]
        self._sent = len(rank_of)
        return out

    def learn(self, sender: int, news: list) -> list:
        """Take a sender's news; returns its table sender code -> local code."""
        table = self._tables.setdefault(sender, [])
        encode = self.model.encode_rank
        table.extend(map(encode, news))
        return table

    def group_key(self, state: tuple) -> int:
        """A 64-bit hash of the ranks' views, equal in every process and every run."""
        stable, views = self._stable_view, self.model.views
        if len(stable) < len(views):
            stable.extend(zlib.crc32(repr(view).encode()) for view in views[len(stable) :])
        return hash(tuple(map(stable.__getitem__, state)))
