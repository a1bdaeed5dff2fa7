"""One line per step in the protocol's words, for traces and the viewer."""

from __future__ import annotations

from prefetch_check.model.actions import Action
from prefetch_check.model.collectives import PREFETCH, SCHEDULER
from prefetch_check.model.state import DONE


def explain_predicate(protocol, state, r: int, q: int) -> str:
    """The predicate's evaluation spelled out: inputs, comparison, answer."""
    view = protocol.view(state, r, q)
    answer = protocol.decide(state, r, q)
    explain = getattr(protocol.predicate, "explain", None)
    if explain is not None:
        return explain(view, answer)
    return (
        f"{protocol.predicate_name}(len(hash_value)={len(view.hash_value)}, "
        f"completed_tokens={view.completed_tokens}, terminated={view.terminated}, "
        f"timed_out={view.timed_out}) -> {'accept' if answer else 'wait'}"
    )


def _reduced(rank_after, group) -> str:
    reg = getattr(rank_after, group)
    if reg and reg[1] == DONE:
        return f" (last to arrive: result {list(reg[2])})"
    return " (waits for the other ranks)"


def describe_step(protocol, state, action: Action, next_state) -> str:
    cfg = protocol.config
    r, q = action.rank, action.q
    before = state[r]
    after = next_state[r]
    op = before.ops[q] if q >= 0 else None
    new = after.ops[q] if q >= 0 else None
    ps = cfg.page_size
    step = action.kind
    if step == "S.issue":
        return f"issue q{q}: allocate {cfg.prefetch_tokens(q)} host slots, put the operation on prefetch_queue, ongoing_prefetch[q{q}] set"
    if step == "S.issue_alloc_failed":
        return f"issue q{q}: host allocation fails on this rank: no operation, no ongoing_prefetch entry"
    if step == "S.issue_skipped":
        return f"issue q{q} skipped: prefetch length {cfg.prefetch_tokens(q)} < prefetch_threshold {cfg.prefetch_threshold}"
    if step == "S.drain_arrive":
        return (
            f"drain: revoke queue {len(before.revoke_queue)}, release queue {before.release_queue} "
            f"-> all_reduce(MIN) arrive{_reduced(after, SCHEDULER)}"
        )
    if step == "S.drain":
        n_revoke, n_release = before.s_coll[2]
        popped = ", ".join(f"q{x}" for x in before.revoke_queue[:n_revoke]) or "none"
        return f"drain: agreed {n_revoke} revoked (dropped from ongoing_prefetch: {popped}), free {n_release} released slots"
    if step == "S.ready_without_prefetch":
        return f"check_prefetch_progress(q{q}): not in ongoing_prefetch -> ready, nothing loaded"
    if step == "S.check":
        if cfg.policy == "best_effort":
            return (
                f"check_prefetch_progress(q{q}): best_effort -> terminate at once: mark_terminate, "
                f"completed_tokens={new.completed * ps}; all_reduce(MIN) arrive{_reduced(after, SCHEDULER)}"
            )
        vote = protocol.termination_vote(op, protocol.decide(state, r, q))  # what the step really sends
        vector = f"[not can_terminate={vote[0]}, terminated={vote[1]}]" if cfg.shape == "late2025" else f"[not can_terminate={vote[0]}]"
        return (
            f"check_prefetch_progress(q{q}): {explain_predicate(protocol, state, r, q)}; "
            f"all_reduce(MAX) arrive {vector}{_reduced(after, SCHEDULER)}"
        )
    if step == "S.keep_waiting":
        return f"all_reduce(MAX) -> {list(before.s_coll[2])}: some rank cannot terminate q{q} -> keep waiting"
    if step == "S.terminate":
        return (
            f"all_reduce(MAX) -> {list(before.s_coll[2])}: terminate_prefetch(q{q}): mark_terminate, "
            f"completed_tokens={new.completed * ps}; all_reduce(MIN) arrive{_reduced(after, SCHEDULER)}"
        )
    if step == "S.insert":
        (m,) = before.s_coll[2]
        return (
            f"all_reduce(MIN) -> min_completed={m}: insert hash_value[:{m // ps}] ({m} tokens) into the tree, "
            f"release host slots [{m}, {op.completed * ps}), q{q} ready"
        )
    if step == "P.take":
        hits = cfg.requests[q].hits[r]
        return f"take q{q} from prefetch_queue; batch_exists -> {hits} leading pages; all_reduce(MIN hits) arrive{_reduced(after, PREFETCH)}"
    if step == "P.revoke":
        (h,) = before.p_coll[2]
        return (
            f"all_reduce(MIN) -> {h * ps} hit tokens < threshold {cfg.effective_threshold}: revoke q{q}: "
            f"revoke queue += q{q}, release all {len(op.slots)} host slots"
        )
    if step == "P.publish":
        (h,) = before.p_coll[2]
        return (
            f"all_reduce(MIN) -> {h * ps} hit tokens: publish q{q}: hash_value = {h} page(s) (now visible to the scheduler), "
            f"release host slots [{h * ps}, {len(op.slots) * ps}), put on prefetch_buffer"
        )
    if step == "I.take":
        return f"take q{q} from prefetch_buffer: {new.hash_value if new else op.hash_value} page(s) to load"
    page = before.i_pc[1] if before.i_pc else 0
    batch = page // cfg.storage_batch_size
    if step == "I.write":
        return f"batch {batch}: read page {page} of q{q} from storage, write it into its host slots"
    if step == "I.load_failed":
        tail = " -> short batch -> mark_terminate" if cfg.shape == "late2025" else " -> stop (no mark_terminate in the seed shape)"
        return f"batch {batch}: page {page} of q{q} fails to load{tail}"
    if step == "I.increment":
        return f"increment(page_size) on q{q}: completed_tokens {op.completed * ps} -> {new.completed * ps}"
    if step == "I.increment_refused":
        return f"increment on q{q} refused: operation terminated -> stop loading"
    if step == "I.release":
        return f"release host slots [completed_tokens, hits) = [{op.completed * ps}, {op.hash_value * ps}) of q{q}"
    if step == "C.timeout":
        return f"the prefetch timeout of q{q} expires on rank {r}"
    return action.id
