"""The timeout policy in the code engine's own search: a rank's deadline firing is a choice, as
Coyote treats timers. Per rank one more managed thread, `D<r>`, parks at "deadline fires on rank
r"; it is enabled once the code of rank r has read its clock since it last fired (a deadline may
be running: 0.5.19's `op.start_time`, 0.5.23's PollTimer) while rank r has a request waiting, and
running it moves rank r's clock past every deadline it has started (stand_ins/clock.py). Every
strategy sees it as one more enabled choice; a counterexample replays it by name.

The bound, stated: a rank's clock fires at most once per prefetch operation the configuration
issues on that rank (requests, twice with a re-issue), and only after a reading since its last
firing; one firing passes every deadline of that rank at once (two deadlines running together on
one rank are not passed one at a time). Within one step of a thread the clock does not move: a
firing falls between scheduling points. The clock's firings and readings are in the state key
(the readings through the reading thread's observations), so the search stays sound and finite."""

from __future__ import annotations

import inspect

from prefetch_check.model.code.stand_ins.clock import name as clock_name
from prefetch_check.model.code.worlds.common import GATE_INPUTS

PREFIX = "D"
PAST_DEADLINE = ("the request waits past its deadline: the timeout policy no longer bounds the time a "
                 "request waits for storage")


def label(rank: int) -> str:
    return f"deadline fires on rank {rank}"


class Deadlines:
    """The deadline choices of one run: spawned after every rank's threads (the ranks' thread
    indices stay as they are), and what the scheduler round's gate needs to know of them."""

    def __init__(self, run):
        self.run, self.clock = run, run.clock
        cfg = run.config
        self.budget = cfg.requests * (2 if cfg.reissue else 1)
        self.seen = {r.index: 0 for r in run.ranks}  # the firings a rank's scheduler saw at its last round
        self.checked: dict[int, set] = {r.index: set() for r in run.ranks}  # (request, issue) checked once
        self.pending: dict[tuple[int, int], int] = {}  # (rank, request) -> firings when a check read the clock
        for r in run.ranks:
            run.baton.spawn(f"{PREFIX}{r.index}", r.index, "deadline", lambda i=r.index: self._thread(i), starts=False,
                            touches=(GATE_INPUTS,))  # firing changes what the round gate reads (round_due)

    def _thread(self, rank: int) -> None:
        for _ in range(self.budget):
            self.run.baton.point(label(rank), lambda: self.may_fire(rank), (GATE_INPUTS, clock_name(rank)))
            self.clock.fire(rank)
            self.run.baton.observe(f"rank {rank}'s clock passes every deadline it started")

    def may_fire(self, rank: int) -> bool:
        return rank in self.clock.armed and bool(self.run.ranks[rank].waiting)

    # ---- the policy's promise, judged at each check of the rank whose clock fired
    def check(self, rank, q: int, handle, check) -> bool:
        """Run `check()` (the tree's check_prefetch_progress for request q) and judge the bound the
        timeout policy promises: a check that read the clock, then a firing of that clock, then
        another check of the same request while its KV has not landed must admit it (0.5.19:
        start_time passed; 0.5.23: the admission deadline, which never fires once the KV landed).
        A check that still waits is a `progress` fault at check_prefetch_progress."""
        clock, i = self.clock, rank.index
        due = self.pending.get((i, q))
        fired = due is not None and clock.epoch.get(i, 0) > due  # before this check began: it reads a passed time
        reads = clock.reads.get(i, 0)
        admitted = check()
        if admitted:
            self.pending.pop((i, q), None)
            return admitted
        if fired and not self._landed(rank, handle):  # landing only grows: not landed now, not during the check
            self.run.world.fault("progress", f"rank {i}: req{q} still waits at the first check after its deadline "
                                 "fired, and its KV has not landed", PAST_DEADLINE, self._site(rank))
        if clock.reads.get(i, 0) > reads:  # this check read the clock: a deadline may run from here
            self.pending[(i, q)] = clock.read_at[i]
        return admitted

    def _landed(self, rank, handle) -> bool:
        entry = rank.cache.ongoing_prefetch.get(handle)
        if entry is None:
            return False
        d = entry.operation.__dict__  # the hooks are not asked: the judge is no step
        hashes = d.get("hash_value") or []
        return d.get("host_indices") is not None and d.get("completed_tokens", 0) >= len(hashes) * self.run.config.page_size

    def _site(self, rank) -> str:
        fn = type(rank.cache).check_prefetch_progress
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or "?"
        line = first + next((k for k, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
        for root in self.run.baton.roots:
            if path.startswith(root):
                path = path[len(root):]
        return f"{path}:{line}"

    # ---- the round gate under the timeout policy
    def round_due(self) -> bool:
        """A round whose checks can decide differently from the last: a rank's clock fired since
        its scheduler's last round, or a request waits that its rank has not checked yet (0.5.23
        starts the deadline at the first blocked check). Other rounds change nothing but the round
        count: stuttering steps, as under wait_complete (the drain's MIN opens the gate too)."""
        for r in self.run.ranks:
            if self.clock.epoch.get(r.index, 0) != self.seen[r.index]:
                return True
            if any((q, self._issue(r, q)) not in self.checked[r.index] for q in r.waiting):
                return True
        return False

    def round_starts(self, rank) -> None:
        self.seen[rank.index] = self.clock.epoch.get(rank.index, 0)
        self.checked[rank.index].update((q, self._issue(rank, q)) for q in rank.waiting)

    @staticmethod
    def _issue(rank, q: int) -> int:
        return 1 if q in rank.resolved else 0  # a re-issued request was admitted once before

    def may_open(self, rank) -> bool:
        """Whether another rank's steps can open `rank`'s closed gate through the deadlines: its
        clock may still fire, or it has a request it has not checked (its gate opens for all)."""
        return any(m.status == "parked" for m in self.run.baton.threads if m.role == "deadline"
                   and m.rank != rank.index) or self.round_due()

    def key(self) -> tuple:
        checked = tuple(sorted((r, tuple(sorted(s))) for r, s in self.checked.items()))
        return self.clock.key(), tuple(sorted(self.seen.items())), checked, tuple(sorted(self.pending.items()))
