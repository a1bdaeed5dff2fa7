"""The release shapes (0.5.1 to 0.5.18) as options of the predicate-poll protocol: each option's
guard (where the changed step is enabled) and effect (what it changes), on replayed schedules,
as tests/test_model_actions.py does for the default (late2025) shape."""

from __future__ import annotations

import pytest

from prefetch_check.model.engine.collectives import waits_of
from prefetch_check.model.interface import Action
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.model.protocols.poll.releases import options
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED,
    C_TERMINATE,
    DONE,
    DOUBLE,
    DROPPED,
    HELD,
    HIT_QUEUED,
    IN_TREE,
    IO_COUNT,
    IO_READ,
    NOT_INSERTED,
    PUBLISHED,
    RELEASED,
    REVOKED,
    S_CHECK,
    S_DRAIN,
    S_DRAIN_WAIT,
    S_INSERT,
    S_ISSUE,
    S_MAX_WAIT,
    S_MIN_WAIT,
    S_ROUND_WAIT,
)

# The step kinds only the release shapes take (tests/test_model_actions.py counts them covered).
SHAPE_KINDS = {"S.ready_unallocated", "S.terminate_unallocated", "P.record_hits", "S.round_arrive", "S.round_leave"}

DRAIN = "S0.drain_arrive S0.drain"
STAGED = options("staged")
DRAIN_TEST = options("staged-drain-threshold")


def actions_of(p, state, prefix):
    return [a for a in p.enabled(state) if a.startswith(prefix)]


# ---- count_before_write (0.5.1.x) ----

LOADING = "S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0"


def test_count_before_write_counts_a_page_before_its_write(proto):
    p = proto(uniform_config(pages=2, count_before_write=True))
    s = p.state(LOADING)
    assert actions_of(p, s, "I0.") == ["I0.increment.q0"]  # no write first
    s = p.step(s, "I0.increment.q0")
    op = s[0].ops[0]
    assert (op.completed, op.written, s[0].i_pc) == (1, 0, (0, 0, IO_COUNT))
    assert actions_of(p, s, "I0.") == ["I0.write.q0"]
    s = p.step(s, "I0.write.q0")
    assert (s[0].ops[0].written, s[0].i_pc) == (1, (0, 1, IO_READ))


def test_count_before_write_lets_the_tree_take_a_page_before_its_data(proto):
    p = proto(uniform_config(pages=1, count_before_write=True))
    s = p.state(LOADING + " I0.increment.q0 " + DRAIN + " S0.check.q0 S0.terminate.q0 S0.insert.q0")
    op = s[0].ops[0]
    assert op.slots == (IN_TREE,) and op.written == 0
    assert p.prop("data_integrity").check(s) is not None
    s = p.step(s, "I0.write.q0")  # the write still comes, too late
    assert s[0].ops[0].written == 1


def test_count_before_write_refused_increment_writes_nothing(proto):
    p = proto(uniform_config(pages=2, count_before_write=True), "buggy")
    s = p.state("S0.issue.q0 " + DRAIN + " S0.check.q0 S0.terminate.q0 P0.take.q0 P0.publish.q0 I0.take.q0")
    assert actions_of(p, s, "I0.") == ["I0.increment_refused.q0"]
    assert p.step(s, "I0.increment_refused.q0")[0].ops[0].written == 0


# ---- count_whole_batch (0.5.1-0.5.1.post2) ----


def reachable(p, limit: int = 50_000) -> set:
    """Every state of a small configuration, by plain BFS (no reductions)."""
    seen, frontier = {p.initial}, [p.initial]
    while frontier:
        nxt = []
        for state in frontier:
            for _, after in p.model.successors(state):
                if after not in seen:
                    seen.add(after)
                    nxt.append(after)
        frontier = nxt
        assert len(seen) < limit
    return seen


def two_counted_none_written(states) -> bool:
    """0.5.1's state after `increment(page_size * len(page_hashes))`: both pages counted, none written."""
    return any(s[0].ops[0].completed == 2 and s[0].ops[0].written == 0 for s in states)


@pytest.mark.parametrize("whole", [False, True])
def test_count_whole_batch_counts_the_batch_before_any_write(proto, whole):
    p = proto(uniform_config(pages=2, count_before_write=True, count_whole_batch=whole))
    assert two_counted_none_written(reachable(p)) is whole


