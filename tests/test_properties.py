"""Every property of the protocol: a schedule (or hand-built state) that violates it, and one that does not.

The checks are called directly on replayed states, so each test pins what the
property itself says, independent of the search. Properties the real protocol cannot
violate (data integrity, double release, a leak) are shown to fire on states built
with `_replace`.
"""

from __future__ import annotations

import pytest

from prefetch_check.explorer.check import check
from prefetch_check.explorer.result import NOT_APPLICABLE, VERIFIED, VIOLATED
from prefetch_check.explorer.replay import replay
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.properties import NAMES
from prefetch_check.model.protocols.poll.state import C_HITS, DOUBLE, HELD, IN_TREE, RELEASED, give_back

DRAIN = "S0.drain_arrive S0.drain"
EARLY = "S0.issue.q0 " + DRAIN
ACCEPT_AND_INSERT = "S0.check.q0 S0.terminate.q0 S0.insert.q0"
FULL_LOAD_2 = (
    "S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment.q0 "
    "I0.write.q0 I0.increment.q0 I0.release.q0 S0.drain_arrive S0.drain S0.check.q0 S0.terminate.q0 S0.insert.q0"
)
BUGGY_EARLY_INSERT = EARLY + " " + ACCEPT_AND_INSERT
# the threads finish a terminated operation: load nothing, release everything
IO_AFTER_TERMINATE = "P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment_refused.q0 I0.release.q0"
ALLOC_MISMATCH = (
    "S0.issue_alloc_failed.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain "
    "S0.ready_without_prefetch.q0 S1.check.q0 S0.drain_arrive"
)


def with_op(state, r, q, **changes):
    """A copy of `state` with fields of one operation changed (a hand-built state)."""
    rank = state[r]
    ops = rank.ops[:q] + (rank.ops[q]._replace(**changes),) + rank.ops[q + 1 :]
    return state[:r] + (rank._replace(ops=ops),) + state[r + 1 :]


def test_the_model_judges_exactly_the_named_properties(proto):
    assert [p.name for p in proto(uniform_config()).model.properties()] == list(NAMES)


# ---- no early acceptance (a step property: judged on the check step) ----


def test_no_early_acceptance_fires_when_buggy_accepts_an_unpublished_operation(proto):
    p = proto(uniform_config(pages=2), "buggy")
    reason = p.prop("no_early_acceptance").check(*p.action(p.state(EARLY), "S0.check.q0"))
    assert "rank 0" in reason and "request 0" in reason and "empty" in reason


def test_no_early_acceptance_holds_when_fixed_waits_for_the_publish(proto):
    p = proto(uniform_config(pages=2), "fixed")
    assert p.prop("no_early_acceptance").check(*p.action(p.state(EARLY), "S0.check.q0")) is None


@pytest.mark.parametrize(
    "params, schedule",
    [
        (dict(pages=2), "S0.issue.q0 P0.take.q0 P0.publish.q0 " + DRAIN),  # published: 0 == 2 is false
        (dict(pages=2, hits=0), EARLY + " P0.take.q0 P0.revoke.q0"),  # revoked, not drained yet
        (dict(pages=2, policy="timeout"), "S0.issue.q0 C0.timeout.q0 " + DRAIN),  # the clock fired
    ],
)
def test_no_early_acceptance_spares_published_revoked_and_timed_out_operations(proto, params, schedule):
    p = proto(uniform_config(**params), "buggy")
    assert p.prop("no_early_acceptance").check(*p.action(p.state(schedule), "S0.check.q0")) is None


def test_no_early_acceptance_looks_only_at_the_check_step(proto):
    p = proto(uniform_config(pages=2), "buggy")
    prop = p.prop("no_early_acceptance")
    s = p.state(EARLY)
    assert prop.check(*p.action(s, "P0.take.q0")) is None
    assert prop.check(*p.action(s, "S0.check.q0")) is not None


def test_no_early_acceptance_is_not_applicable_to_best_effort(proto):
    p = proto(uniform_config(policy="best_effort"), "buggy")
    assert p.prop("no_early_acceptance").not_applicable
    assert check(p.model).verdict("no_early_acceptance") == NOT_APPLICABLE


# ---- wait_complete delivers ----


