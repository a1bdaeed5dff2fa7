"""The predicate-poll world as the executor sees it (model/code/pack.py): HiRadixCache and
HiCacheController of 0.5.1-0.5.18, registered on the predicate-poll descriptor."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import ConformanceKit, WorldPack
from prefetch_check.model.code.rt import hooks, loader, unset_fields
from prefetch_check.model.code.stand_ins.clock import name as clock_name
from prefetch_check.model.code.worlds.predicate_poll import conformance_configs as conformance
from prefetch_check.model.code.worlds.predicate_poll import probes
from prefetch_check.model.code.worlds.predicate_poll.harness import CONTROLLER, FILES, HIRADIX, PollRun
from prefetch_check.model.protocols.poll import refinement

PROTOCOL = "predicate-poll"
OBSERVED = frozenset({"_terminated_flag", "_done_flag"})  # 0.5.1-0.5.1.post3 call it _done_flag


def imports(srt: Path, torch, roots: tuple[str, ...]) -> dict:
    """Import the tree's HiRadixCache and HiCacheController files, nothing hooked: what a
    unit-level script runs against (rt/unit_script.py)."""
    return loader.load_tree(srt, torch, FILES)


def load(srt: Path, torch, holder, roots: tuple[str, ...]) -> dict:
    """`imports`, then the probes."""
    modules = imports(srt, torch, roots)
    ctrl, cache_mod = modules[CONTROLLER], modules[HIRADIX]
    hooks.install(ctrl.PrefetchOperation, None, holder, OBSERVED)
    hooks.watch(cache_mod.HiRadixCache, holder)  # their plain fields in the steps' footprints (harness: labels)
    hooks.watch(ctrl.HiCacheController, holder)
    for cls in (cache_mod.HiRadixCache, ctrl.HiCacheController):  # built with __new__: a field never set is not modelled
        unset_fields.guard(cls, roots)

    def revoked(rank: int, request_id) -> bool:
        queue = holder.run.ranks[rank].cc.prefetch_revoke_queue
        holder.world.baton.touch(queue.name, write=False)  # the probe's verdict reads it: so does the step
        return request_id in queue.items

    def expired(rank: int, request_id) -> bool:
        """Under timeout: whether the rank's deadline for that request fired (or is not the search's to fire)."""
        run = holder.run
        deadlines = getattr(run, "deadlines", None)  # the conformance replay's run has none
        holder.world.baton.touch(clock_name(rank), write=False)
        return deadlines is None or deadlines.fired_since_issue(rank, run.ranks[rank].handles.index(request_id))

    def peer_terminated(rank: int, request_id) -> bool:
        """Whether another rank's operation of that request is terminated (it may have left that
        rank's ongoing_prefetch already): the ranks' vote then ends this rank's too, which is the
        vote's doing, not this rank's predicate accepting."""
        mine = f"r{rank}."
        for part in holder.world.parts:
            if not isinstance(part, hooks.OpPart):
                continue
            op = part.op
            d = op.__dict__ if op is not None else {}
            label = d.get("_pc_label") or ""
            if not label or label.startswith(mine) or d.get("request_id") != request_id:
                continue
            for flag in OBSERVED:
                holder.world.baton.touch(f"{label}.{flag}", write=False)
                if d.get(flag):
                    return True
        return False

    probes.install_acceptance(cache_mod.HiRadixCache, holder, revoked, expired, peer_terminated)
    return modules


def not_judged(config: CodeConfig) -> dict[str, str]:
    """The releases race their predicate (probes.py): no_early_acceptance is judged under
    wait_complete, and under timeout until the deadline fires (the search fires it)."""
    if config.policy == "wait_complete" or config.explores_clock():
        return {}
    return {"no_early_acceptance": "best_effort never waits: terminating at the first check is its contract"}


BENCH = tuple((name, CodeConfig(world=PROTOCOL, **kwargs)) for name, kwargs in (
    ("poll 1x1", dict(ranks=1)),
    ("poll 1x1 best_effort", dict(ranks=1, policy="best_effort")),
    ("poll 1x1 timeout, deadlines as choices", dict(ranks=1, policy="timeout")),
    ("poll 1x1, cannot read page 1", dict(ranks=1, failing=((1,),))),
    ("poll 1x1, no hits, threshold 0", dict(ranks=1, hits=(0,), threshold_pages=0)),
    ("poll 2x1", dict(ranks=2)),
    ("poll 2x1, 1 page", dict(ranks=2, pages=1)),
    ("poll 1x2", dict(ranks=1, requests=2)),
))

PACK = WorldPack(
    protocol=PROTOCOL,
    files=FILES,
    imports=imports,
    load=load,
    run=PollRun,
    not_judged=not_judged,
    conformance=ConformanceKit(
        refinement=refinement, make_run=conformance.make_run, in_transit=conformance.in_transit,
        config_to_json=conformance.config_to_json, config_from_json=conformance.config_from_json,
        unsupported=conformance.unsupported, protocol_class=conformance.protocol_class, budgets=conformance.BUDGETS,
        budget_config=conformance.budget_config, release_batch_size=conformance.RELEASE_STORAGE_BATCH_SIZE),
    bench=BENCH,
)
