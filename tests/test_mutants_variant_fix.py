"""`mutants --protocol` on a fix (issue 20, defect 4): it reported GAP and exited 1, and its
configurations never let allocation fail on one rank. Now a variant no property catches is
"not caught" (exit 0), and the configurations where the protocol itself fails (an upstream
assumption dropped) show what the variant repairs."""

from __future__ import annotations

import re

from cli_helpers import run
from prefetch_check.model.protocols.poll.protocol import PollProtocol


class AllocNeverFails(PollProtocol):
    """Host slots reserved before issue: the allocation at issue cannot fail on one rank alone."""

    def s_issue(self, r, rank, q):
        return [s for s in super().s_issue(r, rank, q) if s.name != "issue_alloc_failed"]


class CountFirst(PollProtocol):
    """The IO thread counts a page before it writes it (a bug)."""

    def write_then_count(self) -> bool:
        return False


def test_a_fix_is_not_caught_and_shows_its_repairs(capsys):
    code, out, err = run(capsys, "mutants", "--protocol", f"{__name__}:AllocNeverFails", "--no-traces", "-q")
    assert code == 0, err + out
    assert "NOT CAUGHT: no property in any scenario tells it from the protocol" in out
    repairs = re.search(r"repairs:\s+(.*) \(the unmutated protocol violates it there", out).group(1)
    assert repairs == "tp_agreement in alloc-fails-on-rank-1, progress in alloc-fails-on-rank-1, deadlock_freedom in alloc-fails-on-rank-1"
    assert re.search(r"AllocNeverFails\s+not caught\s+-", out) and "no gaps" in out


def test_a_bug_is_still_caught(capsys):
    code, out, err = run(capsys, "mutants", "--protocol", f"{__name__}:CountFirst", "--no-traces", "-q")
    assert code == 0, err
    assert re.search(r"CountFirst\s+killed\s+\S+\s+data_integrity", out), out


def test_the_catalogue_does_not_run_the_assumption_configurations(capsys):
    code, out, _ = run(capsys, "mutants", "--mutant", "count_before_write", "--no-traces", "-q")
    assert code == 0 and "alloc-fails-on-rank-1" not in out
