"""Every action of the protocol: a replayed schedule where it is enabled (its guard) and what it changes (its effect).

Schedules are the action ids a trace prints (`S0.issue.q0 P0.take.q0 ...`), replayed
through the model from the initial state, so each test also checks that the step is
reachable the way PROTOCOL.md describes it.
"""

from __future__ import annotations

import pytest

from prefetch_check.explorer.bfs import explore
from models import ACTION_KINDS
from test_model_release_shapes import SHAPE_KINDS
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.releases import options
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED,
    C_HITS,
    C_TERMINATE,
    DONE,
    HELD,
    IN_TREE,
    IO_COUNT,
    IO_READ,
    IO_RELEASE,
    NOT_INSERTED,
    PUBLISHED,
    QUERIED,
    QUEUED,
    RELEASED,
    REVOKED,
    S_CHECK,
    S_DRAIN,
    S_DRAIN_WAIT,
    S_ISSUE,
    S_MAX_WAIT,
    S_MIN_WAIT,
    WAITING,
    Op,
)

# The action kinds this module exercises; a new kind in the model must get a test here.
COVERED = {
    "S.issue", "S.issue_alloc_failed", "S.issue_skipped", "S.drain_arrive", "S.drain",
    "S.ready_without_prefetch", "S.check", "S.keep_waiting", "S.terminate", "S.insert",
    "P.take", "P.revoke", "P.publish", "I.take", "I.write", "I.load_failed", "I.increment",
    "I.increment_refused", "I.release", "C.timeout",
} | SHAPE_KINDS  # the release shapes' own steps: tests/test_model_release_shapes.py

DRAIN_AND_CHECK = "S0.drain_arrive S0.drain S0.check.q0"


def io_actions(p, state, r=0):
    return [a for a in p.enabled(state) if a.startswith(f"I{r}.")]


def prefetch_actions(p, state, r=0):
    return [a for a in p.enabled(state) if a.startswith(f"P{r}.")]


def test_every_action_kind_has_a_test_here():
    assert set(ACTION_KINDS) == COVERED


def test_every_action_kind_fires_in_some_small_configuration(proto):
    """An action that never fires in any scenario means the model cannot reach that part of the protocol."""
    configs = [
        uniform_config(ranks=2, pages=2, alloc_may_fail=(True, False), failing={1: {1}}),
        uniform_config(pages=2, hits=0, policy="timeout"),
        uniform_config(pages=1, prefetch_threshold=2),
        uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), **options("seed")),
        uniform_config(pages=2, **options("staged")),
        uniform_config(ranks=2, pages=1, round_collectives=1),
    ]
    fired = set()
    for predicate in ("buggy", "fixed"):
        for config in configs:
            fired |= set(explore(proto(config, predicate).model).action_counts)
    assert fired == set(ACTION_KINDS)


# ---- scheduler ----


def test_issue_allocates_slots_and_queues_the_operation(proto):
    p = proto(uniform_config(requests=2, pages=2))
    assert p.enabled(p.initial) == ["S0.issue.q0"]
    s = p.step(p.initial, "S0.issue.q0")
    rank = s[0]
    op = rank.ops[0]
    assert (op.issued, op.ongoing, op.ready) == (True, True, False)
    assert op.slots == (HELD, HELD)
    assert (op.stage, op.hash_value, op.completed) == (QUEUED, 0, 0)
    assert rank.prefetch_queue == (0,)
    assert rank.s_pc == (S_ISSUE, 1)
    assert rank.ops[1] == Op()
    s = p.step(s, "S0.issue.q1")
    assert s[0].prefetch_queue == (0, 1)
    assert s[0].s_pc == (S_DRAIN, 0)


def test_issue_slots_count_pages_not_tokens(proto):
    p = proto(uniform_config(pages=3, page_size=2))
    assert p.state("S0.issue.q0")[0].ops[0].slots == (HELD,) * 3


def test_allocation_failure_is_a_choice_of_the_rank_that_may_fail(proto):
    p = proto(uniform_config(ranks=2, pages=2, alloc_may_fail=(True, False)))
    enabled = p.enabled(p.initial)
    assert "S0.issue.q0" in enabled and "S0.issue_alloc_failed.q0" in enabled
    assert "S1.issue.q0" in enabled and "S1.issue_alloc_failed.q0" not in enabled
    s = p.step(p.initial, "S0.issue_alloc_failed.q0")
    assert s[0].ops[0] == Op()  # no operation, no ongoing_prefetch entry
    assert s[0].prefetch_queue == ()
    assert s[0].s_pc == (S_DRAIN, 0)
    assert s[1] == p.initial[1]


