"""The ack-drain cases of the cache's reset while requests wait (0.5.19 on): the engine paused,
`flush_cache` resets the tree with a waiting request's fetch in flight (it ignores waiting requests
that hold no KV), and the tree's own reset stops, joins and restarts the storage threads
(model/code/worlds/ack_drain/cache_reset.py). Each names the round of the flush."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

# the reset the world runs: the cache's _reset_full hands the storage threads to the controller's reset
skip = needs("mem_cache/unified_radix_cache.py", "self.cache_controller.reset()",
             "its cache's reset does not call the controller's reset, as the reset world models")

RESET_CASES: tuple[Case, ...] = (
    # 942 runs, exhaustive, clean on 0.5.23 (154-467 on 0.5.19-0.5.20)
    Case("1 rank, flush_cache (the cache's reset) after round 1's drain, its fetch in flight",
         CodeConfig(world=PROTOCOL, ranks=1, reset_round=1), skip=skip),
    # the same at two ranks: a rank's sync thread may have taken its completion ACK into the
    # all_reduce while its peer's stop came first, so the peer's sync thread leaves and the first
    # waits forever (0.5.21-0.5.23: the join's 10 s run out, RuntimeError; 0.5.19-0.5.20 join with
    # no timeout: the scheduler waits forever). 899 runs to the violation under the gate "any";
    # its exhaustive search takes 150 s and more, so the case stops there (the rest BOUNDED)
    Case("2 ranks, flush_cache (the cache's reset) after round 1's drain, a fetch in flight",
         CodeConfig(world=PROTOCOL, ranks=2, reset_round=1),
         limits=CodeLimits(max_seconds=300, stop_on=("progress",)), skip=skip),
)
