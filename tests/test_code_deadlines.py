"""The timeout policy in the executor's own search (model/code/worlds/deadlines.py): a rank's
deadline firing is a choice like a thread's step. On the real releases: 0.5.23 (PollTimer on
perf_counter, the admission deadline) and 0.5.19 (time.monotonic against op.start_time) keep their
clean verdicts under timeout, exhaustively at 1 rank; one-place edits of 0.5.23's deadline
functions are caught from the code with their consequence, a behaviour-keeping refactor keeps the
release's counts; the deadline's firing shows, by name, in the schedule that replays it."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, replay
from test_code_executor import JUDGED, edited
from test_sglang_release import release_srt

URC = "mem_cache/unified_radix_cache.py"
TIMEOUT = CodeConfig(ranks=1, policy="timeout")
TWO = CodeConfig(ranks=2, pages=1, policy="timeout")
LIMITS = CodeLimits(max_seconds=180)
FIRST = CodeLimits(max_seconds=180, stop_on_first=True)
FIRES = "deadline fires on rank 0"
PAST = "req0 still waits at the first check after its deadline fired"
NO_DEADLINE = "req0 waits for its storage lookup at a check that read no clock"  # no firing needed to see it

# one-place edits of 0.5.23's deadline functions: (old, new, configuration, limits, property, what it says)
EDITS = {
    "the deadline never expires": (
        "wait.timer.elapsed() > wait.timeout_s", "wait.timer.elapsed() > wait.timeout_s * 1e9",
        TIMEOUT, LIMITS, "progress", PAST),
    "_can_terminate_prefetch ignores the expiry": (
        "should_terminate = self._prefetch_deadline_expired(operation)", "should_terminate = False",
        TIMEOUT, LIMITS, "progress", NO_DEADLINE),
    "the verdict is MIN-reduced, not MAX": (
        "self._all_reduce(should_terminate_tensor, torch.distributed.ReduceOp.MAX)",
        "self._all_reduce(should_terminate_tensor, torch.distributed.ReduceOp.MIN)",
        TWO, FIRST, "progress", PAST),
    "the verdict is not all-reduced": (
        "self._all_reduce(should_terminate_tensor, torch.distributed.ReduceOp.MAX)", "pass",
        TWO, FIRST, "tp_agreement", "req0: check_prefetch_progress admits it in rounds"),
}


def release(version: str) -> Path:
    """The release's srt folder (fetched once; skipped with the reason where it cannot be)."""
    srt = release_srt(version)
    if not (srt / URC).is_file():
        pytest.skip(f"{version}: the cached release lacks the unified cache")
    return srt


def clean(result) -> bool:
    return all(result.verdicts[p] == "VERIFIED" for p in JUDGED if p not in result.not_judged)


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_a_release_keeps_its_clean_verdicts_when_its_deadlines_fire(version):
    result = check_tree(release(version), TIMEOUT, LIMITS)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.bound, result.verdicts)
    assert "wait_complete_delivers" in result.not_judged  # judged under wait_complete only


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_of_the_deadline_is_caught_from_the_code(tmp_path, name):
    old, new, config, limits, prop, says = EDITS[name]
    srt = release("0.5.23")
    result = check_tree(edited(tmp_path, srt, URC, old, new), config, limits)
    found = result.violations.get(prop)
    assert found is not None and result.verdicts[prop] == "VIOLATED", (name, result.verdicts)
    assert says in found.message, found.message
    if says != NO_DEADLINE:  # the bound is judged at a check after a firing
        assert FIRES in [s.label for s in found.steps] or "deadline fires on rank 1" in [s.label for s in found.steps]
    if prop == "progress":  # judged where the tree checks the request: check_prefetch_progress's def line
        site, _, line = found.site.partition(":")
        source = (tmp_path / "sglang" / "srt" / site).read_text().splitlines()[int(line) - 1]
        assert site == URC and source.strip().startswith("def check_prefetch_progress("), found.site


def test_the_release_admits_where_the_edit_waits_past_the_deadline(tmp_path):
    """The counterexample of the never-expiring deadline, replayed on the release as shipped: the
    same choices, and the first check after the deadline fired admits the request."""
    srt = release("0.5.23")
    old, new, config, limits, _, _ = EDITS["the deadline never expires"]
    found = check_tree(edited(tmp_path, srt, URC, old, new), config, limits).violations["progress"]
    fired = [k for k, s in enumerate(found.steps) if s.label == FIRES]
    assert len(fired) == 1 and found.steps[fired[0]].choice == "D0"  # once: the bound on firings
    again = replay(srt, config, found.schedule)
    assert [s["choice"] for s in again["steps"]][: len(found.schedule)] == found.schedule
    after = " ".join(s["observed"] for s in again["steps"][fired[0]:] if s["choice"] == "S0")
    assert "admitted req0" in after and not any(f["prop"] == "progress" for f in again["findings"]), after


def test_a_refactor_of_the_deadline_keeps_the_release_counts(tmp_path):
    srt = release("0.5.23")
    ref = check_tree(srt, TIMEOUT, LIMITS)
    refactor = edited(tmp_path, srt, URC, "        return wait is not None and (\n",
                      "        if wait is None:\n            return False\n        return (\n")
    result = check_tree(refactor, TIMEOUT, LIMITS)
    assert clean(result) and result.exhaustive
    assert (result.runs, result.states) == (ref.runs, ref.states)


def test_the_timeout_policy_runs_without_a_driven_clock():
    """(The poll world fires deadlines too: tests/test_code_poll_deadlines.py.)"""
    assert TIMEOUT.explores_clock() and not CodeConfig(policy="timeout", driven_clock=True).explores_clock()
    assert not CodeConfig(policy="best_effort").explores_clock()


def test_a_sampling_strategy_fires_the_deadline_too(tmp_path):
    """The firing is one more choice for every strategy: PCT (depth 3, seed 1) reaches the
    never-expiring deadline's violation within 20 runs, and says it sampled."""
    old, new, config, _, prop, says = EDITS["the deadline never expires"]
    srt = edited(tmp_path, release("0.5.23"), URC, old, new)
    result = check_tree(srt, config, CodeLimits(strategy="pct", seed=1, max_runs=20, stop_on_first=True))
    found = result.violations[prop]
    assert says in found.message and FIRES in [s.label for s in found.steps]
    assert not result.exhaustive and "sampling is never exhaustive" in result.bound
