"""The ack-drain cases with pipeline parallelism (0.5.19 on): two stages of one rank each
(CodeConfig.pp_size, model/code/worlds/ack_drain/stages.py), each stage its own host pool. The
release's own PP code runs as written: `_all_reduce` (the first stage reduces, `_pp_sync` passes
its value down the pipeline by recv/isend), `_drain_async_work`, the drain taking the first
stage's counts, and under timeout only the first stage's deadline deciding. Each names what it
sets. With host_memory_mode buffer_only the stages run the PP tickets (0.5.21+) as written
(model/code/worlds/ack_drain/buffer/tickets.py): PP0's ticket, each stage's ticket thread and its
broadcast, the ready state's admission; on trees whose tickets the world models (0.5.23).
Under a ticket the admission waits for the ticket's last ACK whatever the stop policy, so its
cases run the default `wait_complete` of the world only."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.buffer_cases import BUFFER, skip as buffer_skip
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

STAGES = "PP=2, 1 rank a stage"
# the abort and timeout cases: up to 19,692 and 61,438 runs (0.5.19), 44 s and 90 s on the shared
# cores, three times that under a heavier load
LONGER = CodeLimits(max_seconds=600)

HYBRID = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
# the ticket shape the world models (0.5.23): each stage's ticket thread queries its own storage view;
# 0.5.21-0.5.22's PP0 queries every stage's view in submit_prefetch (a storage stand-in per pp_rank)
_ticket_shape = needs(HYBRID, "self.mem_pool_host.available_size(pool=PoolName.KV)",
                      "its PP tickets query every stage's storage at PP0 (0.5.21-0.5.22): not modelled")


def _tickets_skip(tree):
    """A PP-ticket case: the buffer pipeline's shape and the ticket thread's."""
    return buffer_skip(tree) or _ticket_shape(tree)


def _stages(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, **{"ranks": 2, "pp_size": 2, **kwargs})


PP_CASES: tuple[Case, ...] = (
    Case(STAGES, _stages()),
    Case(f"{STAGES}, stage 1 cannot read page 1", _stages(failing=((), (1,)))),
    Case(f"{STAGES}, aborted by its client in round 1", _stages(abort_round=1), limits=LONGER),
    # the first stage's deadline fires as a choice; with no page stored the search is exhaustive
    # (with a stored page it is not, as for 2 TP ranks under timeout)
    Case(f"{STAGES}, timeout (stage 0's deadline fires as a choice), 1 page stored nowhere",
         _stages(pages=1, policy="timeout", hits=(0, 0)), limits=LONGER),
    # the PP tickets: 546 / 564 / 520 runs, 2-3 s each on one core (0.5.23; the sleep sets before
    # DPOR within the persistent set: 18,068 / 19,052 / 17,916 runs, 39-43 s)
    Case(f"{STAGES}, {BUFFER} (PP tickets), 1 page", _stages(pages=1, host_memory_mode="buffer_only"), limits=LONGER,
         skip=_tickets_skip),
    Case(f"{STAGES}, {BUFFER} (PP tickets), stage 1 cannot read page 1",
         _stages(host_memory_mode="buffer_only", failing=((), (1,))), limits=LONGER, skip=_tickets_skip),
    Case(f"{STAGES}, {BUFFER} (PP tickets), 1 page, aborted by its client in round 1",
         _stages(pages=1, host_memory_mode="buffer_only", abort_round=1), limits=LONGER, skip=_tickets_skip),
    # the ticket thread's failed query: its except votes zero in the hit MIN, and stage 0 frees the
    # buffers it allocated past the agreed count (268 runs, 2 s on one core, 0.5.23; 11,716 before)
    Case(f"{STAGES}, {BUFFER} (PP tickets), 1 page, stage 1's storage query raises (it votes zero)",
         _stages(pages=1, host_memory_mode="buffer_only", query_raises=(False, True)), limits=LONGER,
         skip=_tickets_skip),
    # aborted as soon as issued (abort_round=0): before or after a stage's ticket thread registered
    # the ticket, release_pp_prefetch records the cancelled decision and the thread honours it.
    # 1,987 runs, 14 s on one core (0.5.23); under the sleep sets it was not a case (traced at -j 2,
    # BOUNDED at 600 s after 50,933 runs)
    Case(f"{STAGES}, {BUFFER} (PP tickets), 1 page, aborted as soon as issued (its decision cancelled)",
         _stages(pages=1, host_memory_mode="buffer_only", abort_round=0), limits=LONGER, skip=_tickets_skip),
)
