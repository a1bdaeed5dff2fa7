"""The ack-drain cases of a hybrid model's sidecar pools (CodeConfig.sidecars,
model/code/worlds/ack_drain/sidecars.py): what the model brings, not a server flag, so each case
names its pools: `sidecars=swa` / `mamba` (the SWA and Mamba components' trailing-window host
pools) and `indexer` (a KV-derived pool registered with register_sidecar_pool, as DSA's indexer
is). Together they run the release's sidecar code as written: the transfers built at issue, the
staging at the hit (and its roll-back when a pool is full), the window re-keyed and shrunk in IO
(its tail released from IO), the per-batch clamp to a KV-derived pool's hits, the sidecar read
and its `pool_hits` ACK, its MIN in the sync thread, the all-or-nothing check and the release
of the window on discard and on abort; with a shared page-envelope host arena, the KV bounce
and its windows allocated at once and the partial prefix sized by what fits (0.5.22 on). The
component stand-ins take both staging shapes: sized at issue and allocated at the hit (0.5.20 on,
`_alloc_prefetch_aux_staging`), or allocated at issue (0.5.19)."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

HYBRID = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
# the sidecar read and its pool_hits ACK after the KV (every ack-drain release so far)
_sidecar_read = needs(HYBRID, "def _page_transfer_sidecar(", "its controller has no sidecar read after the KV")

# the prefetch's allocation from a shared arena, KV bounce and windows at once (0.5.22 on); an older
# tree allocates them from their own pools and would never consult the arena the case names
_arena = needs(HYBRID, "def _shared_prefetch_requests(",
               "it does not allocate a prefetch's windows from a shared host arena (0.5.22 on)")


_components = _sidecar_read  # the SWA/Mamba cases: every release with the sidecar read (0.5.19 on)
needs_sidecar_read = _sidecar_read  # what another case file's sidecar cases ask too (file_storage_cases.py)


def _arena_components(srt) -> str:
    return _sidecar_read(srt) or _arena(srt)


def _sidecars(pools: tuple[str, ...], **kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, sidecars=pools, **{"ranks": 1, **kwargs})


SIDECAR_CASES: tuple[Case, ...] = (
    Case("1 rank, sidecars=swa,mamba,indexer", _sidecars(("swa", "mamba", "indexer")), skip=_components),
    # the indexer's row of page 1 cannot be read: IO clamps the KV batch to the indexer's hits
    Case("1 rank, sidecars=indexer, its page 1 unreadable (the usable length clamped)",
         _sidecars(("indexer",), sidecar_failing=((1,),)), skip=_sidecar_read),
    # the SWA window's page 1 cannot be read: the pool_hits ACK falls short, the fetch is discarded whole
    Case("1 rank, sidecars=swa, its page 1 unreadable (the fetch discarded)",
         _sidecars(("swa",), sidecar_failing=((1,),)), skip=_components),
    # a KV pool of 1 page: the partial prefix is shorter than the 2-page window staged at the hit,
    # so IO re-keys the window to the hit and releases its tail itself
    Case("1 rank, sidecars=swa, host pool of 1 page (the window shrinks in IO)",
         _sidecars(("swa",), host_pages=1), skip=_components),
    # the Mamba pool is full: the SWA staging already taken is rolled back and the hit revoked
    Case("1 rank, sidecars=swa,mamba, a Mamba pool of 0 slots (the staging rolled back)",
         _sidecars(("swa", "mamba"), sidecar_pool_pages=(2, 0)), skip=_components),
    Case("1 rank, sidecars=swa,indexer, abort in round 1", _sidecars(("swa", "indexer"), abort_round=1),
         skip=_components),
    # the first check terminates the fetch while IO reads: the window goes back at the completed_req drain
    Case("1 rank, best_effort, sidecars=swa,indexer", _sidecars(("swa", "indexer"), policy="best_effort"),
         skip=_components),
    # rank 0 cannot read its sidecar rows: its KV clamps to 0, the ranks MIN the progress and the
    # pool_hits ACKs, and both discard the fetch
    Case("2 ranks x 1 page, sidecars=swa,indexer, rank 0 cannot read its sidecar page",
         _sidecars(("swa", "indexer"), ranks=2, pages=1, sidecar_failing=((0,), ())), skip=_components),
    # the KV pool and the windows share one host arena (stand_ins/shared_arena.py): the hit and its
    # 2-page window do not fit 3 envelopes, so the release's search for a prefix takes 1 page and
    # its 1-page window, allocated at once
    Case("1 rank, sidecars=swa, a shared host arena of 3 page envelopes (a partial prefix)",
         _sidecars(("swa",), shared_arena=3), skip=_arena_components),
    Case("1 rank, sidecars=swa,mamba,indexer, a shared host arena of 4 page envelopes",
         _sidecars(("swa", "mamba", "indexer"), shared_arena=4), skip=_arena_components),
    # rank 1 stores no Mamba state: the hit query's MIN of restorable prefixes is 0 on both ranks
    Case("2 ranks x 1 page, sidecars=mamba, rank 1 stores no Mamba state",
         _sidecars(("mamba",), ranks=2, pages=1, sidecar_hits=((1,), (0,))), skip=_components),
)
