"""Reports of check results: JSON loads, JUnit is valid XML with the right counts, Markdown and the table."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from prefetch_check.explorer.report import Entry, Expectation, Labels, print_report, summary, to_json, to_json_text, to_junit, to_markdown
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.api import check

LABELS = Labels(subject="scenario", variant="predicate", title="prefetch-check")


@pytest.fixture(scope="module")
def entries():
    """The seed race under both predicates; one expectation deliberately wrong, one property unjudged."""
    config = uniform_config(ranks=1, pages=2)
    buggy, fixed = check(config, "buggy"), check(config, "fixed")
    return [
        Entry("seed", "buggy", buggy, (
            Expectation("no_early_acceptance", VIOLATED, buggy.verdict("no_early_acceptance"), "0 == 0"),
            Expectation("wait_complete_delivers", VERIFIED, buggy.verdict("wait_complete_delivers"), "wrong on purpose"),
        ), {"ranks": 1}, "seed.toml"),
        Entry("seed", "fixed", fixed, tuple(
            Expectation(p, VERIFIED, fixed.verdict(p)) for p in fixed.results if p != "progress"
        ), {"ranks": 1}, "seed.toml"),
    ]


def test_summary_counts(entries):
    assert summary(entries) == (7, 1)


def test_json_report(entries):
    data = json.loads(to_json_text(entries, LABELS))
    assert data["summary"] == {"expectations": 8, "hold": 7, "fail": 1}
    buggy = data["runs"][0]
    assert (buggy["scenario"], buggy["predicate"], buggy["source"]) == ("seed", "buggy", "seed.toml")
    props = {p["name"]: p for p in buggy["properties"]}
    assert props["no_early_acceptance"]["schedule"] == entries[0].result.trace("no_early_acceptance").schedule
    assert props["wait_complete_delivers"]["holds"] is False
    assert props["progress"]["expected"] is None and props["progress"]["schedule"] is None
    assert buggy["stats"]["states"] == entries[0].result.stats.states and buggy["stats"]["complete"] is True
    assert data == to_json(entries, LABELS) | {}  # the text is exactly the dict


def test_junit_is_valid_xml_with_one_test_per_property(entries):
    root = ET.fromstring(to_junit(entries, LABELS))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("14", "1", "6")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "seed"
    failures = suite.findall("testcase/failure")
    assert len(failures) == 1 and failures[0].get("message") == "expected VERIFIED, got VIOLATED"
    assert "wrong on purpose" in failures[0].text and "schedule: S0.issue.q0" in failures[0].text
    skipped = [c.get("name") for c in suite.findall("testcase") if c.find("skipped") is not None]
    assert skipped == ["tp_agreement", "host_memory", "data_integrity", "progress", "deadlock_freedom", "progress"]


def test_markdown_table_and_failures(entries):
    md = to_markdown(entries, LABELS)
    assert md.startswith("## prefetch-check: 7 expectations hold, 1 fail ❌")
    rows = [line for line in md.splitlines() if line.startswith("| seed")]
    assert len(rows) == 2
    assert all(len(r.split(" | ")) == 11 for r in rows)  # scenario, predicate, 7 properties, states, time
    assert "**VIOLATED ✗**" in rows[0] and "VIOLATED ✓" in rows[0]
    assert "- ✗ seed / buggy / wait_complete_delivers: expected VERIFIED, got VIOLATED" in md


def test_terminal_table_and_expectation_check(entries):
    console = Console(file=io.StringIO(), width=100)
    print_report(console, entries, LABELS)
    text = console.file.getvalue()
    header = next(line for line in text.splitlines() if "property" in line)
    assert re.search(r"scenario\s+property\s+buggy\s+fixed", header)
    assert re.search(r"no_early_acceptance\s+VIOLATED ✓\s+VERIFIED ✓", text)
    assert re.search(r"wait_complete_delivers\s+VIOLATED ✗\s+VERIFIED ✓", text)
    assert re.search(r"progress\s+VERIFIED\s+VERIFIED\s*\n", text)  # no expectation: no mark
    assert "Expectations: 7 hold, 1 fail." in text
    assert "✗ seed / buggy / wait_complete_delivers: expected VERIFIED, got VIOLATED" in text


def test_markdown_flag_appends_so_a_ci_step_summary_keeps_what_is_there(tmp_path, capsys):
    from prefetch_check.cli import main

    scenario = tmp_path / "s.toml"
    scenario.write_text("pages = 1\n[expect.fixed]\nverifies = \"all\"\n")
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("# earlier step\n")
    assert main(["run", str(scenario), "-q", "--markdown", str(summary_file)]) == 0
    assert main(["run", str(scenario), "-q", "--markdown", str(summary_file)]) == 0
    text = summary_file.read_text()
    assert text.startswith("# earlier step\n")
    assert text.count("## prefetch-check: 7 expectations hold, 0 fail ✅") == 2


def test_reports_stay_generic():
    """explorer/ never imports the protocol model (house rule)."""
    for path in (Path(__file__).parent.parent / "explorer" / "report").glob("*.py"):
        source = path.read_text()
        assert not re.search(r"^\s*(from|import)\s+(model\b|prefetch_check\.(?!explorer\b)|prefetch_check\b(?!\.))", source, re.M), path.name
