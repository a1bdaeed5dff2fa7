"""The prefetch protocol as an explorer model: every thread of every rank, interleaved.

`PrefetchProtocol(config, predicate)` is all the explorer needs (see
`explorer/interface.py`). Mutants of the protocol override one step method.
"""

from __future__ import annotations

from prefetch_check.model.actions import ACTION_KINDS, THREAD_NAMES, Action
from prefetch_check.model.clock import ClockSteps
from prefetch_check.model.config import Config
from prefetch_check.model.describe import describe_step
from prefetch_check.model.io_thread import IOThreadSteps
from prefetch_check.model.predicates import OperationView, Predicate
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.prefetch_thread import PrefetchThreadSteps
from prefetch_check.model.properties import build_properties
from prefetch_check.model.scheduler import SchedulerSteps
from prefetch_check.model.state import C_COMPLETED, C_DRAIN, C_HITS, C_TERMINATE, S_DRAIN, initial_state

_COLLECTIVE_NAMES = {
    C_HITS: "all_reduce(MIN hits)",
    C_DRAIN: "all_reduce(MIN queue sizes) of drain",
    C_TERMINATE: "all_reduce(MAX [not can_terminate, terminated])",
    C_COMPLETED: "all_reduce(MIN completed_tokens)",
}


class PrefetchProtocol(SchedulerSteps, PrefetchThreadSteps, IOThreadSteps, ClockSteps):
    """The protocol of PROTOCOL.md for one configuration and one completion predicate."""

    thread_names = THREAD_NAMES  # for viewers: S -> scheduler, P -> prefetch, ...

    def __init__(self, config: Config, predicate: Predicate | str = "fixed", name: str | None = None):
        if isinstance(predicate, str):
            name, predicate = load_predicate(predicate)
        self.config = config
        self.predicate = predicate
        self.predicate_name = name or getattr(predicate, "__name__", "predicate")
        self._decisions: dict = {}
        self._hashes = tuple(tuple(f"h{i}" for i in range(n)) for n in range(max(q.pages for q in config.requests) + 1))
        self._properties = build_properties(self)

    # ---- explorer interface ----

    def initial_states(self):
        return [initial_state(self.config.ranks, self.config.num_requests)]

    def successors(self, state) -> list:
        out = []
        for r in range(self.config.ranks):
            out += self.scheduler_steps(state, r)
            out += self.prefetch_steps(state, r)
            out += self.io_steps(state, r)
            out += self.clock_steps(state, r)
        return out

    def properties(self):
        return self._properties

    def actor(self, action: Action):
        return action.actor

    def action_id(self, action: Action) -> str:
        return action.id

    def action_kind(self, action: Action) -> str:
        return action.kind

    def action_kinds(self):
        return ACTION_KINDS

    def describe(self, state, action: Action, next_state) -> str:
        return describe_step(self, state, action, next_state)

    # ---- protocol facts used by steps, properties and traces ----

    def view(self, state, r: int, q: int) -> OperationView:
        return self.view_of(state[r].ops[q])

    def view_of(self, op) -> OperationView:
        return OperationView(
            hash_value=self._hashes[op.hash_value],
            completed_tokens=op.completed * self.config.page_size,
            page_size=self.config.page_size,
            terminated=op.terminated,
            policy=self.config.policy,
            timed_out=op.timed_out,
        )

    def decide(self, state, r: int, q: int) -> bool:
        """The predicate's local answer (memoised: a predicate must be a pure function)."""
        return self.decide_op(state[r].ops[q])

    def decide_op(self, op) -> bool:
        key = (op.hash_value, op.completed, op.terminated, op.timed_out)
        known = self._decisions.get(key)
        if known is None:
            known = self._decisions[key] = bool(self.predicate(self.view_of(op)))
        return known

    def quiescent(self, state) -> bool:
        """Every request resolved and every thread idle with nothing queued for it.

        The scheduler then only drains, round after round; where it is in that loop does
        not matter (and must not: the reduced search visits only some loop positions).
        """
        for rank in state:
            if rank.p_pc >= 0 or rank.i_pc:
                return False
            if rank.prefetch_queue or rank.prefetch_buffer:
                return False
            if not all(op.ready for op in rank.ops):
                return False
        return True

    def collective_name(self, tag) -> str:
        kind, q = tag
        name = _COLLECTIVE_NAMES[kind]
        return name if q < 0 else f"{name} for request {q}"

    def fields(self, state) -> dict:
        """A flat, readable view of the state (`r0.q0.hash_value` -> 2), for trace viewers and diffs."""
        out = {}
        ps = self.config.page_size
        for r, rank in enumerate(state):
            out[f"r{r}.scheduler"] = _scheduler_pc(rank.s_pc)
            out[f"r{r}.prefetch"] = "idle" if rank.p_pc < 0 else f"q{rank.p_pc}: waiting in all_reduce(MIN hits)"
            out[f"r{r}.io"] = _io_pc(rank.i_pc)
            out[f"r{r}.prefetch_queue"] = list(rank.prefetch_queue)
            out[f"r{r}.prefetch_buffer"] = list(rank.prefetch_buffer)
            out[f"r{r}.revoke_queue"] = list(rank.revoke_queue)
            out[f"r{r}.host_mem_release_queue"] = rank.release_queue
            out[f"r{r}.scheduler_collective"] = self._register(rank.s_coll)
            out[f"r{r}.prefetch_collective"] = self._register(rank.p_coll)
            for q, op in enumerate(rank.ops):
                p = f"r{r}.q{q}."
                out[p + "issued"] = op.issued
                out[p + "stage"] = ("queued", "queried", "revoked", "published")[op.stage]
                out[p + "in_ongoing_prefetch"] = op.ongoing
                out[p + "ready"] = op.ready
                out[p + "hash_value"] = f"{op.hash_value} page(s)"
                out[p + "pages_written"] = op.written
                out[p + "completed_tokens"] = op.completed * ps
                out[p + "terminated"] = op.terminated
                out[p + "io_failed"] = op.io_failed
                if self.config.policy == "timeout":
                    out[p + "timed_out"] = op.timed_out
                out[p + "host_slots"] = "".join(".RTX"[s] for s in op.slots) or "-"
                out[p + "inserted_tokens"] = "-" if op.inserted < 0 else op.inserted
        return out


    def _register(self, reg) -> str:
        if not reg:
            return "-"
        name = self.collective_name(reg[0])
        if reg[1] == 0:  # WAITING
            return f"arrived in {name} with {list(reg[2])}"
        return f"{name} done: {list(reg[2])}"


def _scheduler_pc(pc) -> str:
    from prefetch_check.model.state import S_CHECK, S_DRAIN_WAIT, S_ISSUE, S_MAX_WAIT, S_MIN_WAIT

    kind, q = pc
    return {
        S_ISSUE: f"issue q{q}",
        S_DRAIN: "drain (round start)",
        S_DRAIN_WAIT: "waiting in drain all_reduce(MIN)",
        S_CHECK: f"check q{q}",
        S_MAX_WAIT: f"q{q}: waiting in all_reduce(MAX)",
        S_MIN_WAIT: f"q{q}: waiting in all_reduce(MIN completed)",
    }[kind]


def _io_pc(pc) -> str:
    from prefetch_check.model.state import IO_COUNT, IO_READ

    if not pc:
        return "idle"
    q, page, phase = pc
    if phase == IO_READ:
        return f"q{q}: read page {page}"
    if phase == IO_COUNT:
        return f"q{q}: increment page {page}"
    return f"q{q}: release"