def test_allocation_failure_makes_the_request_ready_with_nothing_loaded(proto):
    p = proto(uniform_config(pages=2, alloc_may_fail=(True,)))
    s = p.state("S0.issue_alloc_failed.q0 S0.drain_arrive S0.drain")
    assert p.enabled(s) == ["S0.ready_without_prefetch.q0"]
    op = p.step(s, "S0.ready_without_prefetch.q0")[0].ops[0]
    assert op.ready and op.inserted == NOT_INSERTED and op.slots == ()


@pytest.mark.parametrize(
    "pages, page_size, threshold, issued",
    [(2, 1, 3, False), (2, 1, 2, True), (2, 2, 3, True), (1, 1, 0, True)],
)
def test_issue_is_skipped_below_the_threshold(proto, pages, page_size, threshold, issued):
    p = proto(uniform_config(pages=pages, page_size=page_size, prefetch_threshold=threshold))
    assert p.enabled(p.initial) == ["S0.issue.q0" if issued else "S0.issue_skipped.q0"]
    if not issued:
        s = p.step(p.initial, "S0.issue_skipped.q0")
        assert s[0].ops[0] == Op() and s[0].prefetch_queue == () and s[0].s_pc == (S_DRAIN, 0)
        s = p.state("S0.issue_skipped.q0 S0.drain_arrive S0.drain S0.ready_without_prefetch.q0")
        assert s[0].ops[0].ready and s[0].ops[0].inserted == NOT_INSERTED


def test_drain_agrees_on_the_min_of_queue_sizes_over_ranks(proto):
    # hits=0: both prefetch threads revoke; rank 0 revokes before the first drain, rank 1 after it
    p = proto(uniform_config(ranks=2, pages=2, hits=0))
    s = p.state("S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.revoke.q0 S0.drain_arrive")
    assert s[0].s_pc == (S_DRAIN_WAIT, 0)
    assert s[0].s_coll[1:3] == (WAITING, (1, 2))  # (revoke queue size, release queue size)
    assert "S0.drain" not in p.enabled(s)  # waits for rank 1
    s = p.step(s, "S1.drain_arrive")
    assert s[0].s_coll[1:] == s[1].s_coll[1:] == (DONE, (0, 0))
    s = p.step(s, "S0.drain")
    rank = s[0]
    assert rank.revoke_queue == (0,) and rank.release_queue == 2  # nothing popped: rank 1 had nothing
    assert rank.ops[0].ongoing and rank.s_coll == () and rank.s_pc == (S_CHECK, 0)


def test_drain_pops_agreed_revoked_ids_from_ongoing_prefetch(proto):
    p = proto(uniform_config(ranks=2, pages=2, hits=0))
    s = p.state(
        "S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.revoke.q0 S0.drain_arrive S1.drain_arrive "
        "S0.drain S1.drain P1.revoke.q0 S0.check.q0 S1.check.q0 S0.keep_waiting.q0 S1.keep_waiting.q0 "
        "S0.drain_arrive S1.drain_arrive"
    )
    assert s[0].s_coll[1:] == (DONE, (1, 2))
    s = p.step(s, "S0.drain")
    rank = s[0]
    assert rank.revoke_queue == () and rank.release_queue == 0
    assert not rank.ops[0].ongoing and not rank.ops[0].ready
    assert "S0.ready_without_prefetch.q0" in p.enabled(s)


def test_ready_without_prefetch_only_when_not_in_ongoing_prefetch(proto):
    p = proto(uniform_config(pages=2, hits=0))
    before_drain = p.state("S0.issue.q0 P0.take.q0 P0.revoke.q0 S0.drain_arrive")
    s = p.step(before_drain, "S0.drain")
    assert "S0.ready_without_prefetch.q0" in p.enabled(s)
    op = p.step(s, "S0.ready_without_prefetch.q0")[0].ops[0]
    assert op.ready and op.inserted == NOT_INSERTED and not op.terminated
    # still in ongoing_prefetch (revoked but not drained yet): the predicate runs instead
    s = p.state("S0.issue.q0 S0.drain_arrive S0.drain P0.take.q0 P0.revoke.q0")
    assert "S0.check.q0" in p.enabled(s)