def test_count_whole_batch_counts_once_then_writes_page_by_page(proto):
    p = proto(uniform_config(pages=3, storage_batch_size=2, count_before_write=True, count_whole_batch=True))
    s = p.step(p.state(LOADING), "I0.increment.q0")
    assert (s[0].ops[0].completed, s[0].ops[0].written, s[0].i_pc) == (2, 0, (0, 0, IO_COUNT))
    s = p.step(s, "I0.write.q0")
    assert (s[0].ops[0].written, s[0].i_pc) == (1, (0, 1, IO_COUNT))  # the batch's next page: written, not counted
    s = p.step(s, "I0.write.q0")
    assert (s[0].ops[0].completed, s[0].ops[0].written, s[0].i_pc) == (2, 2, (0, 2, IO_READ))  # the next batch
    s = p.step(s, "I0.increment.q0")
    assert s[0].ops[0].completed == 3  # the short last batch: one page
    assert "increment(page_size * 2)" in p.model.describe(p.state(LOADING), *p.action(p.state(LOADING), "I0.increment.q0")[1:])


def test_count_whole_batch_fails_a_batch_before_counting_it(proto):
    p = proto(uniform_config(pages=2, failing={0: {1}}, count_before_write=True, count_whole_batch=True))
    s = p.step(p.state(LOADING), "I0.load_failed.q0")  # page 1 fails: the whole batch, page 0 uncounted
    assert (s[0].ops[0].completed, s[0].ops[0].written) == (0, 0)


def test_count_whole_batch_needs_count_before_write():
    with pytest.raises(ValueError, match="count_whole_batch needs count_before_write"):
        uniform_config(pages=2, count_whole_batch=True)


# ---- round_collectives (0.5.1.x, 0.5.13-0.5.16) ----

ISSUED = "S0.issue.q0 S1.issue.q0"


@pytest.mark.parametrize("rounds", [1, 2])
def test_round_collectives_hold_each_drain_until_every_rank_arrived(proto, rounds):
    """0.5.13's loading_check (and 0.5.14-0.5.16's writing_check before it) make an all_reduce(MIN)
    every round before the drain reads its queue sizes: a rank's drain waits for the other rank's
    scheduler, which the model without the option does not."""
    p = proto(uniform_config(ranks=2, pages=1, round_collectives=rounds))
    s = p.state("S0.issue.q0")
    assert actions_of(p, s, "S0.") == ["S0.round_arrive"]
    s = p.step(s, "S0.round_arrive")
    assert s[0].s_pc == (S_ROUND_WAIT, 0) and actions_of(p, s, "S0.") == []  # waits for S1
    s = p.step(p.step(s, "S1.issue.q0"), "S1.round_arrive")
    assert s[0].s_coll[1] == DONE and s[0].s_coll[2] == (0,)
    for k in range(rounds):
        if k:
            s = p.step(p.step(s, "S0.round_arrive"), "S1.round_arrive")
        s = p.step(p.step(s, "S0.round_leave"), "S1.round_leave")
        assert s[0].s_pc == (S_DRAIN, k + 1) and s[0].s_coll == ()
    assert actions_of(p, s, "S0.") == ["S0.drain_arrive"]


def test_without_round_collectives_a_drain_reads_its_sizes_while_the_other_rank_issues(proto):
    """The state the code never reaches with a per-round collective: S0 in the drain's collective
    while S1 has not issued yet (the divergence at S1.drain_arrive before the option)."""
    def drain_before_peer_issue(states):
        return any(s[0].s_pc[0] == S_DRAIN_WAIT and s[1].s_pc[0] == S_ISSUE for s in states)

    assert drain_before_peer_issue(reachable(proto(uniform_config(ranks=2, pages=1))))
    assert not drain_before_peer_issue(reachable(proto(uniform_config(ranks=2, pages=1, round_collectives=1))))


def test_round_leave_is_a_persistent_set_on_its_own():
    protocol = PollProtocol(uniform_config(ranks=2, pages=1, round_collectives=1))
    rank = protocol.initial_rank(0)
    assert protocol.solo_priority(rank, Action(0, "S", "round_leave", -1)) is not None
    assert protocol.solo_priority(rank, Action(0, "S", "round_arrive", -1)) is None
    assert "S.round_arrive" not in PollProtocol(uniform_config(ranks=2, pages=1)).possible_kinds()


