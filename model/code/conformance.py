"""The conformance check: does the tree's code do what the ack-drain model does? Runs in the
executor's sandboxed child.

Model schedules are replayed on the code, and after every code step the refinement mapping's
view of the code (model/protocols/ack_drain/refinement.py) is compared with the model's: for a
model step by thread T of rank r, the code's T of rank r runs until the code's view equals the
model's state after the step. A model step that changes nothing of the view needs no code step;
a code step that changes nothing of it is a stuttering step; in between, a field the model step
leaves alone must not change. The first divergence is reported: the model step, the code's
file:line (with the tree's call stack), and the fields that differ.

The schedules: given ones (counterexamples of the shipped scenarios), and the model's reachable
states up to a budget, found breadth-first, each new rank-local view reached through the code by
replaying its path (paths that are prefixes of others are replayed as part of the longer one).

The scheduler loop is ours in both engines (SGLang's is not on the path): here it is the model's
own (model/protocols/ack_drain/scheduler.py: issue, then rounds of aborts, drain and a walk over
the waiting requests), calling the tree's cache methods, with a scheduling point where each model
step of the scheduler ends.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.harness import ROOT_NODE, Run
from prefetch_check.model.engine.readable import ReadableModel
from prefetch_check.model.protocols.ack_drain import refinement
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config

CODE_THREAD = {"S": "S", "P": "P", "I": "IO", "Y": "Y"}
STEP_CAP = 400  # code steps one model step may take
S_QUEUES = ("prefetch_hit_queue", "ack_prefetch_queue", "host_mem_release_queue")
TAKES = {"prefetch": "prefetch_queue", "io": "prefetch_buffer", "sync": "prefetch_sync_queue"}
HANDS_ON = {"prefetch": "prefetch_hit_queue", "io": "prefetch_sync_queue", "sync": "ack_prefetch_queue"}


class Unsupported(ValueError):
    """A model configuration the executor's world cannot build."""


# ---------------------------------------------------------------- configurations


def config_to_json(cfg: AckConfig) -> dict:
    out = {k: getattr(cfg, k) for k in AckConfig.__dataclass_fields__ if k != "requests"}
    out["host_pages"] = list(cfg.host_pages)
    out["requests"] = [{"pages": q.pages, "hits": list(q.hits), "failing": [sorted(f) for f in q.failing],
                        "query_raises": list(q.query_raises), "batch_raises": [sorted(b) for b in q.batch_raises],
                        "readmits": q.readmits, "abort_round": q.abort_round} for q in cfg.requests]
    return out


def config_from_json(data: dict) -> AckConfig:
    reqs = tuple(Request(pages=q["pages"], hits=tuple(q["hits"]), failing=tuple(frozenset(f) for f in q["failing"]),
                         query_raises=tuple(q["query_raises"]), batch_raises=tuple(frozenset(b) for b in q["batch_raises"]),
                         readmits=q["readmits"], abort_round=q["abort_round"]) for q in data["requests"])
    rest = {k: v for k, v in data.items() if k != "requests"}
    rest["host_pages"] = tuple(rest["host_pages"])
    return AckConfig(requests=reqs, **rest)


def code_config(cfg: AckConfig) -> CodeConfig:
    """The executor's world for a model configuration, or Unsupported saying what it lacks."""
    why = unsupported(cfg)
    if why:
        raise Unsupported(why)
    first = cfg.requests[0]
    return CodeConfig(
        ranks=cfg.ranks, requests=cfg.num_requests, pages=first.pages, page_size=cfg.page_size, policy=cfg.policy,
        hits=tuple(first.hits), failing=tuple(tuple(sorted(f)) for f in first.failing),
        query_raises=tuple(first.query_raises), threshold_pages=cfg.prefetch_threshold // cfg.page_size,
        reissue=any(q.readmits for q in cfg.requests))


def unsupported(cfg: AckConfig) -> str:
    """'' when the executor can build this configuration's world, else what it lacks."""
    if cfg.cache != "unified":
        return "the executor runs UnifiedRadixCache (cache = \"unified\")"
    if cfg.policy not in ("wait_complete", "best_effort"):
        return f"policy {cfg.policy}: the executor's clock does not move"
    first = cfg.requests[0]
    for q in cfg.requests:
        if (q.pages, q.hits, q.failing, q.query_raises) != (first.pages, first.hits, first.failing, first.query_raises):
            return "requests that differ in pages, hits, failing pages or raising queries"
    if any(any(q.batch_raises) for q in cfg.requests):
        return "batch reads that raise (the storage stand-in's reads do not raise)"
    if any(q.readmits > 1 for q in cfg.requests):
        return "more than one readmission (the host pool has room for two prefetches)"
    if any(p is not None for p in cfg.host_pages):
        return "host_pages (a short pool: the allocation evicts first, tree_core.drive_host_eviction, not modelled)"
    if cfg.prefetch_threshold % cfg.page_size:
        return "a threshold that is not whole pages"
    return ""