ONE_PAGE_TWO_RANKS_LOADED_ON_RANK_1 = (
    "S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.publish.q0 P1.publish.q0 "
    "I1.take.q0 {io1} S0.drain_arrive S1.drain_arrive S0.drain S1.drain"
)


@pytest.mark.parametrize("predicate, not_can", [("fixed", 1), ("buggy", 0)])
def test_check_arrives_in_max_with_not_can_terminate_and_terminated(proto, predicate, not_can):
    p = proto(uniform_config(ranks=2, pages=1), predicate)
    s = p.state("S0.issue.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0")
    assert s[0].s_pc == (S_MAX_WAIT, 0)
    assert s[0].s_coll[:3] == ((C_TERMINATE, 0), WAITING, (not_can, 0))
    assert not any(a.startswith("S0.") for a in p.enabled(s))  # waits for rank 1


def test_max_over_ranks_keeps_waiting_while_one_rank_cannot_terminate(proto):
    p = proto(uniform_config(ranks=2, pages=1))
    s = p.state(ONE_PAGE_TWO_RANKS_LOADED_ON_RANK_1.format(io1="I1.write.q0 I1.increment.q0") + " S0.check.q0 S1.check.q0")
    assert s[1].s_coll[2] == (1, 0)  # rank 0 (nothing loaded) cannot terminate, rank 1 could
    assert "S0.keep_waiting.q0" in p.enabled(s) and "S1.keep_waiting.q0" in p.enabled(s)


@pytest.mark.parametrize("shape, outcome", [("late2025", "terminate"), ("seed", "keep_waiting")])
def test_terminated_on_one_rank_ends_the_wait_in_late2025_only(proto, shape, outcome):
    p = proto(uniform_config(ranks=2, pages=1, failing={1: {0}}, shape=shape))
    s = p.state(ONE_PAGE_TWO_RANKS_LOADED_ON_RANK_1.format(io1="I1.load_failed.q0") + " S0.check.q0 S1.check.q0")
    assert s[0].s_coll[2] == ((1, 1) if shape == "late2025" else (1, 0))
    assert f"S0.{outcome}.q0" in p.enabled(s) and f"S1.{outcome}.q0" in p.enabled(s)


def test_seed_shape_does_not_share_the_terminated_flag(proto):
    """The seed shape reduces only can_terminate: a set flag is not brought to the collective."""
    for shape, brought in (("seed", 0), ("late2025", 1)):
        p = proto(uniform_config(pages=1, shape=shape))
        s = p.state("S0.issue.q0 S0.drain_arrive S0.drain")
        s = (s[0]._replace(ops=(s[0].ops[0]._replace(terminated=True),)),)
        s = p.step(s, "S0.check.q0")
        assert s[0].s_coll[2] == (1, brought)


def test_keep_waiting_moves_to_the_next_unresolved_request_or_the_next_round(proto):
    p = proto(uniform_config(requests=2, pages=1))
    s = p.state("S0.issue.q0 S0.issue.q1 S0.drain_arrive S0.drain S0.check.q0")
    assert s[0].s_coll == ((C_TERMINATE, 0), DONE, (1, 0))  # R=1: the last to arrive is the only one
    assert set(p.enabled(s)) == {"S0.keep_waiting.q0", "P0.take.q0"}
    s = p.step(s, "S0.keep_waiting.q0")
    assert s[0].s_pc == (S_CHECK, 1) and s[0].s_coll == ()
    s = p.step(p.step(s, "S0.check.q1"), "S0.keep_waiting.q1")
    assert s[0].s_pc == (S_DRAIN, 0)
    assert not any(op.terminated or op.ready for op in s[0].ops)


@pytest.mark.parametrize("page_size", [1, 2])
def test_terminate_marks_the_operation_and_arrives_with_completed_tokens(proto, page_size):
    p = proto(uniform_config(pages=2, page_size=page_size))
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment.q0 I0.write.q0 I0.increment.q0 " + DRAIN_AND_CHECK)
    assert "S0.terminate.q0" in p.enabled(s)
    s = p.step(s, "S0.terminate.q0")
    assert s[0].ops[0].terminated
    assert s[0].s_pc == (S_MIN_WAIT, 0)
    assert s[0].s_coll == ((C_COMPLETED, 0), DONE, (2 * page_size,))


