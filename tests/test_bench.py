"""`prefetch-check bench`: one table with the expected columns, the same figures as JSON, and a
row cut by its budget reported as BOUNDED (never verified). No timing assertions."""

from __future__ import annotations

import json

import pytest

from prefetch_check.explorer.result import BOUNDED, VERIFIED
from prefetch_check import bench
from prefetch_check.cli import main
from prefetch_check.commands.bench import COLUMNS


def run(capsys, *argv):
    code = main(["bench", "--quiet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_quick_bench_prints_one_table_and_the_same_figures_as_json(tmp_path, capsys):
    report = tmp_path / "bench.json"
    code, out, _ = run(capsys, "--quick", "--json", str(report))
    assert code == 0
    header = next(line for line in out.splitlines() if line.strip().startswith("row"))
    assert header.split() == [w for c in COLUMNS for w in c.split()]
    data = json.loads(report.read_text())
    quick = [r for r in bench.ROWS if r.quick]
    assert [r["row"] for r in data["rows"]] == [r.key for r in quick]
    for row in data["rows"]:
        assert row["row"] in out
        assert row["complete"] and not row["bounded"] and row["states"] > 0 and row["transitions"] >= row["states"] - 1
        assert f"{row['states']:,}" in out
        assert set(row["verdicts"].values()) == {VERIFIED}  # fixed, wait_complete: everything holds
        assert row["summary"] == f"{VERIFIED} all"
        assert row["peak_mib"] > 0
    by_key = {r["row"]: r for r in data["rows"]}
    assert by_key["ref-2x2x2-on"]["states"] < by_key["ref-2x2x2-off"]["states"]  # the reductions reduce
    assert by_key["plain-2x2x2"]["states"] == by_key["ref-2x2x2-off"]["states"]
    assert by_key["ref-2x2x2-on"]["target"]["met"] in (True, False)
    assert data["growth"]["ranks"] == [1, 2] and data["growth"]["polynomial_met"] is None  # R=3..8 not asked for
    growth = next(line for line in out.splitlines() if line.startswith("growth with R"))
    assert "(target: polynomial for R=1..8, not judged)" in growth and "NOT MET" not in growth  # speed rows may miss on a busy machine


def test_a_row_cut_by_its_budget_is_bounded_and_stops_the_growth(tmp_path, capsys, monkeypatch):
    report = tmp_path / "bench.json"
    # growth-R3 without reductions has far more states than the 2,048 expanded between two
    # checks of the time limit (with them, every growth row is now smaller than that)
    from dataclasses import replace

    plain = tuple(replace(r, reductions=False) if r.section == "growth" else r for r in bench.ROWS)
    monkeypatch.setattr(bench, "ROWS", plain)
    code, out, _ = run(capsys, "--rows", "growth-R3,growth-R4", "--budget", "0.0001", "--json", str(report))
    assert code == 0
    rows = json.loads(report.read_text())["rows"]
    cut, after = rows
    assert cut["bounded"] and not cut["complete"]
    assert VERIFIED not in cut["verdicts"].values() and BOUNDED in cut["verdicts"].values()
    assert cut["summary"].startswith(BOUNDED) and cut["states"] > 0
    assert not after["ran"] and "growth-R3 was bounded" in after["summary"]
    assert "BOUNDED" in out and "not run" in out


def test_a_row_killed_at_budget_plus_grace_is_bounded_with_what_it_reached():
    row = next(r for r in bench.ROWS if r.key == "plain-2x2x2")
    m = bench.measure(row, budget=0.0001, grace=0)  # the process cannot even start in time
    assert m.killed and m.bounded and not m.complete
    assert m.summary().startswith(BOUNDED) and m.met() is False


def test_a_target_is_not_met_by_a_fast_row_that_did_not_verify():
    row = next(r for r in bench.ROWS if r.key == "ref-2x2x2-on")
    fast = dict(complete=True, states=10, search_seconds=0.1, verdicts={"progress": VERIFIED})
    assert bench.Measurement(row, **fast).met() is True
    assert bench.Measurement(row, **{**fast, "verdicts": {"progress": "VIOLATED"}}).met() is False
    assert bench.Measurement(row, **{**fast, "complete": False}).met() is False
    assert bench.Measurement(row, **{**fast, "search_seconds": 5.0}).met() is False


def growth_rows(states):
    rows = [r for r in bench.ROWS if r.section == "growth"]
    return [bench.Measurement(r, complete=True, states=s) for r, s in zip(rows, states)]


def test_growth_is_judged_polynomial_only_when_the_ratio_keeps_falling_up_to_r8():
    from math import comb

    assert bench.growth(growth_rows([comb(r + 6, 6) for r in range(1, 9)])).met
    assert not bench.growth(growth_rows([3**r for r in range(1, 9)])).met  # exponential: constant ratio
    assert bench.growth(growth_rows([comb(r + 6, 6) for r in range(1, 6)])).met is None  # R=6..8 not asked for
    asked = growth_rows([comb(r + 6, 6) for r in range(1, 9)])
    cut = asked[:5] + [bench.Measurement(asked[5].row, complete=False, states=9)] + [
        bench.Measurement(m.row, ran=False) for m in asked[6:]]
    assert bench.growth(cut).met is False  # asked for R=6..8, bounded at R=6: the target is missed


def test_unknown_rows_are_bad_input(capsys):
    code, _, err = run(capsys, "--rows", "growth-R9")
    assert code == 2 and "growth-R9" in err and "did you mean" in err


@pytest.mark.parametrize("flag", ["--budget", "--max-memory"])
def test_budget_and_memory_must_be_positive(capsys, flag):
    code, _, _ = run(capsys, flag, "0")
    assert code == 2


def test_a_full_search_whose_progress_analysis_was_cut_is_not_verified():
    row = next(r for r in bench.ROWS if r.key == "scale-R16")
    m = bench.Measurement(row, complete=True, states=10, search_seconds=0.1,
                          verdicts={"tp_agreement": VERIFIED, "progress": BOUNDED})
    assert m.summary().startswith(BOUNDED) and "progress" in m.summary() and m.met() is False


def test_the_speedup_of_one_search_on_two_processes_is_judged_from_the_pair_of_rows():
    one = next(r for r in bench.ROWS if r.key == "parallel-w1")
    two = next(r for r in bench.ROWS if r.key == "parallel-w2")
    assert (one.policy, one.workers, two.workers) == ("timeout", 1, 2) and "x2 proc" in two.configuration
    done = dict(complete=True, states=10, verdicts={"progress": VERIFIED})
    pair = [bench.Measurement(one, search_seconds=10.0, progress_seconds=1.0, **done),
            bench.Measurement(two, search_seconds=5.0, progress_seconds=6.0, **done)]
    (s,) = bench.speedups(pair, headroom=1.9)
    assert s.factor == 2.0 and s.met and "1.90x" in s.text
    assert "the whole check 1.00x (11.00 s -> 11.00 s" in s.text  # what --workers buys end to end
    (slow,) = bench.speedups([pair[0], bench.Measurement(two, search_seconds=8.0, **done)])
    assert not slow.met and "NOT MET" in slow.text
    assert bench.speedups([pair[0], bench.Measurement(two, search_seconds=5.0, complete=False)]) == []


def test_the_quick_run_also_times_start_up_in_fresh_processes(tmp_path, capsys):
    report = tmp_path / "bench.json"
    code, out, _ = run(capsys, "--rows", "startup", "--json", str(report))
    assert code == 0
    data = json.loads(report.read_text())
    assert data["rows"] == [] and [r["row"] for r in data["startup"]] == ["startup-version", "startup-run"]
    for row in data["startup"]:
        assert not row["error"] and len(row["seconds"]) == 5 and all(s > 0 for s in row["seconds"])
        assert row["fastest_seconds"] <= row["median_seconds"] and row["target"]["met"] in (True, False)
        assert row["command"] in out
    assert data["startup"][1]["command"].endswith("release-seed.toml -q")


def test_the_issue_23_rows_check_ack_drain_with_storage_batch_1_and_threshold_1():
    from prefetch_check.model.protocols.ack_drain.config import AckConfig

    rows = {r.key: r for r in bench.ROWS if r.section == "timeout"}
    assert set(rows) == {"ack-R3x1-timeout", "ack-R2x2-wait", "ack-R2x2-timeout", "poll-R2x2-timeout",
                         "ack-R3x2-timeout", "ack-R4x2-timeout", "poll-R4x2-timeout"}
    config = rows["ack-R2x2-timeout"].config()
    assert isinstance(config, AckConfig) and config.storage_batch_size == 1 and config.prefetch_threshold == 1
    assert config.policy == "timeout" and config.ranks == 2 and config.num_requests == 2
    assert rows["ack-R2x2-timeout"].target.max_seconds == 60.0
    m = bench.measure(rows["ack-R2x2-wait"], budget=60)
    assert m.complete and m.summary() == f"{VERIFIED} all"
    assert {"no_crash", "operation_identity"} <= set(m.verdicts)  # the ack-drain protocol's own properties
    assert m.as_json()["configuration"]["protocol"] == "ack-drain"


def test_what_a_rank_costs_is_read_off_the_timeout_rows():
    rows = {r.key: r for r in bench.ROWS if r.section == "timeout"}
    two = bench.Measurement(rows["ack-R2x2-timeout"], complete=True, states=1000, search_seconds=1.0)
    three = bench.Measurement(rows["ack-R3x2-timeout"], complete=True, states=8000, search_seconds=9.0)
    four = bench.Measurement(rows["ack-R4x2-timeout"], complete=False, states=50000, search_seconds=60.0,
                             stop_reason="time limit")
    (line,) = bench.rank_costs([two, three, four])
    assert line.startswith("ack-drain, 2 requests, timeout: R=2->3 (1 rank(s)): states x8.00, seconds x9.00")
    assert "R=4: BOUNDED after 50,000 states" in line