# ---------------------------------------------------------------- the budget of prefetch-check sglang

E = frozenset()


@dataclass(frozen=True)
class Budget:
    """One small configuration whose reachable states are replayed on the code: the first path to
    every new rank-local view up to `states` states, every step out of the first `near` ones, and
    with cover "steps" every step out of a state with a view of all ranks not seen before."""

    name: str
    config: dict  # AckConfig keywords, before the release's options
    states: int
    near: int
    cover: str = "near"


BUDGETS: tuple[Budget, ...] = (
    Budget("1 rank x 1 request, 2 pages", dict(ranks=1, pages=2), 20_000, 20_000),
    Budget("2 ranks x 1 request", dict(ranks=2, pages=1), 20_000, 300, "steps"),
    Budget("2 ranks, rank 1 cannot read page 0, a batch per page",
           dict(ranks=2, pages=2, failing={1: {0}}, storage_batch_size=1), 20_000, 300),
    Budget("1 rank, best_effort, prefetched again",
           dict(requests=(Request(pages=1, hits=(1,), failing=(E,), readmits=1),), policy="best_effort"), 20_000, 600),
    Budget("1 rank, aborted in round 1",
           dict(requests=(Request(pages=2, hits=(2,), failing=(E,), abort_round=1),), storage_batch_size=1),
           20_000, 300),
    Budget("1 rank x 2 requests", dict(ranks=1, requests=2, pages=1), 20_000, 300),
    Budget("2 ranks, rank 1's storage query raises",
           dict(requests=(Request(pages=2, hits=(2, 2), failing=(E, E), query_raises=(False, True)),)), 20_000, 300),
)


def budget_config(budget: Budget, options: dict) -> AckConfig:
    """The budget's configuration with a release's options (ack_match, deadline, exceptions...)."""
    kwargs = dict(budget.config, **options)
    if "requests" in kwargs and not isinstance(kwargs["requests"], int):
        reqs = kwargs.pop("requests")
        return AckConfig(ranks=len(reqs[0].hits), requests=reqs, **{k: v for k, v in kwargs.items() if k != "ranks"})
    return uniform_ack_config(**kwargs)


# ---------------------------------------------------------------- the run