def test_buggy_accepts_before_publish_and_terminates_with_nothing(proto):
    p = proto(uniform_config(pages=2), "buggy")
    s = p.state("S0.issue.q0 " + DRAIN_AND_CHECK)
    assert s[0].s_coll == ((C_TERMINATE, 0), DONE, (0, 0))
    assert set(p.enabled(s)) == {"S0.terminate.q0", "P0.take.q0"}
    s = p.step(s, "S0.terminate.q0")
    assert s[0].s_coll[2] == (0,) and s[0].ops[0].terminated


def test_best_effort_check_terminates_at_once_without_the_max_collective(proto):
    p = proto(uniform_config(pages=2, policy="best_effort"))
    s = p.state("S0.issue.q0 " + DRAIN_AND_CHECK)
    assert s[0].ops[0].terminated
    assert s[0].s_pc == (S_MIN_WAIT, 0) and s[0].s_coll == ((C_COMPLETED, 0), DONE, (0,))


@pytest.mark.parametrize("page_size", [1, 2])
def test_insert_hands_agreed_pages_to_the_tree_and_releases_min_to_completed(proto, page_size):
    # rank 1 fails on page 1 (late2025: mark_terminate), rank 0 loads both pages: MIN completed = 1 page
    p = proto(uniform_config(ranks=2, pages=2, page_size=page_size, failing={1: {1}}))
    s = p.state(
        "S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.publish.q0 P1.publish.q0 "
        "I0.take.q0 I0.write.q0 I0.increment.q0 I0.write.q0 I0.increment.q0 I0.release.q0 "
        "I1.take.q0 I1.write.q0 I1.increment.q0 I1.load_failed.q0 I1.release.q0 "
        "S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0 S0.terminate.q0 S1.terminate.q0"
    )
    assert s[0].s_coll == s[1].s_coll == ((C_COMPLETED, 0), DONE, (page_size,))
    assert s[0].release_queue == 0 and s[1].release_queue == 1  # rank 1's IO thread released page 1
    s = p.step(s, "S0.insert.q0")
    op = s[0].ops[0]
    assert op.slots == (IN_TREE, RELEASED)  # [min_completed, completed) = page 1 released by the scheduler
    assert op.inserted == page_size and op.ready and not op.ongoing
    assert s[0].release_queue == 1 and s[0].s_coll == () and s[0].s_pc == (S_DRAIN, 0)
    s = p.step(s, "S1.insert.q0")
    op = s[1].ops[0]
    assert op.slots == (IN_TREE, RELEASED) and op.inserted == page_size
    assert s[1].release_queue == 1  # nothing more: completed == min_completed on rank 1


# ---- prefetch thread ----


def test_prefetch_take_arrives_with_local_hits_and_departs_with_the_min(proto):
    spec = RequestSpec(pages=3, hits=(3, 1), failing=(frozenset(), frozenset()))
    p = proto(Config(ranks=2, requests=(spec,)))
    s = p.state("S0.issue.q0 S1.issue.q0 P0.take.q0")
    rank = s[0]
    assert rank.p_pc == 0 and rank.prefetch_queue == () and rank.ops[0].stage == QUERIED
    assert rank.p_coll[:3] == ((C_HITS, 0), WAITING, (3,))
    assert not any(a.startswith("P0.") for a in p.enabled(s))  # waits for rank 1
    s = p.step(s, "P1.take.q0")
    assert s[0].p_coll == s[1].p_coll == ((C_HITS, 0), DONE, (1,))
    s = p.step(s, "P0.publish.q0")
    rank = s[0]
    op = rank.ops[0]
    assert (op.stage, op.hash_value) == (PUBLISHED, 1)  # the agreed hits, not rank 0's own 3
    assert op.slots == (HELD, RELEASED, RELEASED)  # [hits, L) released
    assert rank.release_queue == 2 and rank.prefetch_buffer == (0,)
    assert rank.p_pc == -1 and rank.p_coll == ()


