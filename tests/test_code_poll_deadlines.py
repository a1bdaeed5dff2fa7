"""The timeout policy in the predicate-poll world's own search (model/code/worlds/deadlines.py,
EveryDeadlineAdmits): the deadline of 0.5.12-0.5.18 (start_time read at issue, the timeout from
the tree's PrefetchTimeoutConfig in `_prefetch_timeout_check_linear_func`, the ranks' MAX vote in
`can_terminate_prefetch`) runs as written and a rank's deadline firing is a choice of the search.
On the real releases 0.5.12 and 0.5.18 every judged property stays VERIFIED, exhaustively at 1
rank (no_early_acceptance judged until a rank's deadline fires); one-place edits of the deadline
are caught from the code with their consequence; a
behaviour-keeping refactor keeps the release's counts; the firing shows, by name, in the schedule
that replays it."""

from __future__ import annotations

from functools import lru_cache

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, replay
from test_code_executor import JUDGED, edited
from test_sglang_release import release_srt

HIRADIX = "mem_cache/hiradix_cache.py"
POLL = dict(world="predicate-poll", policy="timeout")
ONE = CodeConfig(ranks=1, **POLL)
TWO = CodeConfig(ranks=2, pages=1, **POLL)
LIMITS = CodeLimits(max_seconds=120)
FIRST = CodeLimits(max_seconds=120, stop_on_first=True)  # an edit's tests stop at its first violation (about 1 s)
FIRES = "deadline fires on rank 0"
PAST = "req0 still waits at a check after every rank's deadline fired"
EXPIRY = "return time.monotonic() - operation.start_time > timeout"
VOTE = "self._all_reduce_attn_groups(states, torch.distributed.ReduceOp.MAX)"

# one-place edits of the releases' deadline code: (old, new, configuration, limits, property, what it says)
EDITS = {
    "the deadline never expires": (EXPIRY, EXPIRY + " * 1e9", ONE, FIRST, "progress", PAST),
    "can_terminate_prefetch ignores the expiry": (
        "can_terminate = completed or self.is_prefetch_timeout(operation)", "can_terminate = completed",
        ONE, FIRST, "progress", PAST),
    # without the vote the rank whose deadline fired terminates alone and meets its peer, still
    # polling, in another collective: both schedulers wait forever (the sleep sets' first run
    # through it on 0.5.18 finds the two ranks in different collectives first, tp_agreement: the
    # search goes on to the hang, 34 runs)
    "the vote is skipped": (VOTE, "pass", TWO, CodeLimits(max_seconds=120, stop_on=("deadlock_freedom",)),
                            "deadlock_freedom", "waits forever in all_reduce(MIN)"),
    # MIN: one rank's expiry admits on every rank, while a peer's deadline has not fired and its
    # page list is still empty (the depth-first search does not reach it in 60 s; PCT in 5 runs)
    "the vote is MIN-reduced, not MAX": (
        VOTE, VOTE.replace("MAX", "MIN"), TWO, CodeLimits(strategy="pct", seed=1, max_runs=20, stop_on_first=True),
        "no_early_acceptance", "its hash_value was still empty (not yet published, not revoked, its deadline not "
        "yet fired)"),
}


def release(version: str):
    """The release's srt folder; skipped with the reason where its deadline is not 0.5.12's shape."""
    srt = release_srt(version)
    if "self.prefetch_timeout_config" not in (srt / HIRADIX).read_text():
        pytest.skip(f"{version}: the cached release's deadline predates PrefetchTimeoutConfig")
    return srt


@lru_cache(maxsize=None)
def shipped(version: str):
    """The release's exhaustive 1-rank timeout search (shared by the tests that need it)."""
    return check_tree(release(version), ONE, LIMITS)


def clean(result) -> bool:
    return all(result.verdicts[p] == "VERIFIED" for p in JUDGED if p not in result.not_judged)


@pytest.mark.parametrize("version", ["0.5.12", "0.5.18"])
def test_a_poll_release_keeps_its_clean_verdicts_when_its_deadlines_fire(version):
    result = shipped(version)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.bound, result.verdicts)
    assert "wait_complete_delivers" in result.not_judged and "no_early_acceptance" not in result.not_judged


@pytest.mark.parametrize("version", ["0.5.12", "0.5.18"])
@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_of_the_poll_deadline_is_caught_from_the_code(tmp_path, version, name):
    old, new, config, limits, prop, says = EDITS[name]
    result = check_tree(edited(tmp_path, release(version), HIRADIX, old, new), config, limits)
    found = result.violations.get(prop)
    assert found is not None and result.verdicts[prop] == "VIOLATED", (name, result.verdicts)
    assert says in found.message, found.message
    assert any(s.label.startswith("deadline fires on rank ") for s in found.steps), [s.label for s in found.steps]
    if prop == "progress":  # judged where the tree checks the request: check_prefetch_progress's def line
        site, _, line = found.site.partition(":")
        source = (tmp_path / "sglang" / "srt" / site).read_text().splitlines()[int(line) - 1]
        assert site == HIRADIX and source.strip().startswith("def check_prefetch_progress("), found.site


def test_the_release_admits_where_the_edit_waits_past_the_deadline(tmp_path):
    """The never-expiring deadline's counterexample, replayed on 0.5.12 as shipped up to the
    firing (then the first enabled thread, the scheduler first): the same choices, and the
    scheduler's next check admits the request."""
    srt = release("0.5.12")
    old, new, config, limits, _, _ = EDITS["the deadline never expires"]
    found = check_tree(edited(tmp_path, srt, HIRADIX, old, new), config, limits).violations["progress"]
    fired = [k for k, s in enumerate(found.steps) if s.label == FIRES]
    assert len(fired) == 1 and found.steps[fired[0]].choice == "D0"  # once: the bound on firings
    prefix = found.schedule[: fired[0] + 1]
    again = replay(srt, config, prefix)
    assert [s["choice"] for s in again["steps"]][: len(prefix)] == prefix
    after = " ".join(s["observed"] for s in again["steps"][len(prefix):] if s["choice"] == "S0")
    assert "admitted req0" in after and not any(f["prop"] == "progress" for f in again["findings"]), after


def test_a_refactor_of_the_poll_deadline_keeps_the_release_counts(tmp_path):
    srt = release("0.5.18")
    ref = shipped("0.5.18")
    refactor = edited(tmp_path, srt, HIRADIX, EXPIRY,
                      "elapsed = time.monotonic() - operation.start_time\n        return elapsed > timeout")
    result = check_tree(refactor, ONE, LIMITS)
    assert clean(result) and result.exhaustive
    assert (result.runs, result.states) == (ref.runs, ref.states)


def test_one_ranks_expired_deadline_does_not_admit_under_the_poll_vote():
    """The vote MAX-reduces [not can_terminate, terminated]: a rank whose deadline fired waits for
    its peer's. Judged per rank, as the ack-drain world judges its own deadline, 0.5.12 at 2 ranks
    "waits past its deadline" in the 4th run of PCT (depth 3, seed 1; measured with the judge
    edited so); judged over the round's voters, its first 10 runs find nothing."""
    result = check_tree(release("0.5.12"), TWO, CodeLimits(strategy="pct", seed=1, max_runs=10))
    assert not result.violations and not result.not_modelled, result.violations
    assert not result.exhaustive and result.runs == 10