def test_round_collectives_take_no_step_at_one_rank(proto):
    """At TP 1 the collective waits for nobody and brings 0: the model leaves its steps out."""
    with_option = proto(uniform_config(pages=1, round_collectives=2))
    assert actions_of(with_option, with_option.state("S0.issue.q0"), "S0.") == ["S0.drain_arrive"]
    assert len(reachable(with_option)) == len(reachable(proto(uniform_config(pages=1))))


@pytest.mark.parametrize("count_first, solo", [(False, 3), (True, None)])
def test_the_write_is_a_persistent_set_only_when_it_comes_first(count_first, solo):
    protocol = PollProtocol(uniform_config(pages=1, count_before_write=count_first))
    rank = protocol.initial_rank(0)
    assert protocol.solo_priority(rank, Action(0, "I", "write", 0)) == solo
    assert protocol.solo_priority(rank, Action(0, "I", "take", 0)) == 2


# ---- direct_release (0.5.1.x) ----


def test_direct_release_frees_at_once_on_every_path(proto):
    p = proto(uniform_config(pages=3, hits=2, failing={0: {1}}, direct_release=True))
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0")
    assert s[0].ops[0].slots == (HELD, HELD, RELEASED) and s[0].release_queue == 0  # publish's tail
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment.q0 I0.load_failed.q0 I0.release.q0")
    assert s[0].ops[0].slots == (HELD, RELEASED, RELEASED) and s[0].release_queue == 0  # the IO thread's tail
    revoke = proto(uniform_config(pages=2, hits=0, direct_release=True))
    s = revoke.state("S0.issue.q0 P0.take.q0 P0.revoke.q0")
    assert s[0].ops[0].slots == (RELEASED, RELEASED) and s[0].release_queue == 0 and s[0].revoke_queue == (0,)


def test_direct_release_insert_frees_min_to_completed_at_once(proto):
    p = proto(uniform_config(ranks=2, pages=2, failing={1: {1}}, policy="timeout", direct_release=True))
    s = p.state(
        "S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.publish.q0 P1.publish.q0 "
        "I0.take.q0 I0.write.q0 I0.increment.q0 I0.write.q0 I0.increment.q0 I0.release.q0 "
        "I1.take.q0 I1.write.q0 I1.increment.q0 I1.load_failed.q0 I1.release.q0 "
        "S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0 S0.terminate.q0 S1.terminate.q0 S0.insert.q0"
    )
    assert s[0].ops[0].slots == (IN_TREE, RELEASED) and s[0].release_queue == 0


def test_without_a_release_queue_the_drain_agrees_on_revokes_only(proto):
    p = proto(uniform_config(ranks=2, pages=1, direct_release=True))
    s = p.state("S0.issue.q0 S1.issue.q0 S0.drain_arrive")
    assert s[0].s_coll[2] == (0,)  # (revoke queue size,)
    assert "release queue" not in p.model.describe(p.initial, Action(0, "S", "drain_arrive"), s)


# ---- tail_releases (0.5.1.post3, 0.5.2-0.5.5) ----


@pytest.mark.parametrize("direct, queued", [(False, 2), (True, 0)])
def test_the_tail_released_twice_is_a_double_release(proto, direct, queued):
    p = proto(uniform_config(pages=2, failing={0: {1}}, tail_releases=2, direct_release=direct))
    s = p.state(LOADING + " I0.write.q0 I0.increment.q0 I0.load_failed.q0 I0.release.q0")
    assert s[0].ops[0].slots == (HELD, DOUBLE) and s[0].release_queue == queued
    assert "given back twice" in p.prop("host_memory").check(s)


def test_a_full_load_leaves_no_tail_to_release_twice(proto):
    p = proto(uniform_config(pages=2, tail_releases=2))
    s = p.state(LOADING + " I0.write.q0 I0.increment.q0 I0.write.q0 I0.increment.q0 I0.release.q0")
    assert s[0].ops[0].slots == (HELD, HELD) and s[0].release_queue == 0


# ---- completed_min (0.5.1.x: no MIN of completed_tokens under wait_complete) ----


