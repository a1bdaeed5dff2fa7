"""Bench rows for sampling (prefetch_check/bench_sampling.py): their own table and JSON key, the
existing rows untouched, and what a row reports (no timing assertions)."""

from __future__ import annotations

import json

import pytest

from prefetch_check import bench
from prefetch_check.bench_sampling import RACE, SAMPLING_ROWS, SamplingMeasurement
from prefetch_check.cli import main


def test_sampling_rows_report_what_they_found(tmp_path, capsys):
    report = tmp_path / "bench.json"
    code = main(["bench", "--quiet", "--rows", "simulate-tp4,census-tp1", "--json", str(report)])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "sampling (issue 13)" in out and "prefetch-check bench ·" not in out  # no search rows named
    data = json.loads(report.read_text())
    assert data["rows"] == []
    simulate, census = data["sampling"]
    assert simulate["row"]["key"] == "simulate-tp4" and set(simulate["found"]) == set(RACE)
    assert simulate["runs"] >= 1 and simulate["steps"] > 0 and simulate["target_met"] is None
    assert census["row"]["key"] == "census-tp1" and census["states"] == 87
    value, low, high, exact = census["probabilities"]["no_early_acceptance"]
    assert exact and value == pytest.approx(5 / 16) and low == high == value


def test_quick_picks_the_quick_sampling_rows_and_keeps_the_search_rows():
    assert [r.key for r in bench.select_sampling_rows(None, quick=True)] == [r.key for r in SAMPLING_ROWS if r.quick]
    assert [r.key for r in bench.select_rows(["sampling"], quick=False)] == []
    assert len(bench.select_sampling_rows(["sampling"], quick=False)) == len(SAMPLING_ROWS)
    assert bench.select_rows(None, quick=True) == [r for r in bench.ROWS if r.quick]


def test_the_tp32_target_needs_both_violations_in_time():
    row = next(r for r in SAMPLING_ROWS if r.key == "simulate-tp32-random")
    both = {name: (0, 10, 5) for name in RACE}
    assert SamplingMeasurement(row, seconds=3.0, found=both).met() is True
    assert SamplingMeasurement(row, seconds=30.0, found=both).met() is False
    assert SamplingMeasurement(row, seconds=3.0, found={RACE[0]: (0, 10, 5)}).met() is False
