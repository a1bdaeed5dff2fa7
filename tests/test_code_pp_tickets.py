"""The PP tickets in the code engine (host_memory_mode buffer_only with pp_size 2,
model/code/worlds/ack_drain/buffer/tickets.py): 0.5.23's ticket path runs as written, its search
is exhaustive and clean and reaches the end of the run (the terminal judgements are made, not
skipped), a one-place edit of the ticket's admission is caught with its consequence, and the
release whose tickets the world does not model (0.5.22: PP0 queries every stage's storage) gets
no ticket case, by name."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.sglang.mappings.ack_drain.pp_cases import PP_CASES
from test_code_executor import clean, edited, release

TICKETS = CodeConfig(ranks=2, pp_size=2, pages=1, host_memory_mode="buffer_only")
LIMITS = CodeLimits(max_seconds=600)  # 4,315 runs, 29,174 states, 20 s (546 runs before the polls)
HYBRID = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
URC = "mem_cache/unified_radix_cache.py"
# take_ready_pp_prefetch frees every ready state's buffers, not only an empty one's: the request is
# admitted with nothing although both stages read its page
FREES_EVERY_STATE = ("                or state.operation.completed_tokens == 0\n",
                     "                or state.operation.completed_tokens >= 0\n")


def test_0_5_23s_tickets_run_as_written_exhaustive_and_clean_and_a_pending_ticket_is_polled():
    """Exhaustive and clean; the round gate's first poll (tickets.py `_polls_due`) runs the
    admission check while PP0's ticket is pending, which takes its "not ready" return (counted by
    the tracer). The second poll, a later stage behind PP0, is shown by the edit below: without it
    that edit got the release's verdicts."""
    srt = release("0.5.23")
    text = (srt / URC).read_text()
    not_ready = text[:text.index("        if ready_tensor.item() == 0:\n            return False\n")].count("\n") + 2
    result = check_tree(srt, TICKETS, LIMITS, {"count": {URC: [[not_ready, not_ready]]}})
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result) and result.verdicts["wait_complete_delivers"] == "VERIFIED", result.verdicts
    runs = {tuple(e["span"]): e["runs"] for e in result.coverage["counted"][URC]}
    assert runs[(not_ready, not_ready)] > 0, runs
    # DPOR over every enabled thread (8,014 runs): the persistent set changes no verdict here
    everyone = check_tree(srt, TICKETS, CodeLimits(max_seconds=600, strategy="dpor", reduce=False))
    assert everyone.exhaustive and everyone.verdicts == result.verdicts
    assert result.runs > 500 and result.states > 3_000


# take_ready_pp_prefetch without its wait: a later stage takes its ticket while its own fetch is in
# flight (a change the world could not tell apart before the gate's "behind" poll)
NO_WAIT = ("            return None\n        state.ready_event.wait()\n", "            return None\n")


def test_a_later_stage_that_takes_its_ticket_without_waiting_serves_another_prefix(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HYBRID, *NO_WAIT)
    result = check_tree(srt, TICKETS, CodeLimits(max_seconds=600, stop_on=("tp_agreement",)))
    assert result.verdicts["tp_agreement"] == "VIOLATED", result.verdicts
    assert "host trees hold [1, 0] tokens at admission" in result.violations["tp_agreement"].message


def test_an_admission_that_frees_every_ready_ticket_is_caught_as_the_prefetch_it_loses(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HYBRID, *FREES_EVERY_STATE)
    result = check_tree(srt, TICKETS, CodeLimits(max_seconds=600, stop_on=("wait_complete_delivers",)))
    assert result.verdicts["wait_complete_delivers"] == "VIOLATED", result.verdicts
    message = result.violations["wait_complete_delivers"].message
    assert "admitted with [(0, 0), (1, 0)] (rank, tokens) on the device, the ranks agreed on 1" in message


ABORTED_AS_ISSUED = CodeConfig(ranks=2, pp_size=2, pages=1, host_memory_mode="buffer_only", abort_round=0)
# release_pp_prefetch forgets a decision it cancels before the stage's ticket thread registered the
# ticket: the thread then queries, allocates and fetches for a request nobody will take
FORGETS_THE_CANCELLED = (
    "                    self.pp_prefetch_decisions[rid] = PPPrefetchDecision.CANCELLED\n                    return True\n",
    "                    return True\n")


# exhaustive in 1,987 runs (14 s untraced on one core; the sleep sets took minutes)
WHOLE = CodeLimits(max_seconds=600)


