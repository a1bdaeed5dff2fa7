"""A change whose code conforms gets the model's verdicts, with what they rest on (vouch.py).

On 0.5.23 with named edits applied at test time: a behaviour-keeping refactor conforms and gets
the model's verdicts configured as 0.5.23, labelled; a behaviour-changing edit diverges and gets
none; a change in a branch the conformance replays never run gets none, named. The budget is cut
to one small configuration and one code case (the full budget: tests/test_conformance.py).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from prefetch_check.cli import main
from prefetch_check.model.code.worlds.ack_drain.conformance_configs import BUDGETS, Budget
from pack_helpers import cases, use_budgets, use_cases
from test_code_executor import edited, release
from test_sglang_floor import ACK_SCENARIO, EDITS_0523

URC = "mem_cache/unified_radix_cache.py"


TWO_RANKS = Budget("2 ranks x 1 request", dict(ranks=2, pages=1), 2_000, 100, counterexamples=False)


@pytest.fixture
def small(monkeypatch):
    use_cases(monkeypatch, "ack-drain", cases("ack-drain", "1 rank x 1 request", "1 rank, best_effort"))
    use_budgets(monkeypatch, "ack-drain", (TWO_RANKS,))


@pytest.fixture
def small_with_abort(monkeypatch, small):
    """The abort path replayed too: 0.5.23's recorded abort_barrier=no is read in release_aborted_request."""
    aborted = next(b for b in BUDGETS if b.name == "1 rank, aborted in round 1")
    use_budgets(monkeypatch, "ack-drain", (TWO_RANKS, dataclasses.replace(aborted, states=500, near=50, counterexamples=False)))


def sglang_json(capsys, cache, tree, *more: str) -> tuple[int, dict, str]:
    status = main(["sglang", str(tree), "--cache-dir", str(cache), "--quiet", "--json", "-",
                   "--scenarios", str(ACK_SCENARIO), *more])
    out = capsys.readouterr()
    return status, json.loads(out.out), out.err


def apply(tmp_path, edits) -> object:
    srt = release("0.5.23")
    tree = tmp_path / "tree"
    for i, e in enumerate(edits):
        tree = edited(tmp_path / f"e{i}", srt, e.file, e.old, e.new)
        srt = tree
    return tree


def test_a_refactor_that_conforms_gets_the_model_verdicts_of_the_release_it_is_nearest(tmp_path, capsys,
                                                                                       small_with_abort, session_cache):
    refactor, _ = EDITS_0523["identity test moved into a helper (refactor)"]
    tree = apply(tmp_path, refactor)
    # the session's cache: the next test's tree is this one, its code cases and searches the same
    status, doc, table = sglang_json(capsys, session_cache / "vouch", tree)
    [row] = doc["releases"]
    assert row["path_code"]["differing"], "the floor sees the edit"
    assert row["conformance"]["conforms"] is True and row["conformance"]["model_verdicts"] == "shown"
    assert row["status"] == "checked" and row["properties"]
    assert all(p["engine"] == "model" for p in row["properties"].values())
    rests = row["model_rests_on"]
    assert rests["configured_as"] == "0.5.23"
    assert rests["conformance"]["schedules"] > 0 and rests["conformance"]["states"] > 0
    assert any(f.endswith("_drain_storage_control_queues_impl") or f.endswith("_is_current_prefetch")
               for f in rests["changed_functions_replayed"]), rests
    assert "S.drain" in rests["step_kinds_replayed"]
    # what the detector cannot read off the edited tree, taken from 0.5.23 because a replay ran the
    # code where it is read: the recorded absences, and the ACK match the refactor moved out of the
    # drain's own body (the detector looks for `info.operation is operation` there)
    assert rests["options_from_release"] == {"abort_barrier": "no", "ack_match": "operation", "revoke_queue": "no",
                                             "write_order": "write-then-ack"}
    assert "as 0.5.23, its code conforming" in " ".join(table.split())
    # the verdicts are the release's own, configuration for configuration (the model's alone: the
    # release's code and conformance are not what is compared)
    _, release_doc, _ = sglang_json(capsys, session_cache / "vouch", release("0.5.23"), "--engine", "model")
    mine = {p: v["release"]["verdict"] for p, v in row["properties"].items()}
    theirs = {p: v["release"]["verdict"] for p, v in release_doc["releases"][0]["properties"].items()}
    assert mine == theirs


def test_an_edit_that_diverges_gets_no_model_verdicts(tmp_path, capsys, small):
    """The hit drain pops its own queue's length, not the length all ranks agreed on. (Matching
    ACKs by request id instead of by operation conforms at this budget: it differs only once a
    request is readmitted, which neither these replays nor this scenario's searches do.)"""
    edits, _ = EDITS_0523["hit drain pops its local queue length"]
    tree = apply(tmp_path, edits)
    status, doc, _ = sglang_json(capsys, tmp_path / "cache", tree)
    [row] = doc["releases"]
    assert row["status"] == "not modelled" and not row.get("properties")
    assert row["conformance"]["conforms"] is False
    assert "diverges" in row["model_rests_on"]["withheld"] and status in (1, 3)


def test_a_change_no_conformance_replay_runs_withholds_the_model_naming_it(tmp_path, capsys, small_with_abort):
    """best_effort's branch of _can_terminate_prefetch: a code case runs it (so the code engine
    answers), this budget's replays (2 ranks under 0.5.23's policy, timeout) never do."""
    from test_sglang_floor import Edit

    tree = apply(tmp_path, (Edit(URC, '        if self.prefetch_stop_policy == "best_effort":\n            return True',
                                 '        if self.prefetch_stop_policy == "best_effort":\n            flag = True\n'
                                 '            return flag'),))
    status, doc, _ = sglang_json(capsys, tmp_path / "cache", tree)
    [row] = doc["releases"]
    assert row["conformance"]["conforms"] is True
    changed = row["coverage"]["changed"]["statements"]
    assert changed and all(s["schedules"] > 0 for s in changed)  # the code engine ran them
    assert row["status"] == "not modelled" and not row.get("properties")
    withheld = row["model_rests_on"]["withheld"]
    assert withheld.startswith("changed statement(s) no conformance replay ran: mem_cache/unified_radix_cache.py:")
    assert "_can_terminate_prefetch" in withheld
    assert row["conformance"]["model_verdicts"].startswith("withheld: changed statement(s)")


def test_an_option_known_only_for_the_release_stands_unvouched_where_no_replay_runs_its_code(tmp_path, capsys,
                                                                                           small, session_cache):
    """The same refactor, replayed without an abort: 0.5.23's abort_barrier=no (recorded, since an
    absence is not read off a user's tree) would be borrowed unexercised, so no model verdicts."""
    refactor, _ = EDITS_0523["identity test moved into a helper (refactor)"]
    status, doc, _ = sglang_json(capsys, session_cache / "vouch", apply(tmp_path, refactor))
    [row] = doc["releases"]
    assert row["conformance"]["conforms"] is True
    assert row["status"] == "not modelled" and not row.get("properties")
    withheld = row["model_rests_on"]["withheld"]
    assert withheld.startswith("abort_barrier=no is known only for 0.5.23's code") and "release_aborted_request" in withheld
