"""The ack-drain cases with pipeline parallelism (0.5.19 on): two stages of one rank each
(CodeConfig.pp_size, model/code/worlds/ack_drain/stages.py), each stage its own host pool. The
release's own PP code runs as written: `_all_reduce` (the first stage reduces, `_pp_sync` passes
its value down the pipeline by recv/isend), `_drain_async_work`, the drain taking the first
stage's counts, and under timeout only the first stage's deadline deciding. Each names what it
sets. The PP tickets (0.5.21+) run only with buffer_only, which the stages world does not model."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

STAGES = "PP=2, 1 rank a stage"
# the abort and timeout cases: up to 19,692 and 61,438 runs (0.5.19), 44 s and 90 s on the shared
# cores, three times that under a heavier load
LONGER = CodeLimits(max_seconds=600)

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
)
