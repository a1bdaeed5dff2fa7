"""`prefetch-check run` warns, per case and on stderr, about action classes no predicate fired."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.cli import main
from prefetch_check.commands.never_fired import never_fired
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import load_scenarios
from prefetch_check.scenario.runner import plan, run_tasks

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SEED = str(SCENARIOS / "seed-race.toml")


def test_a_class_counts_as_fired_if_any_predicate_fired_it():
    tasks = plan(load_scenarios([SEED, str(SCENARIOS / "tp-sweep.toml")]), ["buggy", "fixed"], {})
    fixed_only = plan(load_scenarios([SEED]), ["fixed"], {})
    with RunProgress(len(tasks), quiet=True) as progress:
        results = run_tasks(tasks, 1, progress)
    rows = never_fired(tasks, results)
    assert rows == []  # under both predicates every step these scenarios allow fires
    by_case: dict = {}
    for t, r in zip(tasks, results):
        by_case.setdefault(t.case.name, []).append(set(r.stats.never_fired))
    for name, kinds in by_case.items():
        assert set.intersection(*kinds) == set(), name
    # fired under buggy only (its early accept ends a load): exercised, so not listed
    buggy, fixed = by_case["seed-race"]
    assert "I.increment_refused" in fixed - buggy and "seed-race" not in {name for name, _, _ in rows}
    # what the scenario rules out (no allocation may fail) is never listed
    assert all("S.issue_alloc_failed" not in kinds for _, kinds, _ in rows)
    with RunProgress(len(fixed_only), quiet=True) as progress:
        alone = never_fired(fixed_only, run_tasks(fixed_only, 1, progress))
    assert [(name, list(kinds), cut) for name, kinds, cut in alone] == [("seed-race", ["I.increment_refused"], False)]


def test_run_prints_the_warning_on_stderr_only(capsys):
    assert main(["run", SEED, "-q", "--predicate", "fixed"]) == 0
    out, err = capsys.readouterr()
    assert "never fired" not in out
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if "actions that never fired" in line)
    row = lines[at + 1].split()
    assert row[0] == "seed-race"
    assert row[1:] == ["I.increment_refused"]


def test_a_cut_search_says_the_actions_may_fire_beyond_it(capsys):
    main(["run", SEED, "-q", "--max-states", "5"])
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.split()[:1] == ["seed-race"])
    assert "S.insert" in line  # not reached within 5 states
    assert line.endswith("(every search was cut by a limit: they may fire beyond it)")


# ---- the scenario's `unreached` key: what a case is not meant to reach ----


def declared(tmp_path: Path, key: str, name: str = "seed-race.toml") -> str:
    """seed-race with an `unreached` line before its tables."""
    text = (SCENARIOS / name).read_text()
    at = text.index("\n[")
    path = tmp_path / name
    path.write_text(text[:at] + "\n" + key + "\n" + text[at:])
    return str(path)


def test_an_action_declared_unreached_is_not_warned_about(tmp_path, capsys):
    """Under fixed alone, seed-race never refuses an increment (only buggy's early accept makes the
    IO thread's increment come too late): declared, it is no warning."""
    path = declared(tmp_path, 'unreached = ["I.increment_refused"]')
    assert main(["run", path, "-q", "--predicate", "fixed"]) == 0
    assert "warning: actions" not in capsys.readouterr().err


def test_a_declared_action_that_fires_is_reported_as_a_stale_declaration(tmp_path, capsys):
    path = declared(tmp_path, 'unreached = ["I.increment_refused", "S.insert"]')
    assert main(["run", path, "-q"]) == 0  # a warning, not a failure: the verdicts are what they are
    out, err = capsys.readouterr()
    assert "stale" not in out and "never fired" not in err
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if "declares unreached" in line)
    assert lines[at + 1].split()[:5] == ["seed-race", "I.increment_refused", "(fired),", "S.insert", "(fired)"]
    assert lines[at + 1].endswith(f"[{path}]")


def test_a_declared_action_the_configuration_cannot_take_is_stale_too(tmp_path, capsys):
    """One rank, nothing fails: the configuration has no failing load at all (possible_kinds)."""
    path = declared(tmp_path, 'unreached = ["I.load_failed"]')
    main(["run", path, "-q"])
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.split()[:1] == ["seed-race"])
    assert "I.load_failed (not an action of this configuration)" in line


def test_an_undeclared_action_that_never_fires_still_warns(tmp_path, capsys):
    path = declared(tmp_path, 'unreached = ["S.insert"]')  # declared: something else
    main(["run", path, "-q", "--predicate", "fixed"])
    err = capsys.readouterr().err
    at = err.splitlines().index(next(l for l in err.splitlines() if "actions that never fired" in l))
    assert err.splitlines()[at + 1].split() == ["seed-race", "I.increment_refused"]
    assert "S.insert (fired)" in err  # and the wrong declaration is said too


def test_a_matrix_case_is_chosen_by_its_values(tmp_path):
    """`[unreached]` keyed by matrix values: each case gets the actions of the selectors it matches."""
    from prefetch_check.scenario import load_scenario

    scenario = load_scenario(SCENARIOS / "ack-timeout.toml")
    by_label = {c.label: c.unreached for c in scenario.cases}
    assert by_label == {
        "cache=unified, deadline=issue": ("S.accept", "S.wait"),
        "cache=unified, deadline=admission": ("S.accept", "S.wait"),
        "cache=hiradix, deadline=issue": (),
        "cache=hiradix, deadline=admission": (),
    }