def test_without_the_completed_min_each_rank_inserts_its_own_count(proto):
    p = proto(uniform_config(ranks=2, pages=1, completed_min="except_wait_complete"), "buggy")
    s = p.state(
        "S0.issue.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0 "
        "S0.terminate.q0"
    )
    assert s[0].s_pc == (S_INSERT, 0) and s[0].s_coll == () and s[0].ops[0].terminated  # no arrival
    s = p.step(s, "S0.insert.q0")
    assert s[0].ops[0].inserted == 0 and s[0].s_pc == (S_DRAIN, 0)
    s = p.state(
        "S0.issue.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0 "
        "S0.terminate.q0 S0.insert.q0 P1.take.q0 P0.take.q0 P1.publish.q0 I1.take.q0 I1.write.q0 I1.increment.q0 "
        "S1.terminate.q0 S1.insert.q0"
    )
    assert [rank.ops[0].inserted for rank in s] == [0, 1]
    assert "different token counts" in p.prop("tp_agreement").check(s)


@pytest.mark.parametrize("policy", ["timeout", "best_effort"])
def test_the_completed_min_stays_outside_wait_complete(proto, policy):
    p = proto(uniform_config(ranks=2, pages=1, policy=policy, completed_min="except_wait_complete"))
    s = p.state("S0.issue.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain")
    if policy == "timeout":
        s = p.state("S0.issue.q0 S1.issue.q0 C0.timeout.q0 C1.timeout.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0")
        s = p.step(s, "S0.terminate.q0")
    else:
        s = p.step(s, "S0.check.q0")
    assert s[0].s_pc == (S_MIN_WAIT, 0) and s[0].s_coll[0] == (C_COMPLETED, 0)


# ---- queue_unallocated (0.5.1.x) ----

SEED_ALLOC = dict(alloc_may_fail=(True,), queue_unallocated=True)


def test_a_failed_allocation_still_queues_the_operation_without_slots(proto):
    p = proto(uniform_config(pages=2, **SEED_ALLOC))
    s = p.step(p.initial, "S0.issue_alloc_failed.q0")
    op = s[0].ops[0]
    assert (op.issued, op.ongoing, op.allocated, op.slots) == (True, True, False, ())
    assert s[0].prefetch_queue == (0,)


def test_check_says_ready_for_an_operation_without_slots_and_keeps_it(proto):
    p = proto(uniform_config(pages=2, **SEED_ALLOC))
    s = p.state("S0.issue_alloc_failed.q0 " + DRAIN)
    assert p.enabled(s) == ["S0.ready_unallocated.q0", "P0.take.q0"]
    s = p.step(s, "S0.ready_unallocated.q0")
    op = s[0].ops[0]
    assert op.ready and op.ongoing and op.inserted == NOT_INSERTED and s[0].s_coll == ()
    assert s[0].s_pc == (S_DRAIN, 0)


def test_the_prefetch_thread_counts_no_hits_for_an_operation_without_slots(proto):
    p = proto(uniform_config(ranks=2, pages=2, alloc_may_fail=(True, False), queue_unallocated=True))
    s = p.state("S0.issue_alloc_failed.q0 S1.issue.q0 P0.take.q0")
    assert s[0].p_coll[2] == (0,)  # no query: 0 hits, although storage holds 2 pages
    s = p.step(p.step(s, "P1.take.q0"), "P0.revoke.q0")
    assert s[0].revoke_queue == (0,) and s[0].ops[0].slots == () and s[0].release_queue == 0
    s = p.state(
        "S0.issue_alloc_failed.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.revoke.q0 P1.revoke.q0 "
        "S0.drain_arrive S1.drain_arrive S0.drain"
    )
    assert not s[0].ops[0].ongoing  # the drained revoke drops it


def test_an_allocation_failure_at_issue_is_no_failed_delivery():
    """Under queue_unallocated, the rank whose allocation failed revokes the operation for every
    rank: nothing is to be delivered, so wait_complete_delivers does not judge the request."""
    protocol = PollProtocol(uniform_config(pages=1, **SEED_ALLOC))
    rank = protocol.initial_rank(0)
    op = rank.ops[0]._replace(issued=True, ready=True, stage=REVOKED)
    view = protocol.rank_view(rank._replace(ops=(op,), s_pc=(S_DRAIN, 0)))
    assert view.disturbed == (True,)


