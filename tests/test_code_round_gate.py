"""The ack-drain world's round gate without the MIN assumption (issue 31: CodeConfig(round_gate="any")).

The default gate ("agreed") starts a scheduler round under wait_complete only when a queue the
drain pops holds something on every rank (MIN > 0): it assumes the drain pops at most the MIN the
ranks agree on. A drain that pops its rank's own qsize then never runs its divergent round: the
rank that popped admits, its peer's queue is never agreed on again, and the run ends with the peer
waiting (progress, the gate's own artifact). Under "any" a round also starts when something was
put on a drained queue of some rank since the last round started (MAX > 0, one round per arrival),
so the divergent round runs and the edit reads as what it is on a cluster: the ranks admit the
request in different rounds (tp_agreement). The releases stay clean and exhaustive under it; a
drain popping the MAX (blocking for the items it lacks) runs and stalls the scheduler of the rank
that holds fewer in its drain (progress). The default gate ("auto") is "any" under best_effort and
"agreed" under wait_complete and timeout (its cost: docs/benchmark.md)."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

URC = "mem_cache/unified_radix_cache.py"
HR = "mem_cache/hiradix_cache.py"
LIMITS = CodeLimits(max_seconds=300)
FIRST = CodeLimits(max_seconds=300, stop_on_first=True)

# name -> (file, old text, new text): one-place edits of 0.5.23's drain that pop more than the MIN
EDITS = {
    # the ACK drain pops every ack its rank holds (`_drain_queue(q, None)`: the local qsize)
    "ack_drain_pops_local": (URC, "            for ack in _drain_queue(cc.ack_prefetch_queue, n_ack_prefetch):\n",
                             "            for ack in _drain_queue(cc.ack_prefetch_queue, None):\n"),
    # the ready counts are not reduced over the ranks: each rank pops its own qsizes
    "counts_not_reduced": (URC, "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)\n",
                           "        else:\n            pass\n"),
}
# the ready counts reduced by MAX: each rank pops the largest count, blocking for what it lacks
COUNTS_MAX = (URC, "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)\n",
              "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MAX)\n")
# 0.5.19's HiRadixCache (cache_class="HiRadixCache"): `_sync_hicache_ready_counts` without its MIN
H19_NOT_REDUCED = (HR, "        self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)\n\n"
                   "        count_values = list(map(int, ready_counts.tolist()))\n",
                   "\n        count_values = list(map(int, ready_counts.tolist()))\n")
H19_MAX = (HR, "        self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)\n\n"
           "        count_values = list(map(int, ready_counts.tolist()))\n",
           "        self._all_reduce(ready_counts, torch.distributed.ReduceOp.MAX)\n\n"
           "        count_values = list(map(int, ready_counts.tolist()))\n")


def any_gate(**kwargs) -> CodeConfig:
    return CodeConfig(round_gate="any", **kwargs)


def test_0_5_23_is_clean_and_exhausted_at_2x1_under_the_gate_without_the_assumption():
    result = check_tree(release("0.5.23"), any_gate(ranks=2), LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    # more than the agreed gate's 408 runs / 1,135 states: rounds with nothing agreed to drain run,
    # and a closed gate no longer keeps its rank in the persistent set (measured 6,061 / 23,270)
    assert result.runs > 408 and result.states > 1135


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_drain_popping_more_than_the_min_is_caught_with_its_consequence(tmp_path, name):
    """Both edits are caught under the gate without the assumption, up to the first finding: the
    divergent round runs, so both ranks admit the request, in different rounds (the whole search of
    the first, 8,394 runs / 39,597 states, finds nothing else: docs/benchmark.md). Under the agreed
    gate the first is searched in full (721 runs): only progress is found, the peer waiting forever."""
    whole = name == "ack_drain_pops_local"
    srt = edited(tmp_path, release("0.5.23"), *EDITS[name])
    found = check_tree(srt, any_gate(ranks=2), FIRST)
    assert found.verdicts["tp_agreement"] == "VIOLATED", found.verdicts
    assert "admits it in rounds" in found.violations["tp_agreement"].message
    assert found.violations["tp_agreement"].schedule
    # the agreed gate never runs the divergent round: the peer waits forever, a progress finding only
    assumed = check_tree(srt, CodeConfig(ranks=2, round_gate="agreed"), LIMITS if whole else FIRST)
    assert assumed.verdicts["progress"] == "VIOLATED", assumed.verdicts
    if whole:
        assert assumed.exhaustive, assumed.bound
        assert assumed.verdicts["tp_agreement"] == "VERIFIED"


@pytest.mark.parametrize("version,cache_class", [("0.5.23", "UnifiedRadixCache"), ("0.5.19", "HiRadixCache")])
def test_a_drain_popping_the_max_runs_and_stalls_its_scheduler(tmp_path, version, cache_class):
    """MAX instead of MIN: the rank that holds fewer blocks in `_drain_queue`'s get until its own
    item comes (its prefetch and sync threads do not need its scheduler for it). The same items
    are drained in the same round, only later, but the scheduler of that rank waits on storage IO
    meanwhile, every request on it with it: a progress finding (stand_ins/queues.py), which the
    gate without the MIN assumption reaches (a round starts while one rank holds nothing)."""
    srt = release(version)
    edit = COUNTS_MAX if cache_class == "UnifiedRadixCache" else H19_MAX
    if not (srt / edit[0]).is_file():
        pytest.skip(f"{version}: the cached release has no {edit[0]}")
    found = check_tree(edited(tmp_path, srt, *edit), any_gate(ranks=2, cache_class=cache_class), FIRST)
    assert found.verdicts["progress"] == "VIOLATED", found.verdicts
    stall = found.violations["progress"]
    assert "blocking get on its empty" in stall.message and "stalls in its drain" in stall.consequence
    assert stall.schedule and stall.site


def test_0_5_19_hiradix_cache_without_its_min_hangs_the_peer_in_its_vote(tmp_path):
    """0.5.19's HiRadixCache votes (MAX) at every check: the rank that popped its ack admits and
    stops voting, its peer waits in the vote forever."""
    srt = release("0.5.19")
    if not (srt / HR).is_file():
        pytest.skip(f"0.5.19: the cached release has no {HR}")
    config = any_gate(ranks=2, cache_class="HiRadixCache")
    found = check_tree(edited(tmp_path, srt, *H19_NOT_REDUCED), config, FIRST)
    assert found.verdicts["deadlock_freedom"] == "VIOLATED", found.verdicts
    assert "a peer never joins" in found.violations["deadlock_freedom"].message
    assert clean(check_tree(srt, config, LIMITS))


def test_at_one_rank_the_two_gates_are_one():
    """At one rank the drain's MIN is the rank's own count: "any" keeps every figure of "agreed"."""
    srt = release("0.5.23")
    for kwargs in (dict(ranks=1), dict(ranks=1, policy="best_effort")):
        a, b = check_tree(srt, CodeConfig(**kwargs), LIMITS), check_tree(srt, any_gate(**kwargs), LIMITS)
        assert (a.verdicts, a.runs, a.states) == (b.verdicts, b.runs, b.states)


def test_the_gate_is_named_and_belongs_to_the_ack_drain_world():
    with pytest.raises(ValueError, match="round_gate 'max'"):
        CodeConfig(round_gate="max")
    with pytest.raises(ValueError, match="ack-drain world's gate"):
        CodeConfig(round_gate="any", world="predicate-poll")
    assert "round_gate" not in CodeConfig().to_json()  # the default's JSON (and cached verdicts) unchanged
    # the default: without the assumption under best_effort, with it under wait_complete and timeout
    assert CodeConfig(policy="best_effort").gate() == "any"
    assert CodeConfig().gate() == CodeConfig(policy="timeout").gate() == "agreed"
    assert CodeConfig.from_json(any_gate(ranks=2).to_json()).round_gate == "any"


def test_a_drain_stage_dropped_at_two_ranks_is_a_named_spin_not_a_bound(tmp_path):
    """`_drain_ack_prefetch()` dropped: every round the gate opens for the agreed ack and the round
    pops nothing. A round that starts where an earlier one started, with a storage thread still to
    run, holds the next round until that thread moves (worlds/ack_drain/stutter.py); once only the
    schedulers can run the spin is named. The search is exhaustive (it followed the spin to its
    depth bound before), and the rank behind still joins the round the spin is found at: no
    collective is left waiting for it (deadlock_freedom holds)."""
    srt = edited(tmp_path, release("0.5.23"), URC, "        _drain_ack_prefetch()\n        _drain_backup()\n",
                 "        _drain_backup()\n")
    result = check_tree(srt, CodeConfig(ranks=2), LIMITS)
    assert result.exhaustive, result.bound
    assert result.verdicts["progress"] == "VIOLATED", result.verdicts
    assert "the scheduler spins" in result.violations["progress"].consequence
    assert result.verdicts["deadlock_freedom"] == "VERIFIED", result.violations.get("deadlock_freedom")
