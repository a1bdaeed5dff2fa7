"""The model configurations the conformance check replays (conformance.py): how one travels to
the executor's child as JSON, the executor's world it needs (CodeConfig), what that world cannot
build, and the budget `prefetch-check sglang` uses, one small configuration each."""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import Unsupported
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config

PROTOCOL = "ack-drain"


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
        reissue=any(q.readmits for q in cfg.requests), world=PROTOCOL, driven_clock=cfg.policy == "timeout", host_pages=cfg.host_pages[0] if cfg.host_pages else None,
        raising_reads=tuple(tuple(sorted(b * cfg.storage_batch_size for b in raising)) for raising in first.batch_raises)
        if any(first.batch_raises) else None)


def unsupported(cfg: AckConfig) -> str:
    """'' when the executor can build this configuration's world, else what it lacks."""
    if cfg.cache != "unified":
        return ("the conformance check runs UnifiedRadixCache (cache = \"unified\"); the HiRadixCache world "
                "(cache = \"hiradix\") has no refinement mapping yet")
    if cfg.policy == "timeout" and (cfg.num_requests > 1 or any(q.readmits for q in cfg.requests)):
        # the conformance check fires a rank's clock: every deadline of that rank expires at once,
        # the model's timeout is one operation's
        return "the timeout policy with more than one prefetch (the executor's clock is per rank, the model's per operation)"
    first = cfg.requests[0]
    for q in cfg.requests:
        if (q.pages, q.hits, q.failing, q.query_raises, q.batch_raises) != (
                first.pages, first.hits, first.failing, first.query_raises, first.batch_raises):
            return "requests that differ in pages, hits, failing pages, raising queries or raising reads"
    if any(q.readmits > 1 for q in cfg.requests):
        return "more than one readmission (the host pool has room for two prefetches)"
    if any(p is not None for p in cfg.host_pages):
        # the model's host_pages is the room one prefetch gets; the code's pool is shared: equal
        # only for one prefetch at a time on a pool of that size, every rank alike
        if len(set(cfg.host_pages)) > 1:
            return "host_pages that differ between ranks (the executor's pools are all one size)"
        if cfg.num_requests > 1 or any(q.readmits for q in cfg.requests):
            return "host_pages with more than one prefetch (the model's room is per prefetch, the code's pool shared)"
    if cfg.prefetch_threshold % cfg.page_size:
        return "a threshold that is not whole pages"
    return ""


E = frozenset()
# STORAGE_BATCH_SIZE as every followed release has it (mem_cache/hicache_storage.py, 0.5.19-0.5.23);
# the model's default (AckConfig.storage_batch_size). A configuration with another size replaces the
# tree's constant; one with this size leaves the tree its own (conformance/check.py's _batch_size).
RELEASE_STORAGE_BATCH_SIZE = AckConfig.__dataclass_fields__["storage_batch_size"].default


@dataclass(frozen=True)
class Budget:
    """One small configuration whose reachable states are replayed on the code: the first path to
    every new rank-local view up to `states` states, every step out of the first `near` ones, and
    with cover "steps" every step out of a state with a view of all ranks not seen before; with
    cover "runs", `states` whole runs instead (conformance.greedy_schedules), for a request too
    long to search."""

    name: str
    config: dict  # AckConfig keywords, before the release's options
    states: int
    near: int
    cover: str = "near"
    counterexamples: bool = True  # search the model for this configuration's counterexamples and replay them


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
    Budget("1 rank, a host pool of 1 page for 2 (a partial allocation)", dict(ranks=1, pages=2, host_pages=(1,)),
           20_000, 20_000),
    Budget("1 rank, no host pool (the allocation fails: revoked)", dict(ranks=1, pages=2, host_pages=(0,)),
           20_000, 20_000),
    Budget(f"1 rank x 1 request of {RELEASE_STORAGE_BATCH_SIZE + 1} pages (one storage batch and one page)",
           dict(ranks=1, pages=RELEASE_STORAGE_BATCH_SIZE + 1), 10, 0, "runs"),
    Budget("1 rank, its read of batch 1 raises, a batch per page",
           dict(requests=(Request(pages=2, hits=(2,), failing=(E,), batch_raises=(frozenset({1}),)),),
                storage_batch_size=1), 20_000, 20_000),
    Budget("1 rank, timeout, a batch per page", dict(ranks=1, pages=2, policy="timeout", storage_batch_size=1),
           20_000, 300),
    # its model search finds no counterexample and takes 7 s: not searched for them
    Budget("2 ranks x 1 request, timeout", dict(ranks=2, pages=1, policy="timeout"), 20_000, 100, counterexamples=False),
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


def protocol_class(spec: str):
    """The model to conform to: "" (the ack-drain protocol) or a mutant's name (mutants.py)."""
    from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol

    if not spec:
        return AckDrainProtocol
    from prefetch_check.model.protocols.ack_drain.mutants import BY_NAME

    return BY_NAME[spec]


def make_run(executor, protocol):
    """The conformance run of a model protocol on the executor (conformance_run.py)."""
    from prefetch_check.model.code.worlds.ack_drain.conformance_run import ConformRun

    return ConformRun(executor.modules, protocol.config, code_config(protocol.config), executor.holder, executor.roots)


def in_transit(action, f: str) -> bool:
    """Fields one drain may change and change back (the tail it queues for release, the entries
    it frees): the model's drain is one step, the code's a run of pops and frees."""
    return action.thread == "S" and action.step == "drain" and (
        f.endswith(".host_mem_release_queue") or f.endswith(".slots"))