class ConformRun(Run):
    """The executor's run with the model's scheduler loop, and what the mapping reads recorded:
    the scheduler's place, the item each storage thread holds, the pages written per operation."""

    def __init__(self, modules, model_config: AckConfig, config: CodeConfig, holder, roots):
        self.model_config = model_config
        super().__init__(modules, config, holder, roots)
        for rank in self.ranks:
            rank.pos, rank.ready, rank.aborted = ("issue", 0), [False] * config.requests, [False] * config.requests
            rank.gen, rank.holding, rank.writes = [0] * config.requests, {}, {}
            rank.in_drain, rank.sizes_read, rank.decided, rank.releasing = False, set(), False, set()
            self._record(rank)
        self.baton.observe = _deciding(self.baton.observe, self.baton, self.ranks)

    # ---- recorders (instance attributes over the stand-ins' methods)
    def _record(self, rank) -> None:
        cc, baton = rank.cc, self.baton
        for role, name in TAKES.items():
            q = getattr(cc, name)
            q.get = _taking(q.get, rank, role, baton)
        for role, name in HANDS_ON.items():
            q = getattr(cc, name)
            q.put = _handing_on(q.put, rank, role, baton)
        for name in S_QUEUES:
            q = getattr(cc, name)
            q.qsize = _sizing(q.qsize, rank, name, baton)
        release = cc.host_mem_release_queue
        release.get = _releasing(release.get, rank)
        pool = rank.pool
        pool.set_from_flat_data_page = _writing(pool.set_from_flat_data_page, rank, self)
        pool.free = _freeing(pool.free, rank)

    # ---- the model's scheduler loop (scheduler.py), calling the tree's cache methods
    def _at(self, rank, pos: tuple, what: str = "") -> None:
        rank.pos = pos
        self.baton.point(f"conformance: {what or ' '.join(map(str, pos))}")

    def _scheduler(self, rank) -> None:
        cfg, cache = self.model_config, rank.cache
        for q in range(cfg.num_requests):
            self._at(rank, ("issue", q))
            cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, self.tokens(q))
        drains = 0
        while True:
            self._at(rank, ("round",))
            for q, spec in enumerate(cfg.requests):
                if spec.abort_round == drains and not rank.aborted[q]:
                    self._at(rank, ("round",), f"abort q{q}")
                    self.world.draining.pop(rank.index, None)
                    cache.release_aborted_request(rank.handles[q])
                    rank.aborted[q] = rank.ready[q] = True
            rank.in_drain, rank.sizes_read = True, set()
            cache.check_hicache_events()
            rank.in_drain = False
            if drains <= cfg.last_abort_round:
                drains += 1
            q, checked = self._next(rank, -1, 0)
            while q is not None:
                self._at(rank, ("walk", q))
                self.world.draining.pop(rank.index, None)
                if rank.ready[q]:  # admitted before, preempted since: admitted again
                    rank.gen[q] += 1
                    rank.ready[q] = False
                    cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, self.tokens(q))
                else:
                    checked += 1
                    rank.ready[q] = bool(cache.check_prefetch_progress(rank.handles[q]))
                q, checked = self._next(rank, q, checked)

    def _next(self, rank, after: int, checked: int):
        """scheduler.py's next_in_walk: the next request the walk reaches this round."""
        cfg = self.model_config
        if cfg.admission_limit and checked >= cfg.admission_limit:
            return None, checked
        for q in range(after + 1, cfg.num_requests):
            if rank.aborted[q]:
                continue
            if not rank.ready[q] or rank.gen[q] + 1 < cfg.requests[q].generations:
                return q, checked
        return None, checked


def _role(baton) -> Optional[str]:
    me = baton.current()
    return me.role if me is not None else None


def _taking(get, rank, role, baton):
    def taking(*args, **kwargs):
        item = get(*args, **kwargs)
        if _role(baton) == role:
            rank.holding[role] = item
            rank.decided = rank.decided and role != "prefetch"
        return item
    return taking


def _deciding(observe, baton, ranks):
    """The prefetch thread's take ends where it has read whether its operation is terminated
    (the model's P.take reads the flag with the pop; the code reads it one point later)."""
    def deciding(value: str) -> None:
        observe(value)
        me = baton.current()
        if me is not None and me.role == "prefetch" and "._terminated_flag=" in value:
            ranks[me.rank].decided = True
    return deciding


def _handing_on(put, rank, role, baton):
    def handing_on(item, *args, **kwargs):
        put(item, *args, **kwargs)
        if _role(baton) == role and (role != "io" or item.__dict__.get("completed_req")):
            rank.holding[role] = None
    return handing_on


def _sizing(qsize, rank, name, baton):
    def sizing(*args, **kwargs):
        n = qsize(*args, **kwargs)
        if _role(baton) == "scheduler" and rank.in_drain:
            rank.sizes_read.add(name)
            if len(rank.sizes_read) == len(S_QUEUES):  # the model's drain_arrive ends here
                rank.pos = ("drain",)
                baton.point("conformance: the drain's sizes read")
        return n
    return sizing


def _releasing(get, rank):
    """Slots the drain took off host_mem_release_queue stay given back until it frees them."""
    def releasing(*args, **kwargs):
        item = get(*args, **kwargs)
        rank.releasing.update(item.data)
        return item
    return releasing


def _freeing(free, rank):
    def freeing(indices, *args, **kwargs):
        free(indices, *args, **kwargs)
        rank.releasing.difference_update(indices.data)
    return freeing


def _writing(write, rank, run):
    def writing(index, data, *args, **kwargs):
        write(index, data, *args, **kwargs)
        slot = index.item() if hasattr(index, "item") else int(index)
        op = refinement.owner(refinement.operations(run, rank.index), slot)
        if op is not None:
            page = op.__dict__["host_indices"].data.index(slot) // run.config.page_size
            rank.writes.setdefault(op.__dict__["_pc_label"], set()).add(page)
    return writing


# ---------------------------------------------------------------- replaying one schedule


@dataclass
class Divergence:
    step: int  # 1-based model step
    action: str
    description: str
    site: str  # the code's file:line where it showed
    stack: list[str]
    fields: dict  # field -> {"model": ..., "code": ...}
    schedule: list[str]
    why: str

    def to_json(self) -> dict:
        return {k: _plain(v) for k, v in self.__dict__.items()}