def test_revoke_releases_every_slot_and_leaves_hash_value_empty(proto):
    p = proto(uniform_config(pages=2, hits=1, prefetch_threshold=2))
    s = p.state("S0.issue.q0 P0.take.q0")
    assert prefetch_actions(p, s) == ["P0.revoke.q0"]
    rank = p.step(s, "P0.revoke.q0")[0]
    op = rank.ops[0]
    assert (op.stage, op.hash_value) == (REVOKED, 0)
    assert op.slots == (RELEASED, RELEASED)
    assert rank.revoke_queue == (0,) and rank.release_queue == 2
    assert rank.prefetch_buffer == () and rank.p_pc == -1 and rank.p_coll == ()
    assert op.ongoing  # only the scheduler's drain drops it from ongoing_prefetch


@pytest.mark.parametrize(
    "page_size, threshold, clamp, hits, decision",
    [
        (1, 0, True, 0, "revoke"),  # the clamp raises threshold 0 to one page
        (1, 0, False, 0, "publish"),  # unclamped: 0 hit tokens are not below 0, an empty page list is published
        (2, 3, True, 1, "revoke"),  # 2 hit tokens < 3
        (2, 3, True, 2, "publish"),
        (2, 4, False, 2, "publish"),  # equal to the threshold is enough
        (2, 1, True, 0, "revoke"),
    ],
)
def test_revoke_or_publish_against_the_clamped_threshold(proto, page_size, threshold, clamp, hits, decision):
    p = proto(uniform_config(pages=2, hits=hits, page_size=page_size, prefetch_threshold=threshold, clamp_threshold=clamp))
    s = p.state("S0.issue.q0 P0.take.q0")
    assert prefetch_actions(p, s) == [f"P0.{decision}.q0"]
    op = p.step(s, f"P0.{decision}.q0")[0].ops[0]
    if decision == "publish":
        assert op.hash_value == hits and op.slots == (HELD,) * hits + (RELEASED,) * (2 - hits)


# ---- IO thread ----

PUBLISHED_2 = "S0.issue.q0 P0.take.q0 P0.publish.q0"


def test_io_take_dequeues_and_starts_at_page_zero(proto):
    p = proto(uniform_config(pages=2))
    s = p.step(p.state(PUBLISHED_2), "I0.take.q0")
    assert s[0].prefetch_buffer == () and s[0].i_pc == (0, 0, IO_READ)


def test_io_take_of_an_empty_page_list_goes_straight_to_release(proto):
    p = proto(uniform_config(pages=2, hits=0, prefetch_threshold=0, clamp_threshold=False))
    s = p.step(p.state(PUBLISHED_2), "I0.take.q0")
    assert s[0].i_pc == (0, 0, IO_RELEASE)


def test_io_writes_a_page_before_it_counts_it(proto):
    p = proto(uniform_config(pages=2))
    s = p.step(p.state(PUBLISHED_2), "I0.take.q0")
    assert io_actions(p, s) == ["I0.write.q0"]  # no increment before the write
    s = p.step(s, "I0.write.q0")
    op = s[0].ops[0]
    assert (op.written, op.completed, s[0].i_pc) == (1, 0, (0, 0, IO_COUNT))
    assert io_actions(p, s) == ["I0.increment.q0"]
    s = p.step(s, "I0.increment.q0")
    assert (s[0].ops[0].completed, s[0].i_pc) == (1, (0, 1, IO_READ))
    s = p.step(p.step(s, "I0.write.q0"), "I0.increment.q0")
    assert (s[0].ops[0].written, s[0].ops[0].completed, s[0].i_pc) == (2, 2, (0, 0, IO_RELEASE))


def test_fixed_predicate_accepts_only_after_the_last_increment(proto):
    p = proto(uniform_config(pages=1))
    written = p.state(PUBLISHED_2 + " I0.take.q0 I0.write.q0 " + DRAIN_AND_CHECK)
    assert written[0].s_coll[2] == (1, 0)  # written but not counted: wait
    counted = p.state(PUBLISHED_2 + " I0.take.q0 I0.write.q0 I0.increment.q0 " + DRAIN_AND_CHECK)
    assert counted[0].s_coll[2] == (0, 0)


def test_increment_is_refused_after_terminate(proto):
    p = proto(uniform_config(pages=2), "buggy")
    s = p.state("S0.issue.q0 " + DRAIN_AND_CHECK + " S0.terminate.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0")
    assert io_actions(p, s) == ["I0.increment_refused.q0"]
    s = p.step(s, "I0.increment_refused.q0")
    assert s[0].ops[0].completed == 0 and s[0].i_pc == (0, 0, IO_RELEASE)
    s = p.step(s, "I0.release.q0")
    assert s[0].ops[0].slots == (RELEASED, RELEASED) and s[0].i_pc == ()


