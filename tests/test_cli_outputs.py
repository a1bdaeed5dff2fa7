"""Where `prefetch-check run` writes: `-` is stdout for every report (the table then goes to
stderr), each "see it:" hint sits under its own failure, `--traces-dir` writes one HTML page per
unexpected violation; `--predicate-source` says what it does; `replay` refuses a misspelled
action id as bad input (exit 2) while an action that is merely not enabled diverges (exit 1)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cli_helpers import run, write_scenario
from prefetch_check.cli import build_parser

FIXTURES = Path(__file__).parent / "fixtures"

# the seed race at R=1 with every expectation of `buggy` flipped to VERIFIED: two unexpected
# violations (no_early_acceptance, wait_complete_delivers), each with its counterexample
FLIPPED = """
    name = "flipped"
    pages = 2

    [expect.buggy]
    verifies = "all"

    [expect.fixed]
    verifies = "all"
    """
VIOLATED_BY_BUGGY = ("no_early_acceptance", "wait_complete_delivers")


def scenario(tmp_path, text: str = FLIPPED, name: str = "flipped.toml") -> str:
    return write_scenario(tmp_path, text, name)


# ---- '-' is stdout ----


def test_json_dash_writes_the_report_to_stdout_and_the_table_to_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "run", scenario(tmp_path), "-q", "--json", "-")
    assert code == 1
    data = json.loads(out)  # stdout is the JSON alone
    assert data["summary"] == {"expectations": 14, "hold": 12, "fail": 2}
    assert "Expectations: 12 hold, 2 fail." in err and "flipped" in err
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("flag", ["--junit", "--markdown"])
def test_dash_means_stdout_for_junit_and_markdown_too(tmp_path, capsys, monkeypatch, flag):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "run", scenario(tmp_path), "-q", flag, "-")
    assert code == 1 and "Expectations: 12 hold, 2 fail." in err
    if flag == "--junit":
        assert ET.fromstring(out).get("failures") == "2"
    else:
        assert out.startswith("## prefetch-check: 12 expectations hold, 2 fail")
    assert not (tmp_path / "-").exists()


def test_only_one_report_can_go_to_stdout(tmp_path, capsys):
    code, out, err = run(capsys, "run", scenario(tmp_path), "-q", "--json", "-", "--junit", "-")
    assert code == 2 and out == ""
    assert err.startswith("prefetch-check: error: --json and --junit both write to stdout")


def test_without_dash_the_table_stays_on_stdout(tmp_path, capsys):
    code, out, err = run(capsys, "run", scenario(tmp_path), "-q", "--json", str(tmp_path / "r.json"))
    assert code == 1 and "Expectations: 12 hold, 2 fail." in out and "Expectations" not in err
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["fail"] == 2


def test_off_a_terminal_no_line_is_padded_to_the_fixed_width(tmp_path, capsys):
    """The table is laid out 200 columns wide off a terminal; a line keeps its text, not the spaces
    after it (a saved report shown in a 100-column terminal would wrap them into blank runs)."""
    code, out, _ = run(capsys, "run", scenario(tmp_path), "-q")
    lines = out.splitlines()
    assert code == 1 and "Expectations: 12 hold, 2 fail." in out
    assert any(len(line) > 60 for line in lines) and not [line for line in lines if line.endswith(" ")]


# ---- hints beside their failures, counterexample pages ----


def failure_blocks(text: str) -> dict:
    """property -> the lines from its ✗ failure line up to the next one."""
    blocks, current = {}, None
    for line in text.splitlines():
        if line.startswith("✗ "):
            current = line.split(" / ")[2].split(":")[0]
            blocks[current] = [line]
        elif current is not None:
            blocks[current].append(line)
    return blocks


def test_each_hint_is_printed_under_the_failure_it_belongs_to(tmp_path, capsys):
    path = scenario(tmp_path)
    code, out, _ = run(capsys, "run", path, "-q")
    blocks = failure_blocks(out)
    assert code == 1 and set(blocks) == set(VIOLATED_BY_BUGGY)
    for prop, lines in blocks.items():
        assert lines[1] == f"  see it: prefetch-check trace {path} --predicate buggy --property {prop}"


def test_traces_dir_writes_one_page_per_unexpected_violation(tmp_path, capsys):
    pages = tmp_path / "pages" / "nested"  # made if missing
    code, out, _ = run(capsys, "run", scenario(tmp_path), "-q", "--traces-dir", str(pages))
    assert code == 1
    written = sorted(p.name for p in pages.iterdir())
    assert written == [f"flipped.buggy.{prop}.html" for prop in VIOLATED_BY_BUGGY]
    for prop, lines in failure_blocks(out).items():
        assert lines[2] == f"  page:   {pages / f'flipped.buggy.{prop}.html'}"
        html = (pages / f"flipped.buggy.{prop}.html").read_text(encoding="utf-8")
        assert html.lstrip().lower().startswith("<!doctype html") and prop in html and "S0.check.q0" in html


def test_traces_dir_writes_nothing_when_every_violation_is_expected(tmp_path, capsys):
    seed = FLIPPED.replace('[expect.buggy]\n    verifies = "all"',
                           '[expect.buggy]\n    violates = ["no_early_acceptance", "wait_complete_delivers"]\n    verifies = "all"')
    code, _, _ = run(capsys, "run", scenario(tmp_path, seed), "-q", "--traces-dir", str(tmp_path / "pages"))
    assert code == 0 and list((tmp_path / "pages").iterdir()) == []


def test_traces_dir_that_is_a_file_is_bad_input(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    code, _, err = run(capsys, "run", scenario(tmp_path), "-q", "--traces-dir", str(tmp_path / "taken"))
    assert code == 2 and err.startswith("prefetch-check: error: --traces-dir")


# ---- --predicate-source: the help says what it does ----


def test_predicate_source_replaces_the_default_predicates_as_its_help_says(tmp_path, capsys):
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    help_text = " ".join(run_parser.format_help().split())
    assert "also check" not in help_text
    assert "like --predicate it replaces the default buggy and fixed: add --predicate fixed to compare" in help_text
    source = f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCache.can_terminate_prefetch"
    code, out, _ = run(capsys, "run", scenario(tmp_path), "-q", "--json", str(tmp_path / "r.json"),
                       "--predicate-source", source)
    assert [r["predicate"] for r in json.loads((tmp_path / "r.json").read_text())["runs"]] == [source]
    code, out, _ = run(capsys, "run", scenario(tmp_path), "-q", "--json", str(tmp_path / "r.json"),
                       "--predicate", "fixed", "--predicate-source", source)
    assert [r["predicate"] for r in json.loads((tmp_path / "r.json").read_text())["runs"]] == ["fixed", source]


# ---- replay: a misspelled action is bad input ----


@pytest.mark.parametrize("wrong, near", [
    ("S0.drain_arive", "S0.drain_arrive"),  # a misspelled step
    ("S1.drain_arrive", "S0.drain_arrive"),  # a rank the scenario does not have
    ("X0.drain_arrive", "S0.drain_arrive"),  # no such thread
    ("S0.check.q7", "S0.check.q0"),  # a request the scenario does not have
    ("drain", "S0.drain"),  # not an action id at all
    ("S0.issue.q-1", "S0.issue.q0"),  # not as the model writes ids
])
def test_replay_refuses_an_id_that_is_no_action_of_the_scenario(tmp_path, capsys, wrong, near):
    code, out, err = run(capsys, "replay", scenario(tmp_path), f"S0.issue.q0 {wrong} S0.drain")
    assert code == 2 and out == ""
    assert err.startswith(f"prefetch-check: error: step 2 of the schedule, {wrong!r}, is no action of this scenario")
    assert "<thread><rank>.<step>[.q<request>]" in err and "S.drain_arrive" in err and "rank 0;" in err
    assert f"(did you mean {near!r}?)" in err
    assert "Traceback" not in err and "\n\n" not in err.strip()


def test_replay_of_a_valid_action_that_is_not_enabled_is_still_a_divergence(tmp_path, capsys):
    code, out, _ = run(capsys, "replay", scenario(tmp_path), "S0.issue.q0 P0.publish.q0")
    assert code == 1
    assert "diverges at step 2: 'P0.publish.q0' is not enabled; enabled instead: S0.drain_arrive, P0.take.q0" in out
