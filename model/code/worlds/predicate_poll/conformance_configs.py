"""The predicate-poll side of the conformance check (conformance.py holds the one replay loop
for both protocols): how a poll model configuration travels to the executor's child as JSON,
the poll world it needs (CodeConfig, world "predicate-poll"), what that world cannot build, the budget
`prefetch-check sglang` uses for 0.5.1-0.5.18, and the protocol's pieces the loop asks for."""

from __future__ import annotations

from dataclasses import dataclass, fields

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import Unsupported
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config

PROTOCOL = "predicate-poll"
# STORAGE_BATCH_SIZE as the releases that have it set it (mem_cache/hicache_storage.py, 0.5.13-0.5.18):
# a configuration with another size replaces the tree's constant (conformance/check.py's _batch_size)
RELEASE_STORAGE_BATCH_SIZE = 128


def config_to_json(cfg: Config) -> dict:
    out = {f.name: getattr(cfg, f.name) for f in fields(Config) if f.name != "requests"}
    out["alloc_may_fail"] = list(cfg.alloc_may_fail)
    out["requests"] = [{"pages": q.pages, "hits": list(q.hits), "failing": [sorted(f) for f in q.failing],
                        "alloc_pages": list(q.alloc_pages)} for q in cfg.requests]
    return out


def config_from_json(data: dict) -> Config:
    reqs = tuple(RequestSpec(pages=q["pages"], hits=tuple(q["hits"]), failing=tuple(frozenset(f) for f in q["failing"]),
                             alloc_pages=tuple(q["alloc_pages"])) for q in data["requests"])
    rest = {k: v for k, v in data.items() if k != "requests"}
    rest["alloc_may_fail"] = tuple(rest["alloc_may_fail"])
    return Config(requests=reqs, **rest)


def unsupported(cfg: Config) -> str:
    """'' when the executor's poll world can build this configuration, else what it lacks."""
    if cfg.policy not in ("wait_complete", "best_effort"):
        return (f"policy {cfg.policy}: the poll replay does not move the executor's clock where the model's fires "
                "(the code engine's own search fires it: the timeout case)")
    first = cfg.requests[0]
    if any((q.pages, q.hits, q.failing) != (first.pages, first.hits, first.failing) for q in cfg.requests):
        return "requests that differ in pages, hits or failing pages"
    if any(cfg.alloc_may_fail):
        return "alloc_may_fail (the world's host pool has room for every request; a short pool is not modelled)"
    if any(a < q.pages for q in cfg.requests for a in q.alloc_pages):
        return "alloc_pages (a short pool at the drain's allocation: evict_host is not modelled)"
    if cfg.prefetch_threshold % cfg.page_size:
        return "a threshold that is not whole pages"
    if not cfg.clamp_threshold and cfg.prefetch_threshold < cfg.page_size:
        return "an unclamped threshold below a page (the world builds the controller's threshold clamped to a page)"
    if cfg.count_whole_batch and any(_fails_in_a_shared_batch(cfg, q) for q in cfg.requests):
        return ("a page that fails to load in a batch counted whole (0.5.1-0.5.1.post2 test only that batch_get "
                "returned None: the world's backend answers None for that page alone, which the code counts and "
                "writes into its host slot as None; the model fails the whole batch before it counts)")
    if cfg.ranks > 1 and cfg.shape == "seed":
        return ("2 ranks of the seed shape (0.5.1.x): check_hicache_events agrees on the backup queue and the IO "
                "thread waits in a barrier per operation, collectives the model has no step for")
    return ""


def _fails_in_a_shared_batch(cfg: Config, q: RequestSpec) -> bool:
    """Whether a failing page of q shares its storage batch with another page of q."""
    size = cfg.storage_batch_size
    return any(min((p // size + 1) * size, q.pages) - (p // size) * size > 1 for f in q.failing for p in f)


def code_config(cfg: Config) -> CodeConfig:
    """The executor's poll world for a model configuration, or Unsupported saying what it lacks."""
    why = unsupported(cfg)
    if why:
        raise Unsupported(why)
    first = cfg.requests[0]
    return CodeConfig(ranks=cfg.ranks, requests=cfg.num_requests, pages=first.pages, page_size=cfg.page_size,
                      policy=cfg.policy, hits=tuple(first.hits), failing=tuple(tuple(sorted(f)) for f in first.failing),
                      threshold_pages=cfg.prefetch_threshold // cfg.page_size, world=PROTOCOL)


@dataclass(frozen=True)
class Budget:
    """One small configuration whose reachable states are replayed on the code (as
    conformance_configs.Budget): up to `states` states, every step out of the first `near`."""

    name: str
    config: dict  # uniform_config keywords, before the release's options
    states: int
    near: int
    cover: str = "near"


BUDGETS: tuple[Budget, ...] = (
    Budget("1 rank x 1 request, 2 pages", dict(ranks=1, pages=2), 20_000, 20_000),
    Budget("1 rank, best_effort", dict(ranks=1, pages=2, policy="best_effort"), 20_000, 20_000),
    Budget("1 rank, cannot read page 1", dict(ranks=1, pages=2, failing={0: {1}}), 20_000, 20_000),
    Budget("1 rank, 1 of 2 pages in storage", dict(ranks=1, pages=2, hits=1), 20_000, 20_000),
    Budget("1 rank, no hits (revoked)", dict(ranks=1, pages=1, hits=0), 20_000, 20_000),
    Budget("1 rank x 2 requests", dict(ranks=1, requests=2, pages=1), 20_000, 300),
    Budget("2 ranks x 1 request", dict(ranks=2, pages=1), 20_000, 300, "steps"),
    Budget("2 ranks, rank 1 cannot read page 0, a batch per page",
           dict(ranks=2, pages=2, failing={1: {0}}, storage_batch_size=1), 20_000, 300),
    Budget("2 ranks, rank 1 holds 1 of 2 pages",
           dict(requests=(RequestSpec(pages=2, hits=(2, 1), failing=(frozenset(), frozenset())),)), 20_000, 300),
)


def budget_config(budget: Budget, options: dict) -> Config:
    """The budget's configuration with a release's options (shape, alloc_at, direct_release...)."""
    kwargs = dict(budget.config, **options)
    if "requests" in kwargs and not isinstance(kwargs["requests"], int):  # per-rank storage differs
        reqs = kwargs.pop("requests")
        return Config(ranks=len(reqs[0].hits), requests=reqs, **kwargs)
    return uniform_config(**kwargs)


def protocol_class(spec: str):
    """The poll model to conform to: "" (the protocol) or a mutant's name (poll/mutants.py)."""
    from prefetch_check.model.protocols.poll.protocol import PollProtocol

    if not spec:
        return PollProtocol
    from prefetch_check.model.protocols.poll.mutants import BY_NAME

    return BY_NAME[spec]


def make_run(executor, protocol):
    from prefetch_check.model.code.worlds.predicate_poll.conformance_run import ConformPollRun

    return ConformPollRun(executor.modules, protocol.config, code_config(protocol.config), executor.holder,
                          executor.roots)


def in_transit(action, f: str) -> bool:
    """Fields one drain may change and change back: the model's drain is one step, the code's a
    run of pops and frees (and, with hit-time allocation, allocations and puts)."""
    return action.thread == "S" and action.step == "drain" and (
        f.endswith(".host_mem_release_queue") or f.endswith(".slots"))
