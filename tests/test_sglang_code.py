"""`prefetch-check sglang` with the tree's own code executed beside the model (code_checks.py):
verdicts about the code as written, for edited trees the model refuses too.

On the real releases, fetched at test time (skipped where the index is unreachable and they are
not cached); the executor's cases are cut to the ones each test needs, to keep it short.
"""

from __future__ import annotations

import json

import pytest

from prefetch_check.cli import main
from pack_helpers import budgets, cases, use_budgets, use_cases
from prefetch_check.sglang.locate import read_protocol_files
from sglang_fixtures import FAMILIES, tree
from test_sglang_floor import ACK_SCENARIO, EDITS_0523, edited_tree
from test_sglang_release import release_srt

RAISES = "2 ranks, rank 0's storage query raises"


@pytest.fixture(autouse=True)
def one_conformance_configuration(monkeypatch):
    """The conformance check of a tree run with both engines: its smallest configuration only
    (the budget is tests/test_conformance.py's)."""
    use_budgets(monkeypatch, "ack-drain", budgets("ack-drain")[:1])


def only_cases(monkeypatch, *names):
    use_cases(monkeypatch, "ack-drain", cases("ack-drain", *names))


def sglang(capsys, cache_parent, *args) -> tuple[int, dict, str]:
    """The command's status, JSON and table; its cache is `cache_parent`/cache (a test's tmp_path,
    or the session's shared one for an unmodified release)."""
    argv = ["sglang", *map(str, args), "--cache-dir", str(cache_parent / "cache"), "--quiet", "--json", "-",
            "--scenarios", str(ACK_SCENARIO)]
    status = main(argv)
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


def test_a_release_gets_its_code_verdicts_beside_the_model(session_cache, capsys, monkeypatch):
    tmp_path = session_cache  # an unmodified release: its answers are shared with the session's other tests
    only_cases(monkeypatch, "1 rank x 1 request", "2 ranks x 1 request")
    status, doc, table = sglang(capsys, tmp_path, release_srt("0.5.23"))
    [row] = doc["releases"]
    assert row["status"] == "checked" and row["properties"]  # the model follows the release
    code = row["code"]
    assert code["engine"] == "code" and code["ran"] and code["not_modelled"] == []
    assert [c["case"] for c in code["cases"]] == ["1 rank x 1 request", "2 ranks x 1 request"]
    assert all(c["exhaustive"] and c["runs"] > 0 for c in code["cases"])
    verdicts = {p: v["verdict"] for p, v in code["properties"].items()}
    assert verdicts["data_integrity"] == verdicts["host_memory"] == verdicts["deadlock_freedom"] == "VERIFIED"
    assert set(verdicts.values()) <= {"VERIFIED", "NOT JUDGED"}
    assert "its code, executed" in table
    # its code conforms to the model (tests/test_conformance.py): the model's verdicts are shown, by engine
    assert row["conformance"]["conforms"] is True and row["conformance"]["model_verdicts"] == "shown"
    assert all(p["engine"] == "model" for p in row["properties"].values())
    assert "the model, under upstream's assumptions" in table and "conforms:" in table
    # a second run answers the code from the cache
    sglang(capsys, tmp_path, release_srt("0.5.23"))
    assert main(["sglang", str(release_srt("0.5.23")), "--cache-dir", str(tmp_path / "cache"), "--quiet",
                 "--scenarios", str(ACK_SCENARIO)]) in (0, 1)
    out = " ".join(capsys.readouterr().out.split())  # the summary wraps where the cache's path ends
    assert "the code: 0 case(s) executed, 2 from the cache" in out and "conformance: 0 tree(s) checked, 1 from" in out


