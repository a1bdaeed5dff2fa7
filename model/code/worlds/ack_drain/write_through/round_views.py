"""What each rank's scheduler reads of its device tree after a round's check_hicache_events must
be the same on every rank (tp_agreement): the TP ranks run one scheduler loop each, and their
admission budgets (the tree's evictable tokens), device matches and eviction walks must agree, or
they build different batches. The drain's MIN (`_sync_hicache_ready_counts`) is what keeps them
equal: a rank that reaps a write or load ack its peers have not reaped yet unlocks a node they
still hold.

A mix-in of the write path's run (run.py). Each rank records its view after the round's events
(`after_events`); the views of round k are compared when the first rank starts round k + 1: the
round gate opens then only with every scheduler at its gate, so every view of round k is written
and none can be written before the comparison (the other schedulers start round k + 1 only behind
this one). The last round's views are compared at the run's end (`judge`). Only the views not yet
compared are part of the state key."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding

DIVERGED = ("the ranks' schedulers see different device caches: their admission budgets and evictions "
            "differ, so they build different batches (a hang or wrong output)")


def view(tree) -> tuple:
    """What a scheduler reads of its device tree: evictable tokens, the nodes on the device, and
    the nodes a write or load holds locked."""
    return (tree.full_evictable_size(), tuple(sorted(tree.resident)),
            tuple(sorted(n for n, c in tree.locked.items() if c)))


def _describe(v: tuple) -> str:
    evictable, resident, locked = v
    return f"{evictable} evictable tokens, nodes {list(resident)} on the device, {list(locked)} locked"


class _Pending:
    """The views not yet compared, for the run's state key."""

    def __init__(self, views: dict):
        self.views = views

    def snapshot(self) -> tuple:
        return ("round views", tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.views.items())))

    def _pc_stutter_snapshot(self) -> tuple:
        """The views without their round numbers (stutter.py compares two rounds' starts)."""
        return ("round views", tuple(sorted(tuple(sorted(v.items())) for v in self.views.values())))


class RoundViews:
    """A run mix-in: record each rank's view after its round's events, compare a round's views
    when the next round starts."""

    def __init__(self, *args, **kwargs):
        self.round_views: dict[int, dict[int, tuple]] = {}  # round -> rank -> its view
        super().__init__(*args, **kwargs)
        if self.config.ranks > 1:
            self.world.register(_Pending(self.round_views))

    def after_events(self, rank) -> None:
        if self.config.ranks > 1:
            self.round_views.setdefault(rank.rounds, {})[rank.index] = view(rank.tree)
        super().after_events(rank)

    def enter_round(self, rank) -> None:
        super().enter_round(rank)
        done = self.round_views.get(rank.rounds - 1)
        if done is not None and len(done) == self.config.ranks:
            del self.round_views[rank.rounds - 1]
            message = compare(rank.rounds - 1, done)
            if message:
                me = self.baton.current()
                self.world.fault("tp_agreement", message, DIVERGED, me.point.site if me else "?")


def compare(k: int, views: dict[int, tuple]) -> str:
    """A tp_agreement message where the ranks' views of round k differ, else ''."""
    if len(set(views.values())) < 2:
        return ""
    said = "; ".join(f"rank {i}: {_describe(v)}" for i, v in sorted(views.items()))
    return f"after round {k}'s check_hicache_events the ranks' device trees differ ({said})"


def judge(run, terminal: bool) -> list[Finding]:
    """At a run's end: the last round's views, recorded by every rank and never compared."""
    views = getattr(run, "round_views", None)
    if not terminal or not views:
        return []
    out = []
    for k, done in sorted(views.items()):
        message = compare(k, done) if len(done) == run.config.ranks else ""
        if message:
            out.append(Finding("tp_agreement", message, DIVERGED, "", len(run.baton.steps)))
    return out