# ---- alloc_at = "hit" (0.5.16+) ----


def test_hit_time_allocation_issues_without_slots(proto):
    p = proto(uniform_config(pages=2, **STAGED))
    s = p.step(p.initial, "S0.issue.q0")
    op = s[0].ops[0]
    assert (op.issued, op.ongoing, op.allocated, op.slots) == (True, True, False, ())
    assert "S0.issue_alloc_failed.q0" not in p.enabled(p.initial)


def test_the_prefetch_thread_records_hits_on_the_hit_queue(proto):
    p = proto(uniform_config(pages=2, **STAGED))
    s = p.state("S0.issue.q0 P0.take.q0")
    assert actions_of(p, s, "P0.") == ["P0.record_hits.q0"]
    s = p.step(s, "P0.record_hits.q0")
    op = s[0].ops[0]
    assert (op.stage, op.hash_value, op.slots) == (HIT_QUEUED, 2, ())
    assert s[0].hit_queue == (0,) and s[0].prefetch_buffer == () and s[0].p_pc == -1


def test_the_prefetch_thread_still_revokes_below_the_clamped_threshold_and_frees_nothing(proto):
    p = proto(uniform_config(pages=2, hits=1, prefetch_threshold=2, **STAGED))
    s = p.step(p.state("S0.issue.q0 P0.take.q0"), "P0.revoke.q0")
    assert s[0].revoke_queue == (0,) and s[0].release_queue == 0 and s[0].ops[0].slots == ()


def test_the_drain_agrees_on_revoke_hit_and_release_queues_and_allocates(proto):
    p = proto(uniform_config(pages=2, **STAGED))
    s = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 S0.drain_arrive")
    assert s[0].s_coll[2] == (0, 1, 0)  # (revoke, hit, release)
    s = p.step(s, "S0.drain")
    op = s[0].ops[0]
    assert (op.stage, op.allocated, op.slots, op.hash_value) == (PUBLISHED, True, (HELD, HELD), 2)
    assert s[0].hit_queue == () and s[0].prefetch_buffer == (0,) and s[0].s_pc == (S_CHECK, 0)


@pytest.mark.parametrize(
    "room, threshold, slots, revoked",
    [(2, 1, 2, False), (1, 1, 1, False), (1, 2, 0, True), (0, 1, 0, True), (0, 0, 0, False)],
)
def test_the_drain_falls_back_to_the_prefix_that_fits_or_revokes(proto, room, threshold, slots, revoked):
    p = proto(uniform_config(pages=2, alloc_pages=room, prefetch_threshold=threshold, clamp_threshold=False, **STAGED))
    s = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 " + DRAIN)
    op = s[0].ops[0]
    if revoked:
        assert (op.stage, op.ongoing, op.allocated) == (REVOKED, False, False)
        assert s[0].prefetch_buffer == ()
    else:
        assert (op.stage, op.allocated, len(op.slots), op.hash_value) == (PUBLISHED, True, slots, slots)
        assert s[0].prefetch_buffer == (0,)


def test_the_drain_skips_a_hit_no_longer_in_ongoing_prefetch(proto):
    # the clock fires and the scheduler resolves q0 while the prefetch thread still holds it
    p = proto(uniform_config(pages=2, policy="timeout", **STAGED))
    s = p.state("S0.issue.q0 C0.timeout.q0 " + DRAIN + " S0.check.q0 P0.take.q0 P0.record_hits.q0 S0.terminate_unallocated.q0 " + DRAIN)
    op = s[0].ops[0]
    assert (op.stage, op.allocated) == (DROPPED, False) and s[0].prefetch_buffer == () and s[0].hit_queue == ()


def test_the_prefetch_thread_does_not_query_a_terminated_operation(proto):
    p = proto(uniform_config(pages=2, policy="timeout", **STAGED))
    s = p.state("S0.issue.q0 C0.timeout.q0 " + DRAIN + " S0.check.q0 S0.terminate_unallocated.q0 P0.take.q0")
    assert s[0].p_coll[2] == (0,)  # terminated: no query, 0 hits
    assert actions_of(p, s, "P0.") == ["P0.revoke.q0"]


