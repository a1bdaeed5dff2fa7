"""The `prefetch-check` command: exit statuses 0/1/2, errors as one paragraph, run/trace/replay."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from cli_helpers import run, write_scenario

# The seed race at R=1: a few dozen states, both predicates in milliseconds.
SEED = """
    name = "seed"
    pages = 2

    [expect.buggy]
    violates = ["no_early_acceptance", "wait_complete_delivers"]
    verifies = "all"

    [expect.fixed]
    verifies = "all"
    """
SEED_SCHEDULE = "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0"


def assert_one_paragraph_error(err: str, *needles: str) -> None:
    assert err.startswith("prefetch-check: error: ")
    assert "Traceback" not in err
    assert "\n\n" not in err.strip()
    for n in needles:
        assert n in err


# ---- run: exit 0 / 1 ----


def test_run_exits_0_when_every_expectation_holds(tmp_path, capsys):
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, SEED), "-q")
    assert code == 0
    assert "Expectations: 14 hold, 0 fail." in out
    assert "VIOLATED ✓" in out and "VERIFIED ✓" in out


def test_run_exits_1_when_one_expectation_is_flipped(tmp_path, capsys):
    flipped = SEED.replace('violates = ["no_early_acceptance", "wait_complete_delivers"]', 'violates = ["no_early_acceptance"]')
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, flipped), "-q")
    assert code == 1
    assert "Expectations: 13 hold, 1 fail." in out
    assert "seed / buggy / wait_complete_delivers: expected VERIFIED, got VIOLATED" in out
    assert f"prefetch-check trace {tmp_path / 'seed.toml'} --predicate buggy --property wait_complete_delivers" in out


def test_a_bounded_search_is_not_judged_exit_3_and_a_wrong_verdict_still_fails(tmp_path, capsys):
    """A search a limit cut is neither a pass nor a wrong verdict: exit 3 (issue 21), the
    expectation still shown as not holding; a verdict that differs wins with exit 1."""
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, SEED), "-q", "--predicate", "fixed", "--max-states", "5")
    assert code == 3
    assert "expected VERIFIED, got BOUNDED" in out
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, "pages = 1\n"), "-q", "--predicate", "fixed",
                       "--max-states", "5")
    assert code == 3 and "BOUNDED" in out  # no expectations at all: still not judged
    wrong = SEED.replace('[expect.fixed]', '[expect.fixed]\nviolates = ["progress"]', 1)
    assert wrong != SEED
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, wrong), "-q", "--predicate", "fixed")
    assert code == 1


def test_only_the_chosen_predicates_are_run_and_judged(tmp_path, capsys):
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, SEED), "-q", "--predicate", "fixed")
    assert code == 0
    assert "Expectations: 7 hold, 0 fail." in out and "buggy" not in out


def test_a_predicate_without_expectations_is_reported_not_judged(tmp_path, capsys):
    code, out, _ = run(capsys, "run", write_scenario(tmp_path, "pages = 1\n"), "-q")
    assert code == 0
    assert "No expectations stated" in out


def _normalised(text: str) -> str:
    text = re.sub(r"\d+\.\d+s", "T", text)  # timings differ run to run
    return re.sub(r"[ \t]+", " ", text)  # and so may the column widths they need


def test_jobs_2_prints_the_same_results_as_jobs_1(tmp_path, capsys):
    path = write_scenario(tmp_path, SEED.replace('pages = 2', 'pages = 1\n[matrix]\nranks = [1, 2]'))
    code1, out1, _ = run(capsys, "run", path, "-q", "--jobs", "1")
    code2, out2, _ = run(capsys, "run", path, "-q", "--jobs", "2")
    assert code1 == code2 == 0
    assert _normalised(out1) == _normalised(out2)
    assert out1.index("ranks=1") < out1.index("ranks=2")


def test_progress_goes_to_stderr_as_plain_lines(tmp_path, capsys):
    code, out, err = run(capsys, "run", write_scenario(tmp_path, SEED))
    assert code == 0
    assert re.search(r"\[1/2\] seed · buggy: [\d,]+ states", err)
    assert "[2/2] seed · fixed" in err and "[1/2]" not in out


# ---- bad input: exit 2, one paragraph, nothing run ----


@pytest.mark.parametrize(
    "text, needles",
    [
        ("rank = 1\n", ["line 1", "did you mean 'ranks'?"]),
        ("pages = [1,\n", ["not valid TOML"]),
        ("pages = 2\nhits = 5\n", ["line 2", "larger than pages = 2"]),
        ("ranks = 99\n", ["ranks must be an integer in 1..16, got 99"]),
        ('[expect."not_a_module_xyz:fn"]\nverifies = "all"\n', ["cannot import module 'not_a_module_xyz'"]),
    ],
)
def test_bad_scenario_exits_2_with_one_paragraph(tmp_path, capsys, text, needles):
    code, out, err = run(capsys, "run", write_scenario(tmp_path, text), "-q")
    assert code == 2
    assert out == ""
    assert_one_paragraph_error(err, "seed.toml", *needles)


def test_one_bad_file_in_a_folder_stops_the_whole_run(tmp_path, capsys):
    write_scenario(tmp_path, SEED, "a.toml")
    write_scenario(tmp_path, "ranks = 0\n", "b.toml")
    code, out, err = run(capsys, "run", str(tmp_path))
    assert code == 2 and out == ""
    assert "b.toml" in err and "seed · buggy" not in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--predicate", "nope"], "unknown predicate 'nope'"),
        (["--predicate", "no_such_module_xyz:fn"], "cannot import module 'no_such_module_xyz'"),
        (["--predicate", "json:no_such_function"], "has no function 'no_such_function'"),
        (["--json", "/no/such/folder/r.json"], "does not exist"),
        (["--jobs", "-1"], "--jobs"),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, argv, needle):
    code, out, err = run(capsys, "run", write_scenario(tmp_path, SEED), "-q", *argv)
    assert code == 2 and out == ""
    assert_one_paragraph_error(err, needle)


def test_usage_errors_exit_2(tmp_path, capsys):
    assert run(capsys, "run", "--max-states", "zero")[0] == 2
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys)[0] == 2
    assert run(capsys, "--help")[0] == 0


def test_missing_path_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "run", str(tmp_path / "missing.toml"))
    assert code == 2 and "no such scenario file or folder" in err


def test_console_script_reports_bad_input_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "prefetch_check.cli", "run", write_scenario(tmp_path, "rnaks = 2\n")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert_one_paragraph_error(proc.stderr, "did you mean 'ranks'?")


def test_a_users_own_predicate_from_the_current_folder(tmp_path, capsys, monkeypatch):
    (tmp_path / "cli_user_predicates.py").write_text(
        "def patient(op):\n"
        "    return op.policy == 'best_effort' or (len(op.hash_value) > 0 and op.completed_tokens == len(op.hash_value) * op.page_size)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    path = write_scenario(tmp_path, SEED + '\n[expect."cli_user_predicates:patient"]\nverifies = "all"\n')
    code, out, _ = run(capsys, "run", path, "-q", "--predicate", "buggy", "--predicate", "cli_user_predicates:patient")
    assert code == 0
    assert "cli_user_predicates:patient" in out and "Expectations: 14 hold, 0 fail." in out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_predicate_that_raises_is_bad_input(tmp_path, capsys, monkeypatch, jobs):
    (tmp_path / "broken_predicates.py").write_text("def crash(op):\n    return op.no_such_field > 0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    code, out, err = run(capsys, "run", write_scenario(tmp_path, SEED), "-q", "--jobs", jobs,
                         "--predicate", "buggy", "--predicate", "broken_predicates:crash")
    assert code == 2 and out == ""
    assert_one_paragraph_error(
        err, "predicate 'broken_predicates:crash' raised AttributeError", "broken_predicates.py, line 2, while checking seed"
    )


# ---- replay ----


def test_replay_prints_each_step_and_the_violation(tmp_path, capsys):
    code, out, _ = run(capsys, "replay", write_scenario(tmp_path, SEED), SEED_SCHEDULE)
    assert code == 0
    assert "4. S0.check.q0" in out and "0 == 0 -> accept" in out
    assert "no_early_acceptance violated" in out and "replayed all 4 steps" in out


def test_replay_divergence_says_where_and_what_was_enabled(tmp_path, capsys):
    code, out, _ = run(capsys, "replay", write_scenario(tmp_path, SEED), "S0.issue.q0 S0.drain_arrive P0.take.q0 S0.check.q0")
    assert code == 1
    assert "diverges at step 4: 'S0.check.q0' is not enabled; enabled instead: S0.drain, P0.publish.q0" in out
    assert "3. P0.take.q0" in out


def test_replay_of_an_empty_schedule_is_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "replay", write_scenario(tmp_path, SEED), "  ")
    assert code == 2 and "the schedule is empty" in err


def test_replay_needs_a_case_for_a_matrix(tmp_path, capsys):
    path = write_scenario(tmp_path, "pages = 1\n[matrix]\nranks = [1, 2]\n")
    code, _, err = run(capsys, "replay", path, SEED_SCHEDULE)
    assert code == 2 and "--case 1: ranks=1; --case 2: ranks=2" in err
    assert run(capsys, "replay", path, "--case", "1", "S0.issue.q0")[0] == 0


# ---- trace (the viewer itself is tested in test_view*.py) ----


def test_trace_json_round_trips_through_replay(tmp_path, capsys):
    path = write_scenario(tmp_path, SEED)
    out_file = tmp_path / "trace.json"
    code, _, _ = run(capsys, "trace", path, "--property", "no_early_acceptance", "--format", "json", "--out", str(out_file), "-q")
    assert code == 0
    data = json.loads(out_file.read_text())
    assert data["schedule"] == SEED_SCHEDULE
    code, out, _ = run(capsys, "replay", path, f"@{out_file}")
    assert code == 0 and "no_early_acceptance violated" in out


def test_trace_exports_the_state_graph(tmp_path, capsys):
    out_file = tmp_path / "graph.dot"
    code, out, _ = run(capsys, "trace", write_scenario(tmp_path, SEED), "--format", "dot", "--out", str(out_file), "-q")
    assert code == 0 and str(out_file) in out
    assert out_file.read_text().startswith("digraph")


def test_trace_defaults_to_the_first_violated_property(tmp_path, capsys):
    code, out, _ = run(capsys, "trace", write_scenario(tmp_path, SEED), "--format", "markdown", "-q")
    assert code == 0
    assert "no_early_acceptance" in out and "S0.check.q0" in out


def test_trace_of_a_verified_property_exits_1(tmp_path, capsys):
    code, out, _ = run(capsys, "trace", write_scenario(tmp_path, SEED), "--predicate", "fixed", "--property", "progress", "-q")
    assert code == 1 and "progress is VERIFIED" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--property", "progres"], "did you mean 'progress'?"),
        (["--format", "dot"], "--out FILE"),
        (["--format", "dot", "--out", "/tmp/never-written.dot", "--graph-states", "5"], "--graph-states 5"),
        (["--predicate", "nope"], "unknown predicate"),
    ],
)
def test_trace_bad_input_exits_2(tmp_path, capsys, argv, needle):
    code, _, err = run(capsys, "trace", write_scenario(tmp_path, SEED), "-q", *argv)
    assert code == 2
    assert_one_paragraph_error(err, needle)
