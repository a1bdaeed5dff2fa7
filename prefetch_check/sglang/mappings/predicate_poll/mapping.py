"""The predicate-poll protocol's SGLang side (mappings/__init__.py): releases without ACKs
(0.5.1-0.5.18); its executor world runs HiRadixCache (worlds/predicate_poll/), its model is
compared under the tree's own predicate (0.5.1-0.5.1.post2's is not the fixed one)."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.code_world import methods, starts_io_thread
from prefetch_check.sglang.mappings import Mapping
from prefetch_check.sglang.mappings.predicate_poll.options import PROTOCOL, release_options


def runs(cache, controllers: dict) -> str:
    """The judged class HiRadixCache polling `can_terminate_prefetch`, a HiCacheController whose
    `prefetch_thread_func` starts the IO thread itself, and no sync thread."""
    if controllers.get("HiCacheController") is None:
        return "the tree has no HiCacheController class to run"
    ctrl = methods(controllers.get("HiCacheController"))
    if "can_terminate_prefetch" not in methods(cache):
        return ("the predicate-poll world runs HiRadixCache.can_terminate_prefetch, which this tree's HiRadixCache "
                "does not define")
    if "prefetch_sync_thread_func" in ctrl:
        return ("this HiRadixCache's controller runs the sync thread (prefetch_sync_thread_func), which the "
                "predicate-poll world has no place for")
    if not starts_io_thread(ctrl.get("prefetch_thread_func")):
        return ("the predicate-poll world runs the IO thread prefetch_thread_func starts itself "
                "(threading.Thread(target=self.prefetch_io_aux_func)); this tree starts it elsewhere")
    return ""


# Every case judges every property, exhaustively: since this world records its footprints the
# sleep sets finish 2 ranks x 1 request in seconds to a minute per release (0.5.1: 5,729 runs,
# 0.5.18: 1,011; docs/benchmark.md, issue 31), where the DFS took 230-388 s and the cases were cut
# at 200 runs. The 2-rank cases keep the budget they had (240 s). 1 rank x 2 requests is not a
# case: 0.5.1's takes the DFS 25,383 runs.
TWO_RANKS = CodeLimits(max_seconds=240)

# the deadline shape of 0.5.12-0.5.18 (the timeout from the tree's PrefetchTimeoutConfig, SGLang's
# default policy from 0.5.12): older trees' deadlines (0.5.1-0.5.2's fixed prefetch_timeout,
# 0.5.3-0.5.11's base + per page) run under CodeConfig(policy="timeout") but get no case
timeout_skip = needs("mem_cache/hiradix_cache.py", "self.prefetch_timeout_config",
                     "its deadline predates the one the timeout case models (PrefetchTimeoutConfig, 0.5.12 on)")


def _config(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, **kwargs)


CASES: tuple[Case, ...] = (
    Case("1 rank x 1 request", _config(ranks=1)),
    Case("1 rank, best_effort", _config(ranks=1, policy="best_effort")),
    # the deadline of each rank fires as a choice of the search (model/code/worlds/deadlines.py);
    # 2 ranks do not finish here under any policy (docs/executor.md)
    Case("1 rank, timeout (deadlines fire as choices)", _config(ranks=1, policy="timeout"), skip=timeout_skip),
    Case("1 rank, cannot read page 1", _config(ranks=1, failing=((1,),))),
    Case("1 rank, no hits, threshold 0", _config(ranks=1, hits=(0,), threshold_pages=0)),
    Case("2 ranks x 1 request", _config(ranks=2), limits=TWO_RANKS),
    # the short read of one rank: the tail given back twice (0.5.1.post3-0.5.5)
    Case("2 ranks, rank 0 cannot read page 1", _config(ranks=2, failing=((1,), ())), limits=TWO_RANKS),
)

MAPPING = Mapping(protocol=PROTOCOL, acks="none", release_options=release_options, judged_class="HiRadixCache",
                  runs=runs, cases=CASES, own_predicate=True)
