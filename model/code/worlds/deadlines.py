"""The timeout policy in the code engine's own search: a rank's deadline firing is a choice, as
Coyote treats timers. Per rank one more managed thread, `D<r>`, parks at "deadline fires on rank
r"; it is enabled once the code of rank r has read its clock since it last fired (a deadline may
be running: 0.5.1-0.5.19's `op.start_time`, 0.5.23's PollTimer) while rank r has a request waiting, and
running it moves rank r's clock past every deadline it has started (stand_ins/clock.py). Every
strategy sees it as one more enabled choice; a counterexample replays it by name.

The bound, stated: a rank's clock fires at most once per prefetch operation the configuration
issues on that rank (requests, twice with a re-issue), and only after a reading since its last
firing; one firing passes every deadline of that rank at once (two deadlines running together on
one rank are not passed one at a time). Within one step of a thread the clock does not move: a
firing falls between scheduling points. The clock's firings and readings are in the state key
(the readings through the reading thread's observations), so the search stays sound and finite.

What the bound promises depends on how the ranks' verdicts are combined, so each world judges it
with its own subclass: `OwnDeadlineAdmits` (ack-drain, 0.5.19-0.5.23: PP0 decides and the verdict
is MAX-reduced, so a rank's own expiry admits it) and `EveryDeadlineAdmits` (predicate-poll,
0.5.1-0.5.18: the vote MAX-reduces [not can_terminate, terminated], so a request is admitted once
every voting rank's deadline passed)."""

from __future__ import annotations

import inspect

from prefetch_check.model.code.stand_ins.clock import name as clock_name
from prefetch_check.model.code.worlds.common import GATE_INPUTS, scheduler_state

PREFIX = "D"
PAST_DEADLINE = ("the request waits past its deadline: the timeout policy no longer bounds the time a "
                 "request waits for storage")


REFETCHED = ("the request waits past its deadline for a storage lookup issued after it expired: an expired "
             "deadline no longer refuses re-issues, so the timeout no longer bounds the request's wait")


EARLY = ("the timeout policy admits the request before any deadline passed, its storage lookup still running: "
         "it recomputes the pages storage was delivering (a prefetch lost)")


NO_DEADLINE = ("the request waits for storage with no deadline running: the timeout policy no longer bounds its wait "
               "(a slow or hung storage backend holds it forever)")


RESTARTED = ("the deadline restarts at every blocked check: a request polled more often than its timeout never "
             "expires, so the timeout policy no longer bounds its wait for storage")


def label(rank: int) -> str:
    return f"deadline fires on rank {rank}"