def test_delivers_fires_when_buggy_inserts_nothing_of_two_stored_pages(proto):
    p = proto(uniform_config(pages=2), "buggy")
    s = p.state(BUGGY_EARLY_INSERT + " " + IO_AFTER_TERMINATE)
    assert p.model.protocol.quiescent(s)
    reason = p.prop("wait_complete_delivers").check(s)
    assert "request 0 with 0 tokens inserted" in reason and "agreed on 2 hit tokens" in reason


def test_delivers_is_judged_once_every_thread_is_idle(proto):
    """Before that, a load failure or a timeout that would excuse the request may still come."""
    p = proto(uniform_config(pages=2), "buggy")
    s = p.state(BUGGY_EARLY_INSERT)
    assert s[0].ops[0].inserted == 0 and not p.model.protocol.quiescent(s)
    assert p.prop("wait_complete_delivers").check(s) is None


def test_delivers_fires_on_a_request_resolved_with_nothing_inserted(proto):
    p = proto(uniform_config(pages=2))
    done = p.state(FULL_LOAD_2)
    assert p.prop("wait_complete_delivers").check(done) is None
    reason = p.prop("wait_complete_delivers").check(with_op(done, 0, 0, inserted=-1))
    assert "with nothing inserted" in reason


def test_delivers_holds_after_a_full_load(proto):
    p = proto(uniform_config(pages=2, page_size=2))
    s = p.state(FULL_LOAD_2)
    assert s[0].ops[0].inserted == 4
    assert p.prop("wait_complete_delivers").check(s) is None


def test_delivers_expects_the_agreed_hits_not_the_local_ones(proto):
    spec = RequestSpec(pages=2, hits=(2, 1), failing=(frozenset(), frozenset()))
    p = proto(Config(ranks=2, requests=(spec,)))
    s = p.state(
        "S0.issue.q0 S1.issue.q0 P0.take.q0 P1.take.q0 P0.publish.q0 P1.publish.q0 "
        "I0.take.q0 I0.write.q0 I0.increment.q0 I0.release.q0 I1.take.q0 I1.write.q0 I1.increment.q0 I1.release.q0 "
        "S0.drain_arrive S1.drain_arrive S0.drain S1.drain S0.check.q0 S1.check.q0 S0.terminate.q0 S1.terminate.q0 "
        "S0.insert.q0 S1.insert.q0"
    )
    prop = p.prop("wait_complete_delivers")
    assert [rank.ops[0].inserted for rank in s] == [1, 1] and p.model.protocol.quiescent(s)
    assert prop.check(s) is None
    assert prop.check(with_op(s, 1, 0, inserted=2)) is not None


def test_delivers_excuses_a_load_failure_only_where_it_happened(proto):
    p = proto(uniform_config(pages=2))
    prop = p.prop("wait_complete_delivers")
    short = with_op(p.state(FULL_LOAD_2), 0, 0, inserted=1)
    assert p.model.protocol.quiescent(short) and prop.check(short) is not None
    assert prop.check(with_op(short, 0, 0, io_failed=True)) is None
    failing = proto(uniform_config(pages=2, failing={0: {1}}))
    s = failing.state(
        "S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment.q0 I0.load_failed.q0 "
        "I0.release.q0 S0.drain_arrive S0.drain S0.check.q0 S0.terminate.q0 S0.insert.q0"
    )
    assert s[0].ops[0].inserted == 1 and failing.model.protocol.quiescent(s)
    assert failing.prop("wait_complete_delivers").check(s) is None
    assert failing.prop("wait_complete_delivers").check(with_op(s, 0, 0, io_failed=False)) is not None


def test_delivers_excuses_a_timeout(proto):
    p = proto(uniform_config(pages=2, policy="timeout"))
    s = p.state("S0.issue.q0 C0.timeout.q0 " + DRAIN + " " + ACCEPT_AND_INSERT + " " + IO_AFTER_TERMINATE)
    assert p.model.protocol.quiescent(s) and s[0].ops[0].inserted == 0
    assert p.prop("wait_complete_delivers").check(s) is None
    assert p.prop("wait_complete_delivers").check(with_op(s, 0, 0, timed_out=False)) is not None


@pytest.mark.parametrize("params", [dict(policy="best_effort"), dict(hits=0), dict(prefetch_threshold=5)])
def test_delivers_is_not_applicable_without_anything_to_deliver(proto, params):
    assert proto(uniform_config(pages=2, **params)).prop("wait_complete_delivers").not_applicable