def test_an_edit_the_model_refuses_is_caught_from_its_own_code(tmp_path, capsys, monkeypatch):
    only_cases(monkeypatch, RAISES)
    name = "storage query exceptions no longer caught"
    edited = edited_tree(tmp_path / "edited", read_protocol_files(release_srt("0.5.23")), name, EDITS_0523[name][0])
    status, doc, _ = sglang(capsys, tmp_path, edited)
    [row] = doc["releases"]
    assert row["status"] == "not modelled" and "properties" not in row  # the model's verdicts are withheld
    crash = row["code"]["properties"]["no_crash"]
    assert status == 1 and crash["verdict"] == "VIOLATED" and crash["case"] == RAISES
    site_file, _, line = crash["site"].partition(":")
    assert (edited / "sglang" / "srt" / site_file).is_file() and int(line) > 0  # a line of the tree
    assert "crash" in crash["consequence"] or "dies" in crash["consequence"] or "died" in crash["consequence"]
    assert "--code-trace no_crash" in crash["command"]
    # the counterexample's steps, each at a line of the edited tree
    assert main(["sglang", str(edited), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--engine", "code",
                 "--code-trace", "no_crash"]) == 1
    shown = capsys.readouterr().out
    assert f"its code, {RAISES}:" in shown and "no_crash:" in shown
    assert "managers/cache_controller.py:" in shown


@pytest.mark.parametrize("version", ["0.5.19", "0.5.21"])
def test_the_uncaught_storage_exceptions_of_0_5_19_to_0_5_21_come_from_their_code(tmp_path, capsys, monkeypatch,
                                                                                 version):
    only_cases(monkeypatch, RAISES)
    status, doc, _ = sglang(capsys, tmp_path, "--engine", "code", release_srt(version))
    [row] = doc["releases"]
    verdicts = {p: v["verdict"] for p, v in row["code"]["properties"].items()}
    assert status == 1 and verdicts["no_crash"] == "VIOLATED"
    assert verdicts["progress"] == "VIOLATED" or verdicts["deadlock_freedom"] == "VIOLATED"


def test_0_5_22_catches_the_storage_exception(session_cache, capsys, monkeypatch):
    only_cases(monkeypatch, RAISES)
    status, doc, _ = sglang(capsys, session_cache, "--engine", "code", release_srt("0.5.22"))
    verdicts = {p: v["verdict"] for p, v in doc["releases"][0]["code"]["properties"].items()}
    assert status == 0 and verdicts["no_crash"] == "VERIFIED"


def test_a_tree_its_code_cannot_run_gets_no_code_verdicts_and_exit_3(tmp_path, capsys):
    fixture = tree(tmp_path / "fixture", *FAMILIES["unified"][0])
    status, doc, _ = sglang(capsys, tmp_path, "--engine", "code", fixture)
    [row] = doc["releases"]
    code = row["code"]
    assert status == 3 and code["ran"]
    assert code["not_modelled"] and code["not_modelled"][0].startswith("the executor could not run it")
    assert len({c["error"] for c in code["cases"]}) == 1  # one failure, not one per case
    assert all(v["verdict"] != "VERIFIED" for v in code["properties"].values())


STALE = "1 rank, prefetched again, best_effort"


def test_0_5_19s_rid_matched_ack_drain_applies_the_old_completion_to_the_new_operation():
    """0.5.19: its rid-matched ACK drain applies the old completion to the new operation (0.5.23,
    where the old operation's late hit revokes the newer prefetch: tests/test_code_dpor.py). Run
    as `sglang` runs the case (its configuration, limits and judged properties: all), without the
    command's coverage tracer (it triples the search's time; the command's own path, --code-trace
    included, is tried on the cases above)."""
    from prefetch_check.model.code import check_tree
    from prefetch_check.sglang.mappings.ack_drain.mapping import CASES

    [case] = [c for c in CASES if c.name == STALE]
    assert case.judges == ()  # every property
    result = check_tree(release_srt("0.5.19"), case.config, case.limits)
    assert result.exhaustive and result.verdicts["operation_identity"] == "VIOLATED", (result.bound, result.verdicts)
    assert "BOUNDED" not in set(result.verdicts.values())
    assert result.violations["operation_identity"].site.startswith("mem_cache/unified_radix_cache.py:")