class Deadlines:
    """The deadline choices of one run, spawned after every rank's threads (the ranks' thread
    indices stay as they are); a world's subclass judges the bound (`check`) as its vote has it."""

    def __init__(self, run):
        self.run, self.clock = run, run.clock
        cfg = run.config
        self.budget = cfg.requests * (2 if cfg.reissue else 1)
        # (rank, request) -> the firings at the reading a deadline runs from (ack-drain: a check's; poll: the issue's)
        self.pending: dict[tuple[int, int], int] = {}
        self.deciding = frozenset(r.index for r in self._clocks(run))  # the ranks whose clock decides (PP: stage 0)
        for r in self._clocks(run):
            run.baton.spawn(f"{PREFIX}{r.index}", r.index, "deadline", lambda i=r.index: self._thread(i), starts=False,
                            touches=(GATE_INPUTS,))  # firing changes what the round gate reads (round_due)

    @staticmethod
    def _clocks(run) -> list:
        """The ranks whose deadline may fire: every rank's, unless the world says whose decide."""
        return getattr(run, "deciding_clocks", lambda: run.ranks)()

    def _thread(self, rank: int) -> None:
        for _ in range(self.budget):
            self.run.baton.point(label(rank), lambda: self.may_fire(rank),
                                 (GATE_INPUTS, clock_name(rank), scheduler_state(rank)))  # armed, waiting
            self.clock.fire(rank)
            self.run.baton.observe(f"rank {rank}'s clock passes every deadline it started")

    def may_fire(self, rank: int) -> bool:
        return rank in self.clock.armed and bool(self.run.ranks[rank].waiting)

    def _site(self, rank) -> str:
        """Where the tree checks a request: check_prefetch_progress's def line (the judge is no step)."""
        fn = type(rank.cache).check_prefetch_progress
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or "?"
        line = first + next((k for k, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
        for root in self.run.baton.roots:
            if path.startswith(root):
                path = path[len(root):]
        return f"{path}:{line}"

    def _read_in(self, rank: int, check) -> tuple[bool, tuple[bool, int]]:
        """Run `check()` (a scheduler call: a check, or the poll world's issue): what it answered,
        whether it read the rank's clock, and the firings the clock had at its last reading (no
        other thread of the rank reads the clock on the path the worlds run)."""
        reads = self.clock.reads.get(rank, 0)
        admitted = check()
        return admitted, (self.clock.reads.get(rank, 0) > reads, self.clock.read_at.get(rank, 0))


class OwnDeadlineAdmits(Deadlines):
    """The ack-drain releases (0.5.19-0.5.23): PP0 decides and the verdict is MAX-reduced, so a
    rank whose own deadline passed admits the request; the scheduler round's gate asks these
    deadlines whether a round can decide differently from the last (`round_due`)."""

    def __init__(self, run):
        super().__init__(run)
        self.seen = {r.index: 0 for r in run.ranks}  # the firings a rank's scheduler saw at its last round
        self.checked: dict[int, set] = {r.index: set() for r in run.ranks}  # (request, issue) checked once
        self.budgets: dict[tuple[int, int], object] = {}  # (rank, request) -> the wait timer its first blocked check started
        self.expired: set[tuple[int, int]] = set()  # (rank, request) whose deadline expired at a check, not admitted since

    # ---- the policy's promise, judged at each check of the rank whose clock fired
    def check(self, rank, q: int, handle, check) -> bool:
        """Run `check()` (the tree's check_prefetch_progress for request q) and judge the bound the
        timeout policy promises: a check that read the clock, then a firing of that clock, then
        another check of the same request while its KV has not landed must admit it (0.5.19:
        start_time passed; 0.5.23: the admission deadline, which never fires once the KV landed).
        A check that still waits is a `progress` fault at check_prefetch_progress. So is a deciding
        rank's blocked check of an unlanded lookup that reads no clock (no deadline runs for it:
        none can ever fire). And before any rank's deadline fired, a check may admit a lookup in
        flight only once it ended (terminated, or its KV landed): else `no_early_acceptance`, as the
        poll world judges it until a deadline fires."""
        i = rank.index
        self.run.baton.touch(clock_name(i), write=False)  # the judge reads the firings: a firing races with it
        due = self.pending.get((i, q))
        fired = due is not None and self.clock.epoch.get(i, 0) > due  # before this check began: it reads a passed time
        if (i, q) in self.expired and handle in rank.cache.ongoing_prefetch and self._per_request(rank):
            self.expired.discard((i, q))  # judged once
            self.run.world.fault("progress", f"rank {i}: req{q} has a storage lookup in flight issued after its "
                                 "deadline expired, before it was admitted", REFETCHED, self._site(rank))
        # a cut is remembered only where the tree keeps one deadline per request (else the state key
        # would grow by what nothing judges: 0.5.19-0.5.22's figures stay)
        cutting = (fired and handle in rank.cache.ongoing_prefetch and not self._landed(rank, handle)
                   and self._per_request(rank))
        # the clocks stand still until a deadline fires, so before any firing only the lookup's end may admit it
        early = not any(self.clock.epoch.values()) and self._cuttable(rank, handle)
        admitted, (read, at) = self._read_in(i, check)
        if admitted:
            if early and not any(self.clock.epoch.values()):  # no rank's deadline fired during the check either
                self.run.world.fault("no_early_acceptance", f"rank {i}: req{q} admitted while its storage lookup was "
                                     "still running (not terminated, its KV not landed) and no rank's deadline had "
                                     "fired", EARLY, self._site(rank))
            self.pending.pop((i, q), None)
            self.budgets.pop((i, q), None)
            if cutting:  # this check cut the prefetch at its deadline
                self.expired.add((i, q))
            return admitted
        if fired and not self._landed(rank, handle):  # landing only grows: not landed now, not during the check
            self.run.world.fault("progress", f"rank {i}: req{q} still waits at the first check after its deadline "
                                 "fired, and its KV has not landed", PAST_DEADLINE, self._site(rank))
        if not read and i in self.deciding and self._unlanded(rank, handle):
            # a blocked check of a lookup whose KV had not landed by its end read no clock: no deadline runs
            # for it, so no firing can ever cut it (the tree's deadline never armed, or armed and never read)
            self.run.world.fault("progress", f"rank {i}: req{q} waits for its storage lookup at a check that read "
                                 "no clock: no deadline runs for it", NO_DEADLINE, self._site(rank))
        self._same_budget(rank, q, handle)
        if read:  # this check read the clock: a deadline may run from here
            self.pending[(i, q)] = at
        return admitted

    @staticmethod
    def _per_request(rank) -> bool:
        """Whether the tree keeps one admission deadline per request (0.5.23's wait records,
        started by `_start_storage_prefetch_wait`: "refetches keep this budget", and
        prefetch_from_storage refuses a re-issue while it is expired). Before, each lookup had its
        own deadline from its issue (0.5.19-0.5.22), so a re-issue after a cut started a new,
        bounded wait by design. (The harness gives every tree an empty wait record dict.)"""
        return hasattr(type(rank.cache), "_start_storage_prefetch_wait")

    def admitted(self, rank, q: int) -> None:
        """Request q left rank's waiting queue (a retry world's admission): a retracted request's
        next lookup starts over."""
        self.expired.discard((rank.index, q))

    def _same_budget(self, rank, q: int, handle) -> None:
        """0.5.23's admission deadline runs from the request's first blocked check and survives
        its later checks and refetches (`_start_storage_prefetch_wait`: "refetches keep this
        budget"). One firing passes every deadline a rank started, so a deadline started again
        at each blocked check expires here as the kept one does; a real scheduler polls far more
        often than the timeout, and such a deadline never expires. Judged on the wait record the
        tree keeps per request (`_storage_prefetch_wait`; a tree without one is not judged so):
        a later blocked check of the same waiting request must find the timer the first one
        started."""
        waits = getattr(rank.cache, "_storage_prefetch_wait", None)
        wait = waits.get(handle) if isinstance(waits, dict) else None
        timer = getattr(wait, "timer", None)
        if timer is None:
            return
        first = self.budgets.setdefault((rank.index, q), timer)
        if first is not timer:
            self.budgets[(rank.index, q)] = timer
            self.run.world.fault("progress", f"rank {rank.index}: req{q}'s deadline started again at a later blocked "
                                 "check (its first blocked check's timer replaced)", RESTARTED, self._site(rank))

    def _cuttable(self, rank, handle) -> bool:
        """The request's lookup is in flight, not terminated, and its KV has not landed: only its
        deadline may end it now (read off the operation's fields, not through its lock: the judge
        is no step)."""
        op = _operation(rank.cache.ongoing_prefetch.get(handle))
        return op is not None and not op.__dict__.get("_terminated_flag", False) and not self._landed(rank, handle)

    def _unlanded(self, rank, handle) -> bool:
        """The request's lookup is in flight and its KV has not landed (landing only grows, so it had
        not at any moment before either)."""
        return handle in rank.cache.ongoing_prefetch and not self._landed(rank, handle)

    def _landed(self, rank, handle) -> bool:
        op = _operation(rank.cache.ongoing_prefetch.get(handle))
        if op is None:
            return False
        d = op.__dict__  # the hooks are not asked: the judge is no step
        hashes = d.get("hash_value") or []
        return d.get("host_indices") is not None and d.get("completed_tokens", 0) >= len(hashes) * self.run.config.page_size

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
        return (self.clock.key(), tuple(sorted(self.seen.items())), checked, tuple(sorted(self.pending.items())),
                tuple(sorted(self.expired)))


def _operation(entry):
    """The prefetch operation of an `ongoing_prefetch` entry: its `operation` field (UnifiedRadixCache's
    NamedTuple), or the member of a plain tuple that is one (0.5.19-0.5.20's HiRadixCache keeps
    `(last_host_node, token_ids, host_indices, operation)`); None for no entry."""
    if entry is None:
        return None
    op = getattr(entry, "operation", None)
    if op is None and isinstance(entry, tuple):
        op = next((x for x in entry if "_terminated_flag" in getattr(x, "__dict__", {})), None)
    return op


class EveryDeadlineAdmits(Deadlines):
    """The predicate-poll releases (0.5.1-0.5.18): a deadline runs from the issue (the operation's
    `start_time`, read when PrefetchOperation is built), and can_terminate_prefetch MAX-reduces
    [not can_terminate, terminated] over the ranks, so a rank whose deadline passed still waits for
    the others. The bound: in a round where every rank that checks the request began its check
    after a firing of its clock that followed the issue's reading, each rank's own verdict
    (`completed or` the timeout, read after the firing) is True, and the vote must admit the
    request on every rank. The scheduler polls every round while a request waits, so these
    deadlines ask nothing of the round gate."""

    def __init__(self, run):
        super().__init__(run)
        self.voters: dict[int, tuple[int, ...]] = {}  # request -> the ranks whose check of it this round votes
        self.votes: dict[int, dict[int, tuple[bool, bool]]] = {}  # request -> rank -> (deadline passed, admitted)

    def issue(self, rank, q: int, issue) -> None:
        """Run `issue()` (prefetch_from_storage for request q): its reading starts q's deadline."""
        _, (read, at) = self._read_in(rank.index, issue)
        if read:
            self.pending[(rank.index, q)] = at

    def fired_since_issue(self, rank: int, q: int) -> bool:
        """Whether rank's clock fired after request q's issue read it: every deadline q's operation
        runs on that rank has passed (until q is admitted there)."""
        self.run.baton.touch(clock_name(rank), write=False)
        due = self.pending.get((rank, q))
        return due is not None and self.clock.epoch.get(rank, 0) > due

    def round_starts(self, rank) -> None:
        """The first scheduler into a round names each waiting request's voters: the ranks are in
        lockstep, so every rank has finished the last round and none has checked in this one."""
        if all(rank.rounds > r.rounds for r in self.run.ranks if r is not rank):
            self.voters = {q: tuple(r.index for r in self.run.ranks if q in r.waiting)
                           for q in range(self.run.config.requests)}
            self.votes = {}

    def check(self, rank, q: int, handle, check) -> bool:
        """Run `check()` (check_prefetch_progress for request q) and, once every voter of this round
        has checked, judge the round: each passed its deadline before its check began, yet one
        still waits."""
        i = rank.index
        passed = self.fired_since_issue(i, q)
        admitted = check()
        if admitted:
            self.pending.pop((i, q), None)
        votes = self.votes.setdefault(q, {})
        votes[i] = (passed, admitted)
        if set(votes) != set(self.voters.get(q, (i,))):
            return admitted
        if all(p for p, _ in votes.values()):
            for r in sorted(r for r, (_, done) in votes.items() if not done):
                self.run.world.fault("progress", f"rank {r}: req{q} still waits at a check after every rank's deadline "
                                     "fired", PAST_DEADLINE, self._site(self.run.ranks[r]))
        del self.votes[q]
        return admitted

    def key(self) -> tuple:
        votes = tuple(sorted((q, tuple(sorted(v.items()))) for q, v in self.votes.items()))
        return self.clock.key(), tuple(sorted(self.pending.items())), tuple(sorted(self.voters.items())), votes
