"""The release table's bench row (bench_table.py): it runs only when named, and what it says ran
cold is read from the run's own report. The row itself takes minutes; it is measured by the
bench, never here."""

from __future__ import annotations

from prefetch_check import bench
from prefetch_check.bench_table import TABLE_ROWS, executed_counts


def test_the_table_row_runs_only_when_named():
    assert bench.select_table_rows(None) == []
    assert bench.select_table_rows(["startup"]) == []
    assert [r.key for r in bench.select_table_rows(["table"])] == ["sglang-table", "sglang-table-ack-drain"]
    assert [r.key for r in bench.select_table_rows(["sglang-table"])] == ["sglang-table"]
    assert TABLE_ROWS[0].command == "prefetch-check sglang 0.5.1..0.5.23 -j 2"
    assert TABLE_ROWS[1].command == "prefetch-check sglang 0.5.19..0.5.23 -j 2"


def test_the_table_row_is_a_known_row_name():
    assert bench.select_rows(["sglang-table"], quick=False) == []  # not a search row, and not bad input


def test_what_ran_is_counted_from_the_report_not_from_the_cache():
    report = {"searches": 7, "releases": [
        {"code": {"cases": [{"cached": False}, {"cached": True}, {"cached": False}]},
         "conformance": {"configurations": [{}], "cached": False}},
        {"code": {"cases": [{"cached": True}]}, "conformance": {"configurations": [{}], "cached": True}},
        {"code": {"cases": []}, "conformance": {"checked": False}},  # no check planned
    ]}
    assert executed_counts(report) == {"model searches": 7, "code cases": 2, "conformance checks": 1}
