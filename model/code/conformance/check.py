"""The conformance check: does the tree's code do what its protocol's model does? Runs in the
executor's sandboxed child.

Model schedules are replayed on the code, and after every code step the refinement mapping's
view of the code (the protocol's refinement.py, which its world pack's `ConformanceKit` names)
is compared with the model's: for a model step by thread T of rank r, the code's T of rank r
runs until the code's view equals the model's state after the step. A model step that changes
nothing of the view needs no code step; a code step that changes nothing of it is a stuttering
step; in between, a field the model step leaves alone must not change. The first divergence is
reported: the model step, the code's file:line (with the tree's call stack), and the fields
that differ.

The schedules: given ones (counterexamples of the shipped scenarios), and the model's reachable
states up to a budget, found breadth-first, each new rank-local view reached through the code by
replaying its path (paths that are prefixes of others are replayed as part of the longer one).

The replay of one path is strategies/guided.py (the model guides which code thread runs); the
run itself is the world's conformance_run.py (the model's scheduler loop over the tree's
cache methods), the configurations and the budget its conformance_configs.py.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.model.code.pack import ConformanceKit, pack
from prefetch_check.model.code.rt.executor import drive
from prefetch_check.model.code.strategies.guided import ModelGuided, Replayed
from prefetch_check.model.engine.readable import ReadableModel


def conformance_kit(protocol: str) -> ConformanceKit:
    """What the replay loop needs of a registered protocol (its world pack's conformance side)."""
    found = pack(protocol).conformance
    if found is None:
        raise ValueError(f"no conformance check for protocol {protocol!r}")
    return found


# ---------------------------------------------------------------- replaying one schedule


def model_path(model, ids: list[str]) -> tuple[list, list]:
    """The states and actions of a schedule of action ids from the initial state."""
    state = model.initial_states()[0]
    states, actions = [state], []
    for text in ids:
        nxt = next(((a, s) for a, s in model.successors(state) if a.id == text), None)
        if nxt is None:
            raise ValueError(f"the model has no step {text} after {len(actions)} steps")
        actions.append(nxt[0])
        state = nxt[1]
        states.append(state)
    return states, actions


def replay(executor, model, states: list, actions: list, kit: ConformanceKit) -> Replayed:
    """One model path replayed on a fresh conformance run of the tree's code (strategies/guided.py)."""
    executor.starting()
    run = kit.make_run(executor, model.protocol)
    guided = ModelGuided(model, states, actions, kit, run, executor.roots)
    try:
        drive(run, guided)
    finally:
        run.baton.abandon()
    return guided.out


# ---------------------------------------------------------------- the schedules


def reachable_schedules(model, budget: int, cover: str, near: Optional[int],
                        kit: ConformanceKit) -> tuple[list[list[str]], int, int]:
    """Breadth-first over the model's states, up to `budget` states: the action-id paths that
    reach every rank-local view found ("local"); every view of all ranks together ("global");
    every state within the first `near` (default: all, "states"); every step out of those
    ("near"), and out of every state with a view of all ranks not seen before ("steps"); none a
    prefix of another. Returns the paths, the states seen and the rank-local views."""
    protocol = model.protocol
    mapping = kit.refinement
    near = budget if near is None else near
    start = model.initial_states()[0]
    parent = {start: None}
    order = deque([start])
    local: set = set()
    wholes: set = set()
    new_local, extra = [], []
    seen = 0
    while order and seen < budget:
        state = order.popleft()
        seen += 1
        close = seen <= near
        views = [tuple(sorted(mapping.model_rank_view(protocol, rank).items())) for rank in state]
        whole = tuple(views)
        new_whole = whole not in wholes
        wholes.add(whole)
        if any(v not in local for v in views):
            local.update(views)
            new_local.append(state)
        elif close and cover in ("states", "steps", "near") or cover == "global" and new_whole:
            new_local.append(state)
        for action, nxt in model.successors(state):
            if nxt not in parent:
                parent[nxt] = (state, action)
                order.append(nxt)
            elif (close and cover in ("steps", "near")) or (cover == "steps" and new_whole):
                extra.append((state, action))  # a step the tree of first paths does not take
    inner = set()
    for state in new_local:
        p = parent[state]
        while p is not None:
            inner.add(p[0])
            p = parent[p[0]]

    def path(s) -> list[str]:
        ids = []
        while parent[s] is not None:
            s, action = parent[s]
            ids.append(action.id)
        return ids[::-1]

    paths = [path(state) for state in new_local if state not in inner]
    paths += [path(state) + [action.id] for state, action in extra if state in parent]
    paths.sort(key=len)
    return paths, seen, len(local)


THREAD_ORDER = ("S", "P", "I", "Y", "C")


def greedy_schedules(model, count: int, cap: int = 5_000) -> list[list[str]]:
    """`count` whole runs of the model, for a configuration too long to search breadth-first (a
    request of more pages than one storage batch): run p prefers the threads in THREAD_ORDER
    rotated by p (lowest rank first) and takes, at every state, the first step into a state the
    run has not been in; it ends where there is none (the end, or a cycle closed)."""
    start = model.initial_states()[0]
    out = []
    for p in range(count):
        order = THREAD_ORDER[p % len(THREAD_ORDER):] + THREAD_ORDER[: p % len(THREAD_ORDER)]
        rank_first = p // len(THREAD_ORDER) % 2 == 1  # the second lap prefers the highest rank

        def preference(step, order=order, rank_first=rank_first):
            action = step[0]
            where = order.index(action.thread) if action.thread in order else len(order)
            return (where, -action.rank if rank_first else action.rank)

        state, seen, ids = start, {start}, []
        while len(ids) < cap:
            nxt = next(((a, t) for a, t in sorted(model.successors(state), key=preference) if t not in seen), None)
            if nxt is None:
                break
            ids.append(nxt[0].id)
            state = nxt[1]
            seen.add(state)
        if ids not in out:
            out.append(ids)
    return out


@dataclass
class Conformance:
    """What the conformance check did for one configuration, and the first divergence."""

    name: str
    cover: str = "local"
    schedules: int = 0
    states: int = 0  # distinct model states compared along the replays
    model_states: int = 0  # states the breadth-first search reached (the budget)
    local_views: int = 0
    code_steps: int = 0
    seconds: float = 0.0
    divergence: Optional[dict] = None
    not_modelled: str = ""
    unsupported: str = ""
    counterexamples: int = 0
    kinds: list = field(default_factory=list)  # the model's step kinds replayed on the code (matched), sorted

    def to_json(self) -> dict:
        return dict(self.__dict__)


def check(executor, name: str, protocol_cls, cfg, budget: int, schedules: list[list[str]], cover: str,
          near: Optional[int], kit: ConformanceKit, predicate="fixed") -> Conformance:
    """Replay the given schedules, then the paths to the model's rank-local views up to
    `budget` states (0: none), or with cover "runs" `budget` whole runs (greedy_schedules), the
    model under `predicate`; stop at the first divergence."""
    start = time.monotonic()
    result = Conformance(name, cover, counterexamples=len(schedules))
    why = kit.unsupported(cfg)
    if why:
        result.unsupported = why
        return result
    model = ReadableModel(protocol_cls(cfg, predicate))
    todo = [list(s) for s in schedules]
    if budget and cover == "runs":
        todo += greedy_schedules(model, budget)
    elif budget:
        paths, result.model_states, result.local_views = reachable_schedules(model, budget, cover, near, kit)
        todo += paths
    compared: set = set()
    kinds: set = set()
    for ids in todo:
        states, actions = model_path(model, ids)
        out = replay(executor, model, states, actions, kit)
        result.schedules += 1
        result.code_steps += out.code_steps
        compared.update(states[: out.matched + 1])
        kinds.update(model.action_kind(a) for a in actions[: out.matched])
        if out.not_modelled:
            result.not_modelled = out.not_modelled
            break
        if out.divergence is not None:
            result.divergence = out.divergence.to_json()
            break
    result.states = len(compared)
    result.kinds = sorted(kinds)
    result.seconds = round(time.monotonic() - start, 3)
    return result


def counterexample_schedules(protocol_cls, cfg, predicate="fixed") -> list[list[str]]:
    """The model's counterexamples of every property in this configuration (lassos: prefix and
    one pass of the cycle), searched on the readable model."""
    from prefetch_check.explorer.check import check as search

    result = search(ReadableModel(protocol_cls(cfg, predicate)))
    out = []
    for pr in result.results.values():
        if pr.trace is not None:
            ids = [s.action_id for s in pr.trace.steps]
            if ids not in out:
                out.append(ids)
    return sorted(out, key=len)


def serve(executor, request: dict) -> dict:
    """The child's side: {"configs": [{"name", "config", "budget", "cover", "near", "counterexamples",
    "mutant", "protocol" (a registered protocol's name; default: the executor's world), "predicate" ("": the fixed one, or
    the tree's own as "FILE.py:Class.method" below its srt folder, read from source)}]}."""
    answers, originals = [], {}
    for item in request["configs"]:
        kit = conformance_kit(item.get("protocol", executor.config.world))
        cfg = kit.config_from_json(item["config"])
        cls = kit.protocol_class(item.get("mutant", ""))
        predicate = tree_predicate(executor, item.get("predicate", ""))
        if kit.release_batch_size:  # a world whose tree has a storage batch constant
            _batch_size(executor, cfg.storage_batch_size, kit.release_batch_size, originals)
        schedules = []
        if item.get("counterexamples") and not kit.unsupported(cfg):
            schedules = counterexample_schedules(cls, cfg, predicate)
        answers.append(check(executor, item["name"], cls, cfg, item.get("budget", 0), schedules,
                             item.get("cover", "local"), item.get("near"), kit, predicate).to_json())
    return {"conformance": answers}


def tree_predicate(executor, spec: str):
    """The model's completion predicate: "fixed", or the tree's own (`FILE.py:Class.method` below
    its srt folder), read from source with `ast` (model/source/predicate.py), never imported."""
    if not spec:
        return "fixed"
    from prefetch_check.model.source.predicate import load_source_predicate

    rel, _, qualname = spec.partition(":")
    return load_source_predicate(f"{executor.srt / rel}:{qualname}")[1]


def _batch_size(executor, size: int, release_size: int, originals: dict) -> None:
    """The tree's STORAGE_BATCH_SIZE as this configuration needs it. The model's size is the
    releases' constant (`release_size`, the kit's, hicache_storage.py) unless the
    configuration sets another; only then is the tree's constant replaced (a smaller world that
    says nothing of the constant). Otherwise the tree keeps its own, so an edited constant
    shows as a divergence. `originals` keeps the tree's values across configurations."""
    for name, mod in executor.modules.items():
        if "STORAGE_BATCH_SIZE" in mod.__dict__:
            originals.setdefault(name, mod.__dict__["STORAGE_BATCH_SIZE"])
            mod.__dict__["STORAGE_BATCH_SIZE"] = size if size != release_size else originals[name]