def test_the_drain_revokes_a_terminated_hit(proto):
    protocol = PollProtocol(uniform_config(pages=2, **STAGED))
    op = protocol.initial_rank(0).ops[0]._replace(issued=True, ongoing=True, stage=HIT_QUEUED, hash_value=2, terminated=True)
    out = protocol.hit_drained(0, 0, op)
    assert (out.stage, out.ongoing, out.allocated) == (REVOKED, False, False)


def test_terminate_before_allocation_revokes_without_a_collective(proto):
    p = proto(uniform_config(pages=2, **STAGED), "buggy")
    s = p.state("S0.issue.q0 " + DRAIN + " S0.check.q0")
    assert s[0].s_pc == (S_MAX_WAIT, 0) and s[0].s_coll[0] == (C_TERMINATE, 0)  # the predicate comes first
    assert actions_of(p, s, "S0.") == ["S0.terminate_unallocated.q0"]
    s = p.step(s, "S0.terminate_unallocated.q0")
    op = s[0].ops[0]
    assert (op.terminated, op.ongoing, op.ready, op.inserted) == (True, False, True, NOT_INSERTED)
    assert s[0].s_coll == () and s[0].s_pc == (S_DRAIN, 0)


def test_best_effort_terminates_an_unallocated_operation_at_once(proto):
    p = proto(uniform_config(pages=2, policy="best_effort", **STAGED))
    s = p.state("S0.issue.q0 " + DRAIN)
    assert actions_of(p, s, "S0.") == ["S0.terminate_unallocated.q0"]
    allocated = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 " + DRAIN)
    s = p.step(allocated, "S0.check.q0")
    assert s[0].s_pc == (S_MIN_WAIT, 0) and s[0].s_coll[0] == (C_COMPLETED, 0)


def test_an_allocated_operation_terminates_and_inserts_as_late2025(proto):
    p = proto(uniform_config(pages=2, **STAGED))
    s = p.state(
        "S0.issue.q0 P0.take.q0 P0.record_hits.q0 " + DRAIN + " I0.take.q0 I0.write.q0 I0.increment.q0 "
        "I0.write.q0 I0.increment.q0 I0.release.q0 S0.check.q0 S0.terminate.q0 S0.insert.q0"
    )
    op = s[0].ops[0]
    assert op.inserted == 2 and op.slots == (IN_TREE, IN_TREE) and op.ready


def test_the_alloc_deterministic_assumption_is_explicit():
    spec = RequestSpec(pages=2, hits=(2, 2), failing=(frozenset(), frozenset()), alloc_pages=(2, 0))
    with pytest.raises(ValueError, match="alloc_deterministic"):
        Config(ranks=2, requests=(spec,), **STAGED)
    config = Config(ranks=2, requests=(spec,), alloc_deterministic=False, **STAGED)
    assert [config.hit_alloc_pages(0, r, 2) for r in range(2)] == [2, None]
    assert config.delivered_pages(0) is None  # revoked on rank 1: nothing to deliver


def test_rank_classes_tell_ranks_with_different_room_apart():
    spec = RequestSpec(pages=2, hits=(2, 2, 2), failing=(frozenset(),) * 3, alloc_pages=(2, 1, 2))
    protocol = PollProtocol(Config(ranks=3, requests=(spec,), alloc_deterministic=False, **STAGED))
    assert sorted(protocol.rank_classes()) == [(0, 2), (1,)]


# ---- threshold_test = "drain" (0.5.18) ----


def test_the_drain_threshold_publishes_every_hit_count_to_the_hit_queue(proto):
    p = proto(uniform_config(pages=2, hits=0, prefetch_threshold=2, **DRAIN_TEST))
    s = p.state("S0.issue.q0 P0.take.q0")
    assert actions_of(p, s, "P0.") == ["P0.record_hits.q0"]  # no revoke in the prefetch thread
    s = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 S0.drain_arrive")
    assert s[0].s_coll[2] == (1, 0)  # (hit, release): no revoke queue
    s = p.step(s, "S0.drain")
    assert (s[0].ops[0].stage, s[0].ops[0].ongoing) == (REVOKED, False)