def test_an_abort_as_soon_as_issued_reaches_the_cancelled_decision_on_0_5_23_without_a_violation():
    srt = release("0.5.23")
    text = (srt / HYBRID).read_text()
    cancelled = text[:text.index(FORGETS_THE_CANCELLED[0])].count("\n") + 1  # the line recording CANCELLED
    honoured = text[:text.index("                        state.release_requested = True\n                        "
                                "self.pp_prefetch_decisions.pop(rid)")].count("\n") + 1  # the ticket thread's
    result = check_tree(srt, ABORTED_AS_ISSUED, WHOLE,
                        {"count": {HYBRID: [[cancelled, cancelled], [honoured, honoured]]}})
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert "VIOLATED" not in result.verdicts.values(), result.verdicts
    runs = {tuple(e["span"]): e["runs"] for e in result.coverage["counted"][HYBRID]}
    assert runs[(cancelled, cancelled)] > 0 and runs[(honoured, honoured)] > 0, runs


def test_a_release_that_forgets_the_cancelled_decision_leaks_the_tickets_host_memory(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HYBRID, *FORGETS_THE_CANCELLED)
    result = check_tree(srt, ABORTED_AS_ISSUED, CodeLimits(max_seconds=600, stop_on=("host_memory",)))
    assert result.verdicts["host_memory"] == "VIOLATED", result.verdicts


def test_a_release_with_the_earlier_ticket_shape_gets_no_ticket_case_by_name():
    tickets = [c for c in PP_CASES if "PP tickets" in c.name]
    assert len(tickets) == 5
    assert {c.skip(release("0.5.22")) for c in tickets} == {
        "its PP tickets query every stage's storage at PP0 (0.5.21-0.5.22): not modelled"}
    assert {c.skip(release("0.5.23")) for c in tickets} == {""}


# stage 1's existence query raises in its ticket thread: the thread's except votes zero in the hit
# MIN, so stage 0 frees the buffer it allocated for its own hit (the tail past the agreed count)
QUERY_RAISES = next(c.config for c in PP_CASES if "query raises" in c.name)
VOTES_ZERO = "                    hash_value, storage_hit_count = [], 0\n"
TAIL_FREED = "                        self.prefetch_tokens_occupied -= len(tail)\n"


# the tail's free written another way, with the same accesses of the operation's shared fields (a
# version that reads operation.host_indices once instead of three times has fewer scheduling
# points: 10,564 runs and 54,574 states against 11,716 and 60,910, the same verdicts)
TAIL_REFACTORED = (
    "                    tail = operation.host_indices[storage_hit_count:]\n                    if tail.numel():\n"
    "                        self.mem_pool_host.free(tail, pool=PoolName.KV)\n"
    "                        self.prefetch_tokens_occupied -= len(tail)\n"
    "                        operation.host_indices = operation.host_indices[\n"
    "                            :storage_hit_count\n                        ]\n",
    "                    surplus = operation.host_indices[storage_hit_count:]\n"
    "                    if len(surplus) > 0:  # buffers past the agreed count\n"
    "                        self.mem_pool_host.free(surplus, pool=PoolName.KV)\n"
    "                        self.prefetch_tokens_occupied -= len(surplus)\n"
    "                        operation.host_indices = operation.host_indices[:storage_hit_count]\n")


def test_a_stage_whose_ticket_query_raises_votes_zero_and_the_other_frees_its_tail_on_0_5_23(tmp_path):
    """Exhaustive and clean; the tail's free refactored keeps every figure. That both lines run is
    shown by the two tests below (each line's removal is caught), without tracing this search."""
    srt = release("0.5.23")
    result = check_tree(srt, QUERY_RAISES, LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    refactored = check_tree(edited(tmp_path, srt, HYBRID, *TAIL_REFACTORED), QUERY_RAISES, LIMITS)
    assert (refactored.verdicts, refactored.runs, refactored.states) == (result.verdicts, result.runs, result.states)


def test_a_failed_ticket_query_that_forgets_to_vote_zero_hangs_the_pipelines_collective(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HYBRID, VOTES_ZERO, "                    hash_value = []\n")
    result = check_tree(srt, QUERY_RAISES, CodeLimits(max_seconds=600, stop_on=("progress",)))
    assert result.verdicts["progress"] == "VIOLATED", result.verdicts
    assert "waits forever in all_reduce(MIN) leave P-hits" in result.violations["progress"].message


def test_a_tail_freed_without_its_occupancy_loses_the_prefetch_budget(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HYBRID, TAIL_FREED, "")
    result = check_tree(srt, QUERY_RAISES, CodeLimits(max_seconds=600, stop_on=("host_memory",)))
    assert result.verdicts["host_memory"] == "VIOLATED", result.verdicts
    assert "prefetch budget lost" in result.violations["host_memory"].consequence