@pytest.mark.parametrize("shape", ["late2025", "seed"])
def test_load_failure_stops_the_batch_and_marks_terminate_in_late2025_only(proto, shape):
    p = proto(uniform_config(pages=2, failing={0: {1}}, shape=shape))
    s = p.state(PUBLISHED_2 + " I0.take.q0 I0.write.q0 I0.increment.q0")
    assert io_actions(p, s) == ["I0.load_failed.q0"]
    s = p.step(s, "I0.load_failed.q0")
    op = s[0].ops[0]
    assert op.io_failed and op.terminated == (shape == "late2025")
    assert (op.written, op.completed, s[0].i_pc) == (1, 1, (0, 0, IO_RELEASE))


def test_io_release_gives_back_completed_to_hits(proto):
    p = proto(uniform_config(pages=3, hits=2, failing={0: {1}}))
    s = p.state(PUBLISHED_2 + " I0.take.q0 I0.write.q0 I0.increment.q0 I0.load_failed.q0")
    assert s[0].ops[0].slots == (HELD, HELD, RELEASED) and s[0].release_queue == 1
    s = p.step(s, "I0.release.q0")
    assert s[0].ops[0].slots == (HELD, RELEASED, RELEASED)  # page 0 is counted: the scheduler owns it
    assert s[0].release_queue == 2 and s[0].i_pc == ()


def test_io_release_after_a_full_load_gives_back_nothing(proto):
    p = proto(uniform_config(pages=1))
    s = p.state(PUBLISHED_2 + " I0.take.q0 I0.write.q0 I0.increment.q0 I0.release.q0")
    assert s[0].ops[0].slots == (HELD,) and s[0].release_queue == 0


# ---- timeout clock ----


def test_timeout_clock_fires_any_time_after_issue_until_resolved(proto):
    p = proto(uniform_config(ranks=2, pages=1, policy="timeout"))
    assert not any(a.startswith("C") for a in p.enabled(p.initial))
    s = p.state("S0.issue.q0")
    assert "C0.timeout.q0" in p.enabled(s) and "C1.timeout.q0" not in p.enabled(s)
    s = p.step(s, "C0.timeout.q0")
    assert s[0].ops[0].timed_out and not s[1].ops[0].timed_out  # each rank has its own clock
    assert "C0.timeout.q0" not in p.enabled(s)  # fires once


def test_fixed_accepts_a_timed_out_operation_with_nothing_published(proto):
    p = proto(uniform_config(pages=2, policy="timeout"))
    s = p.state("S0.issue.q0 C0.timeout.q0 " + DRAIN_AND_CHECK)
    assert s[0].s_coll == ((C_TERMINATE, 0), DONE, (0, 0))
    s = p.state("S0.issue.q0 C0.timeout.q0 " + DRAIN_AND_CHECK + " S0.terminate.q0 S0.insert.q0")
    assert s[0].ops[0].ready and s[0].ops[0].inserted == 0
    assert not any(a.startswith("C") for a in p.enabled(s))  # resolved: the clock no longer matters


@pytest.mark.parametrize("params", [dict(policy="wait_complete"), dict(policy="best_effort"), dict(policy="timeout", timeout_clock=False)])
def test_no_clock_without_the_timeout_policy_and_its_clock(proto, params):
    p = proto(uniform_config(pages=1, **params))
    fired = explore(p.model).action_counts
    assert "C.timeout" not in fired and fired["S.issue"] > 0


def test_each_thread_is_sequential(proto):
    """At most one step per thread of a rank is enabled, except the scheduler's allocation choice at issue."""
    p = proto(uniform_config(ranks=2, pages=2, alloc_may_fail=(True, True), failing={1: {1}}, policy="timeout"))
    ex = explore(p.model)
    assert ex.complete
    for state in ex.states:
        per_thread: dict = {}
        for action, _ in p.model.successors(state):
            if action.thread != "C":
                per_thread.setdefault(action.actor, []).append(action.step)
        for actor, steps in per_thread.items():
            assert len(steps) == 1 or sorted(steps) == ["issue", "issue_alloc_failed"], (actor, steps)
