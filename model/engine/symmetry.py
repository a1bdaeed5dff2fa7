"""Rank symmetry: ranks with identical parameters are interchangeable.

Permuting the ranks of one class (`RankProtocol.rank_classes`) maps behaviours to
behaviours and leaves every property's answer unchanged, because every declared property
reads the ranks' views in rank order and quantifies over all of them; so the search stores
one representative per orbit: the state with the ranks of each class sorted by content.

Sorting by content (not by the codes, which number rank states in discovery order) keeps
the representative, and so every count, independent of the order steps are listed in.

Fairness under the reduction (`explorer/liveness.py`) needs one more fact, which each
protocol states for itself: the rank state lists the fields of the threads that can loop
forever (a scheduler's event loop) last, so sorting orders ranks by what their other
threads see; those threads only take irreversible steps, so every cycle of the state graph
permutes only ranks whose other threads look alike, and the actor at a canonical position
keeps its enabledness along a cycle. The soundness harness checks the verdicts.
"""

from __future__ import annotations

from bisect import bisect_left


class ContentOrder:
    """An int per rank code that sorts like the rank states themselves: comparing ints is
    cheaper than comparing nested tuples. Ints are spread with gaps; when a gap is used up,
    every code is renumbered in the same order (so no representative ever changes)."""

    GAP = 1 << 32

    def __init__(self):
        self.key: list[int] = []  # code -> its place in content order
        self._ranks: list = []  # every rank state, in content order
        self._codes: list[int] = []  # their codes, in the same order

    def place(self, code: int, rank: tuple) -> None:
        """Give a new code (the next one: codes are numbered 0, 1, 2, ...) its place."""
        ranks, codes, key = self._ranks, self._codes, self.key
        i = bisect_left(ranks, rank)
        low = key[codes[i - 1]] if i else 0
        high = key[codes[i]] if i < len(codes) else low + 2 * self.GAP
        ranks.insert(i, rank)
        codes.insert(i, code)
        key.append(0)
        if high - low >= 2:
            key[code] = (low + high) // 2
        else:
            for j, c in enumerate(codes):
                key[c] = (j + 1) * self.GAP


def canonicalizer(classes, ranks: int, order: ContentOrder):
    """A function compact state -> representative of its orbit, or None when no two ranks are alike."""
    classes = [c for c in classes if len(c) > 1]
    if not classes:
        return None
    key = order.key.__getitem__
    if len(classes) == 1 and len(classes[0]) == ranks:
        return lambda cs: tuple(sorted(cs, key=key))

    def canonical(cs):
        out = list(cs)
        for positions in classes:
            for pos, code in zip(positions, sorted((cs[p] for p in positions), key=key)):
                out[pos] = code
        return tuple(out)

    return canonical
