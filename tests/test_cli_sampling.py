"""`prefetch-check simulate` and `census`: exit statuses, the same output for the same seed, honest
wording (never VERIFIED), schedules that `replay` re-runs, and bad input as one paragraph."""

from __future__ import annotations

import re
import shlex

import pytest

from cli_helpers import run, write_scenario

SEED_RACE = """
    name = "seed"
    pages = 2
    """
DIFFERING = """
    name = "differing"
    ranks = 2
    pages = 2
    hits = { 1 = 1 }
    """


def assert_one_paragraph_error(err: str, *needles: str) -> None:
    assert err.startswith("prefetch-check: error: ") or err.startswith("usage:")
    assert "Traceback" not in err
    for n in needles:
        assert n in err


# ---- simulate ----


def test_simulate_finds_the_seed_race_and_exits_1(tmp_path, capsys):
    code, out, _ = run(capsys, "simulate", write_scenario(tmp_path, SEED_RACE), "--ranks", "4", "--seed", "2",
                       "--schedules", "100")
    assert code == 1
    assert "seed 2" in out.splitlines()[0]
    assert re.search(r"no_early_acceptance\s+VIOLATED in schedule #\d+", out)
    assert re.search(r"progress\s+NOT JUDGED", out)
    assert "VERIFIED" not in out
    assert "replay it: prefetch-check replay" in out


def test_a_clean_run_says_what_it_is_worth_and_exits_0(tmp_path, capsys):
    code, out, _ = run(capsys, "simulate", write_scenario(tmp_path, SEED_RACE), "--predicate", "fixed", "--seed", "0",
                       "--schedules", "50", "--strategy", "pct", "--pct-depth", "2", "--depth", "40")
    assert code == 0
    assert re.search(r"no_early_acceptance\s+NO VIOLATION FOUND \(sampled\)", out)
    assert "VERIFIED" not in out
    assert "1/(n * k^(d-1))" in out and "n = 4 threads" in out and "k = 40 steps" in out
    assert "p = 0.00625" in out  # 1 / (4 * 40)
    assert "(1-p)^N = " in out


def test_the_same_seed_prints_the_same_output(tmp_path, capsys):
    path = write_scenario(tmp_path, SEED_RACE)
    argv = ("simulate", path, "--ranks", "3", "--seed", "9", "--schedules", "40", "--strategy", "pct")
    first = run(capsys, *argv)
    second = run(capsys, *argv)
    assert first[0] == second[0] == 1
    assert first[1] == second[1]
    other = run(capsys, *argv[:-5], "--seed", "10", "--schedules", "40", "--strategy", "pct")
    assert other[1] != first[1]


def test_the_printed_schedule_replays_at_the_same_tp_size(tmp_path, capsys):
    path = write_scenario(tmp_path, SEED_RACE)
    _, out, _ = run(capsys, "simulate", path, "--ranks", "20", "--seed", "1", "--schedules", "20", "--no-trace")
    command = next(line for line in out.splitlines() if "replay it:" in line).split("replay it: ", 1)[1]
    argv = shlex.split(command)[1:]
    assert argv[:4] == ["replay", path, "--ranks", "20"]
    code, replayed, _ = run(capsys, *argv)
    assert code == 0
    assert "violated" in replayed and "replayed all" in replayed


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--seed", "1", "--pct-depth", "2"], "--pct-depth: only the pct strategy"),
        (["--seed", "1", "--ranks", "0"], "--ranks"),
        (["--seed", "1", "--depth", "0"], "--depth"),
        (["--seed", "1", "--strategy", "dfs"], "--strategy"),
        (["--seed", "x"], "--seed"),
        ([], "--seed"),
        (["--seed", "1", "--predicate", "nosuch"], "--predicate"),
    ],
)
def test_simulate_bad_input_exits_2(tmp_path, capsys, argv, needle):
    code, out, err = run(capsys, "simulate", write_scenario(tmp_path, SEED_RACE), *argv)
    assert code == 2
    assert_one_paragraph_error(err, needle)


def test_ranks_of_a_scenario_whose_ranks_differ_is_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "simulate", write_scenario(tmp_path, DIFFERING, "differing.toml"), "--ranks", "8", "--seed", "1")
    assert code == 2
    assert_one_paragraph_error(err, "differing.toml", "--ranks 8", "hits vary by rank")


def test_a_missing_scenario_is_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "simulate", str(tmp_path / "nope.toml"), "--seed", "1")
    assert code == 2
    assert_one_paragraph_error(err, "nope.toml")


# ---- census ----


def test_census_exact_at_small_sizes(tmp_path, capsys):
    code, out, err = run(capsys, "census", write_scenario(tmp_path, SEED_RACE), "--ranks", "1,2")
    assert code == 0
    assert re.search(r"seed\s+no_early_acceptance\s+0\.312500\s+exact", out)  # 5/16 at TP=1
    assert re.search(r"seed at ranks=2\s+no_early_acceptance\s+0\.473058\s+exact", out)
    assert "progress: NOT JUDGED" in out
    assert "VERIFIED" not in out
    assert "census: seed: exact in" in err  # times go to stderr


def test_census_falls_back_to_sampling_past_its_state_limit(tmp_path, capsys):
    code, out, _ = run(capsys, "census", write_scenario(tmp_path, SEED_RACE), "--ranks", "2", "--max-states", "100",
                       "--runs", "300", "--seed", "3")
    assert code == 0
    assert "sampled, 300 runs, seed 3" in out
    assert "more than 100 states" in out
    assert re.search(r"no_early_acceptance\s+0\.\d{4} \(\d+/300\)\s+\[0\.\d{4}, 0\.\d{4}\] at 95%", out)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--method", "exact", "--max-states", "10"], "--method exact: the state graph has more than 10 states"),
        (["--confidence", "1.5"], "--confidence"),
        (["--ranks", "1,x"], "--ranks"),
        (["--case", "2"], "--case 2"),
    ],
)
def test_census_bad_input_exits_2(tmp_path, capsys, argv, needle):
    code, _, err = run(capsys, "census", write_scenario(tmp_path, SEED_RACE), *argv)
    assert code == 2
    assert_one_paragraph_error(err, needle)