@pytest.mark.parametrize("threshold, revoked", [(3, True), (2, False), (0, False)])
def test_the_drain_compares_hits_with_the_raw_threshold(proto, threshold, revoked):
    # page_size 2, 1 hit page = 2 tokens; the clamp (max(threshold, page_size)) plays no part here
    p = proto(uniform_config(pages=2, hits=1, page_size=2, prefetch_threshold=threshold, **DRAIN_TEST))
    s = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 " + DRAIN)
    assert (s[0].ops[0].stage == REVOKED) == revoked


def test_the_raw_threshold_of_zero_publishes_an_empty_page_list(proto):
    p = proto(uniform_config(pages=2, hits=0, prefetch_threshold=0, **DRAIN_TEST))
    s = p.state("S0.issue.q0 P0.take.q0 P0.record_hits.q0 " + DRAIN)
    op = s[0].ops[0]
    assert (op.stage, op.allocated, op.slots, op.hash_value) == (PUBLISHED, True, (), 0)


# ---- configurations the model does not define ----


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(threshold_test="drain"), "needs alloc_at"),
        (dict(alloc_at="hit", queue_unallocated=True), "queue_unallocated"),
        (dict(alloc_at="hit", alloc_may_fail=(True,)), "alloc_pages"),
        (dict(alloc_at="bogus"), "alloc_at must be one of"),
        (dict(tail_releases=3), "tail_releases must be one of"),
        (dict(completed_min="never"), "completed_min must be one of"),
        (dict(queue_unallocated=True, alloc_may_fail=(True,), prefetch_threshold=0, clamp_threshold=False), "TypeError"),
    ],
)
def test_combinations_no_release_has_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        uniform_config(pages=2, **changes)


def test_alloc_pages_is_only_for_the_hit_time_allocation():
    with pytest.raises(ValueError, match="alloc_pages is the hit-time allocation"):
        uniform_config(pages=2, alloc_pages=1)
    assert uniform_config(pages=2).requests[0].alloc_pages == (2,)


# ---- what the configuration makes possible ----


@pytest.mark.parametrize(
    "config, possible, impossible",
    [
        (uniform_config(pages=2), set(), SHAPE_KINDS),
        (uniform_config(pages=2, alloc_may_fail=(True,), **options("seed")), {"S.ready_unallocated"}, {"P.record_hits"}),
        (uniform_config(pages=2, **options("seed")), set(), {"S.ready_unallocated"}),
        (uniform_config(pages=2, **STAGED), {"P.record_hits", "S.terminate_unallocated", "P.revoke"},
         {"P.publish", "S.ready_unallocated", "I.increment_refused", "S.ready_without_prefetch"}),
        (uniform_config(pages=2, **DRAIN_TEST), {"P.record_hits"}, {"P.revoke", "P.publish"}),
        (uniform_config(pages=2, hits=1, prefetch_threshold=2, **DRAIN_TEST), {"S.ready_without_prefetch"}, set()),
        (uniform_config(pages=2, policy="timeout", **STAGED), {"I.increment_refused"}, set()),
        (uniform_config(ranks=2, pages=2, alloc_pages={1: 0}, alloc_deterministic=False, **STAGED),
         {"I.write", "S.terminate_unallocated"}, {"S.terminate", "S.insert"}),
    ],
)
def test_possible_kinds_follow_the_shape(config, possible, impossible):
    kinds = set(PollProtocol(config).possible_kinds())
    assert possible <= kinds and not impossible & kinds


def test_every_possible_shape_step_fires_somewhere(proto):
    from prefetch_check.explorer.bfs import explore

    fired = set()
    for config in (
        uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), **options("seed")),
        uniform_config(pages=2, **STAGED),
        uniform_config(ranks=2, pages=1, round_collectives=2),
    ):
        for predicate in ("buggy", "fixed"):
            fired |= set(explore(proto(config, predicate).model).action_counts)
    assert SHAPE_KINDS <= fired


def test_a_staged_rank_waits_only_in_its_own_collectives():
    """The hit queue adds no collective: the registers are the two groups' as before."""
    protocol = PollProtocol(uniform_config(ranks=2, pages=1, **STAGED))
    rank = protocol.initial_rank(0)
    assert waits_of((rank.s_coll, rank.p_coll)) == ()
    assert {c.group for c in protocol.collectives.values()} == {"s_coll", "p_coll"}
    assert DONE == 1