@dataclass
class Replayed:
    matched: int  # model steps matched
    code_steps: int
    divergence: Optional[Divergence] = None
    not_modelled: str = ""


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


def replay(executor, model, states: list, actions: list) -> Replayed:
    protocol = model.protocol
    run = ConformRun(executor.modules, protocol.config, code_config(protocol.config), executor.holder, executor.roots)
    views = [refinement.model_view(protocol, s) for s in states]
    threads = {m.name: m for m in run.baton.threads}
    out = Replayed(0, 0)
    at = {"k": 0, "running": None, "count": 0, "stack": [], "site": "", "started": False, "placed": None}

    def diverge(why, cur, target, fields=None):
        k = at["k"]
        keys = fields if fields is not None else sorted(f for f in set(cur) | set(target) if cur.get(f) != target.get(f))
        out.divergence = Divergence(
            k + 1, actions[k].id, model.describe(states[k], actions[k], states[k + 1]), at["site"], at["stack"],
            {f: {"model": target.get(f, "-"), "code": cur.get(f, "-")} for f in keys},
            [a.id for a in actions[: k + 1]], why)

    def decide():
        cur = refinement.code_view(protocol, run)
        if not at["started"]:
            at["started"] = True
            if cur != views[0]:
                at["k"] = -1
                out.divergence = Divergence(0, "", "the initial state", "", [], {
                    f: {"model": views[0].get(f, "-"), "code": cur.get(f, "-")}
                    for f in sorted(set(cur) | set(views[0])) if cur.get(f) != views[0].get(f)}, [], "initial states differ")
                return None
        if at["running"] is not None:
            k = at["k"]
            pre, target = views[k], views[k + 1]
            place = f"r{actions[k].rank}.{CODE_THREAD[actions[k].thread]}"
            if cur == target:
                at["running"] = None
                at["k"] += 1
                out.matched += 1
            elif at["placed"] is not None and cur.get(place) != target.get(place):
                # the thread reached the model's place after the step with other fields not as the
                # model has them, and went on: the divergence is what it left behind there
                cur, at["site"], at["stack"] = at["placed"]
                diverge("the code's step ends with fields the model's step does not leave", cur, target)
                return None
            else:
                if cur.get(place) == target.get(place) != pre.get(place) and at["placed"] is None:
                    at["placed"] = (cur, at["site"], at["stack"])
                bad = sorted(f for f in set(pre) | set(target) | set(cur)
                             if pre.get(f) == target.get(f) and cur.get(f) != pre.get(f)
                             and not _in_transit(actions[k], f))
                if bad:
                    diverge("the code changed what this model step leaves alone", cur, target, bad)
                    return None
        while at["running"] is None:
            k = at["k"]
            if k == len(actions):
                return None
            if views[k] == views[k + 1]:  # the model step changes nothing the mapping sees
                at["k"] += 1
                out.matched += 1
                continue
            a = actions[k]
            if a.thread not in CODE_THREAD:
                raise Unsupported(f"model step {a.id}: the executor has no thread {a.thread}")
            at["running"], at["count"], at["placed"] = threads[f"{CODE_THREAD[a.thread]}{a.rank}"], 0, None
        m = at["running"]
        if m.status == "dead" and m.error and m.error[0].startswith("not modelled"):
            out.not_modelled = m.error[0]
            return None
        if m.status != "parked" or not m.point.enabled():
            where = f"{m.point.label} at {m.point.site}" if m.status == "parked" else m.status
            if m.status == "dead" and m.error:
                at["site"], where = m.error[1], f"dead: {m.error[0]}"
            diverge(f"the code's {m.name} cannot go on ({where}) before it reaches the model's step", cur, views[at["k"] + 1])
            return None
        at["count"] += 1
        if at["count"] > STEP_CAP:
            diverge(f"the code's {m.name} took {STEP_CAP} steps without reaching the model's step", cur, views[at["k"] + 1])
            return None
        at["site"], at["stack"] = m.point.site, _stack(m, executor.roots)
        out.code_steps += 1
        return m

    try:
        run.baton.run(decide)
    finally:
        run.baton.abandon()
    return out


def _in_transit(action, f: str) -> bool:
    """Fields one drain may change and change back (the tail it queues for release, the entries
    it frees): the model's drain is one step, the code's a run of pops and frees."""
    return action.thread == "S" and action.step == "drain" and (
        f.endswith(".host_mem_release_queue") or f.endswith(".slots"))