# ---- TP agreement ----


def test_tp_agreement_fires_when_schedulers_wait_in_different_collectives(proto):
    p = proto(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    s = p.state(ALLOC_MISMATCH)
    reason = p.prop("tp_agreement").check(s)
    assert "different collectives" in reason and "drain" in reason and "MAX" in reason


def test_tp_agreement_fires_when_prefetch_threads_wait_in_different_collectives(proto):
    p = proto(uniform_config(ranks=2, requests=2, pages=1))
    s = p.state("S0.issue.q0 S0.issue.q1 S1.issue.q0 S1.issue.q1 P0.take.q0")
    assert p.prop("tp_agreement").check(s) is None  # rank 1 has not arrived yet: no mismatch
    s = (s[0], s[1]._replace(p_coll=((C_HITS, 1),) + s[0].p_coll[1:]))  # rank 1 waits for q1, rank 0 for q0
    assert "prefetch threads" in p.prop("tp_agreement").check(s)


def test_tp_agreement_fires_when_ranks_insert_different_counts(proto):
    p = proto(uniform_config(ranks=2, pages=2))
    s = with_op(with_op(p.initial, 0, 0, inserted=1), 1, 0, inserted=2)
    assert "different token counts" in p.prop("tp_agreement").check(s)
    assert p.prop("tp_agreement").check(with_op(s, 1, 0, inserted=1)) is None


def test_tp_agreement_holds_while_ranks_meet_in_the_same_collective(proto):
    p = proto(uniform_config(ranks=2, pages=1))
    prop = p.prop("tp_agreement")
    trace = replay(p.model, "S0.issue.q0 S1.issue.q0 S0.drain_arrive S1.drain_arrive S0.drain S0.check.q0 S1.drain S1.check.q0")
    assert all(prop.check(step.state) is None for step in trace.steps)


# ---- host memory ----


def test_give_back_twice_is_a_double_release():
    slots = give_back((HELD, HELD), 0, 2, RELEASED)
    assert slots == (RELEASED, RELEASED)
    assert give_back(slots, 1, 2, IN_TREE) == (RELEASED, DOUBLE)
    assert give_back(slots, 1, 1, IN_TREE) == slots  # an empty range gives back nothing


def test_host_memory_fires_on_a_double_release(proto):
    p = proto(uniform_config(pages=2))
    s = with_op(p.state("S0.issue.q0"), 0, 0, slots=(HELD, DOUBLE))
    assert "given back twice" in p.prop("host_memory").check(s)


def test_host_memory_fires_on_a_slot_still_held_when_every_thread_is_idle(proto):
    p = proto(uniform_config(pages=2))
    done = p.state(FULL_LOAD_2)
    assert p.model.protocol.quiescent(done) and done[0].ops[0].slots == (IN_TREE, IN_TREE)
    assert p.prop("host_memory").check(done) is None
    assert "leak" in p.prop("host_memory").check(with_op(done, 0, 0, slots=(IN_TREE, HELD)))


def test_host_memory_does_not_call_held_slots_a_leak_while_work_remains(proto):
    p = proto(uniform_config(pages=2))
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0")
    assert not p.model.protocol.quiescent(s) and HELD in s[0].ops[0].slots
    assert p.prop("host_memory").check(s) is None


def test_host_memory_holds_after_the_buggy_early_insert(proto):
    """The early insert hands nothing to the tree; the IO thread later releases every page."""
    p = proto(uniform_config(pages=2), "buggy")
    s = p.state(BUGGY_EARLY_INSERT + " " + IO_AFTER_TERMINATE)
    assert p.model.protocol.quiescent(s) and s[0].ops[0].slots == (RELEASED, RELEASED)
    assert p.prop("host_memory").check(s) is None


# ---- data integrity ----


def test_data_integrity_fires_on_a_page_in_the_tree_that_was_never_written(proto):
    p = proto(uniform_config(pages=2))
    done = p.state(FULL_LOAD_2)
    assert p.prop("data_integrity").check(done) is None
    assert "page 1" in p.prop("data_integrity").check(with_op(done, 0, 0, written=1))


def test_data_integrity_holds_for_a_page_written_but_not_counted(proto):
    p = proto(uniform_config(pages=2))
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0")
    assert s[0].ops[0].written == 1 and s[0].ops[0].completed == 0
    assert p.prop("data_integrity").check(s) is None


# ---- progress (under weak fairness) ----


def assert_fair_lasso(model, trace):
    """Every actor enabled in every state of the cycle takes a step in it (weak fairness), checked from scratch."""
    assert trace.cycle_start is not None
    entry = trace.steps[trace.cycle_start - 1].state if trace.cycle_start else trace.initial
    cycle = trace.steps[trace.cycle_start :]
    assert cycle and cycle[-1].state == entry
    states = [entry] + [s.state for s in cycle[:-1]]
    always_enabled = set.intersection(*({model.actor(a) for a, _ in model.successors(s)} for s in states))
    stepped = {s.actor for s in cycle}
    assert always_enabled <= stepped, f"unfair cycle: {always_enabled - stepped} never steps"


def test_progress_pending_names_issued_unresolved_requests(proto):
    p = proto(uniform_config(pages=2))
    pending = p.prop("progress").check
    assert pending(p.initial) is None
    assert pending(p.state("S0.issue.q0")) == "unresolved: request 0 on rank 0"
    assert pending(p.state(FULL_LOAD_2)) is None


@pytest.mark.parametrize(
    "params",
    [
        # an empty page list is published (unclamped threshold 0): fixed never sees it complete
        dict(pages=2, hits=0, prefetch_threshold=0, clamp_threshold=False),
        # the seed shape: a failed page is never counted and nobody marks the operation terminated
        dict(pages=2, failing={0: {1}}, shape="seed"),
    ],
)
def test_progress_is_violated_by_a_fair_lasso_when_fixed_waits_forever(proto, params):
    p = proto(uniform_config(**params))
    result = check(p.model)
    assert result.verdict("progress") == VIOLATED
    trace = result.trace("progress")
    assert_fair_lasso(p.model, trace)
    assert all(p.prop("progress").check(s.state) for s in trace.steps[trace.cycle_start :])
    again = replay(p.model, trace.schedule)
    assert again.cycle_start == trace.cycle_start and again.final_state == trace.final_state


def test_an_unfair_waiting_cycle_is_not_a_progress_violation(proto):
    p = proto(uniform_config(pages=2))
    loop = "S0.check.q0 S0.keep_waiting.q0 S0.drain_arrive S0.drain"
    entry = p.state(EARLY)
    assert p.state(EARLY + " " + loop) == entry  # the scheduler can wait forever...
    assert "P0.take.q0" in p.enabled(entry)  # ...only while the prefetch thread never steps
    assert check(p.model).verdict("progress") == VERIFIED


def test_progress_is_violated_by_a_deadlock_with_work_left(proto):
    p = proto(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    result = check(p.model)
    trace = result.trace("progress")
    assert trace.cycle_start is None and "deadlock" in result.results["progress"].reason
    assert p.model.successors(trace.final_state) == []


# ---- deadlock freedom ----


def test_deadlock_when_allocation_fails_on_one_rank_only(proto):
    p = proto(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    s = p.state(ALLOC_MISMATCH + " P1.take.q0")
    assert p.enabled(s) == []
    result = check(p.model)
    assert result.verdict("deadlock_freedom") == VIOLATED
    assert p.model.successors(result.trace("deadlock_freedom").final_state) == []


def test_no_deadlock_when_allocation_fails_on_every_rank_alike(proto):
    p = proto(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, True)))
    s = p.state("S0.issue_alloc_failed.q0 S1.issue_alloc_failed.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain")
    assert p.prop("tp_agreement").check(s) is None
    s = p.state(
        "S0.issue_alloc_failed.q0 S1.issue_alloc_failed.q0 S0.drain_arrive S1.drain_arrive S0.drain S1.drain "
        "S0.ready_without_prefetch.q0 S1.ready_without_prefetch.q0"
    )
    assert p.enabled(s) == ["S0.drain_arrive", "S1.drain_arrive"]
    assert p.prop("progress").check(s) is None


def test_no_deadlock_in_a_normal_run(proto):
    p = proto(uniform_config(ranks=2, pages=1))
    result = check(p.model)
    assert result.verdict("deadlock_freedom") == VERIFIED and result.verdict("tp_agreement") == VERIFIED