def _stack(m, roots) -> list[str]:
    """The tree's frames of a parked thread, innermost first: file:line (function)."""
    out, frame = [], m.thread.gr_frame if m.thread is not None else None
    while frame is not None:
        name = frame.f_code.co_filename
        for root in roots:
            if name.startswith(root):
                out.append(f"{name[len(root):].lstrip('/')}:{frame.f_lineno} ({frame.f_code.co_name})")
        frame = frame.f_back
    return out


# ---------------------------------------------------------------- the schedules


def reachable_schedules(model, budget: int, cover: str = "local",
                        near: Optional[int] = None) -> tuple[list[list[str]], int, int]:
    """Breadth-first over the model's states, up to `budget` states: the action-id paths that
    reach every rank-local view found ("local"); every view of all ranks together ("global");
    every state within the first `near` (default: all, "states"); every step out of those
    ("near"), and out of every state with a view of all ranks not seen before ("steps"); none a
    prefix of another. Returns the paths, the states seen and the rank-local views."""
    protocol = model.protocol
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
        views = [tuple(sorted(refinement.model_rank_view(protocol, rank).items())) for rank in state]
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

    def to_json(self) -> dict:
        return dict(self.__dict__)


def check(executor, name: str, protocol_cls, cfg: AckConfig, budget: int, schedules: list[list[str]] = (),
          cover: str = "local", near: Optional[int] = None) -> Conformance:
    """Replay the given schedules, then the paths to the model's rank-local views up to
    `budget` states (0: none); stop at the first divergence."""
    start = time.monotonic()
    result = Conformance(name, cover, counterexamples=len(schedules))
    why = unsupported(cfg)
    if why:
        result.unsupported = why
        return result
    model = ReadableModel(protocol_cls(cfg, "fixed"))
    todo = [list(s) for s in schedules]
    if budget:
        paths, result.model_states, result.local_views = reachable_schedules(model, budget, cover, near)
        todo += paths
    compared: set = set()
    for ids in todo:
        states, actions = model_path(model, ids)
        out = replay(executor, model, states, actions)
        result.schedules += 1
        result.code_steps += out.code_steps
        compared.update(states[: out.matched + 1])
        if out.not_modelled:
            result.not_modelled = out.not_modelled
            break
        if out.divergence is not None:
            result.divergence = out.divergence.to_json()
            break
    result.states = len(compared)
    result.seconds = round(time.monotonic() - start, 3)
    return result


def protocol_class(spec: str):
    """The model to conform to: "" (the ack-drain protocol) or a mutant's name (mutants.py)."""
    from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol

    if not spec:
        return AckDrainProtocol
    from prefetch_check.model.protocols.ack_drain.mutants import BY_NAME

    return BY_NAME[spec]


def counterexample_schedules(protocol_cls, cfg: AckConfig) -> list[list[str]]:
    """The model's counterexamples of every property in this configuration (lassos: prefix and
    one pass of the cycle), searched on the readable model."""
    from prefetch_check.explorer.check import check as search

    result = search(ReadableModel(protocol_cls(cfg, "fixed")))
    out = []
    for pr in result.results.values():
        if pr.trace is not None:
            ids = [s.action_id for s in pr.trace.steps]
            if ids not in out:
                out.append(ids)
    return sorted(out, key=len)


def serve(executor, request: dict) -> dict:
    """The child's side: {"configs": [{"name", "config", "budget", "cover", "near", "counterexamples",
    "mutant"}]}."""
    answers = []
    for item in request["configs"]:
        cfg = config_from_json(item["config"])
        cls = protocol_class(item.get("mutant", ""))
        _batch_size(executor, cfg.storage_batch_size)
        schedules = []
        if item.get("counterexamples") and not unsupported(cfg):
            schedules = counterexample_schedules(cls, cfg)
        answers.append(check(executor, item["name"], cls, cfg, item.get("budget", 0), schedules,
                             item.get("cover", "local"), item.get("near")).to_json())
    return {"conformance": answers}


def _batch_size(executor, size: int) -> None:
    """The tree's STORAGE_BATCH_SIZE set to the model's (a constant of the world, 128 upstream)."""
    for mod in executor.modules.values():
        if "STORAGE_BATCH_SIZE" in mod.__dict__:
            mod.__dict__["STORAGE_BATCH_SIZE"] = size


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
