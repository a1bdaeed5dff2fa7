"""Scenario files: every kind of bad input names file, line and the allowed values; good input becomes Configs."""

from __future__ import annotations

import textwrap

import pytest

from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, VERIFIED, VIOLATED
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.properties import NAMES
from prefetch_check.api import check
from prefetch_check.scenario import InputError, ScenarioError, load_scenario, load_scenarios, scenario_files


def write(tmp_path, text: str, name: str = "s.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def error_of(tmp_path, text: str) -> ScenarioError:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    return info.value


# ---- each kind of bad input ----


@pytest.mark.parametrize(
    "line, expected",
    [
        ('ranks = "two"', "ranks must be an integer in 1..16, got 'two'"),
        ("ranks = 0", "ranks must be an integer in 1..16, got 0"),
        ("ranks = true", "ranks must be an integer in 1..16, got true"),
        ("page_size = 0", "page_size must be an integer in 1..4096"),
        ("prefetch_threshold = -1", "prefetch_threshold must be an integer in 0.."),
        ("clamp_threshold = 1", "clamp_threshold must be true or false, got 1"),
        ('shape = "late"', 'shape must be one of "late2025", "seed"'),
    ],
)
def test_wrong_type_or_range_states_the_allowed_values(tmp_path, line, expected):
    err = error_of(tmp_path, f"requests = 1\n{line}\n")
    assert err.line == 2
    assert expected in err.message


# name -> (the file, the line the error must name or None, words the message must hold)
BAD_FILES = {
    "toml syntax error names line and column": ("ranks = 2\npages = = 2\n", 2, ["not valid TOML", "column"]),
    "unknown key suggests the closest name": (
        "pages = 2\nrank = 2\n", 2,
        ["unknown key 'rank'", "did you mean 'ranks'?"]),
    "unknown key far from any name lists the valid names": ("zzzz = 1\n", None, ["valid names:", "ranks"]),
    "misspelled choice suggests the closest": ('policy = "wait_completed"\n', None, ["did you mean 'wait_complete'?"]),
    "a list at top level points to the matrix": ("ranks = [1, 2]\n", None, ["[matrix]"]),
    "a list for a per rank value says per rank values are tables": (
        "ranks = 2\nhits = [2, 1]\n", 2,
        ["tables keyed by rank"]),
    "hits larger than pages": (
        "ranks = 2\npages = 2\nhits = { 1 = 3 }\n", 3,
        ["hits = 3 on rank 1 is larger than pages = 2"]),
    "failing page outside the request": (
        "ranks = 2\n\n[[request]]\npages = 1\n\n[[request]]\npages = 2\nfailing = { 1 = [2] }\n", 8,
        ["request 1: failing page 2 on rank 1 is outside the request (pages are 0..1)"]),
    "failing must name its rank": ("ranks = 2\nfailing = [1]\n", None, ["keyed by rank"]),
    "per rank table naming a rank that does not exist": (
        "ranks = 2\nalloc_may_fail = { 2 = true }\n", None,
        ["names rank 2, but ranks = 2 (ranks are numbered 0..1)"]),
    "predicate path that does not import": (
        'pages = 1\n\n[expect."no_such_pkg.mod:fn"]\nverifies = "all"\n', 3,
        ["cannot import module 'no_such_pkg.mod'"]),
    "unknown property in an expectation": ('[expect.fixed]\nverifies = ["progres"]\n', 2, ["did you mean 'progress'?"]),
    "a property expected two ways": (
        '[expect.fixed]\nviolates = ["progress"]\nnot_applicable = ["progress"]\n', None,
        ["listed under both violates and not_applicable"]),
    "why for an unknown property": (
        '[expect.fixed]\nverifies = "all"\nwhy.progess = "x"\n', 3,
        ["did you mean 'progress'?"]),
    "unknown key in a request table": ("[[request]]\npage = 2\n", 2, ["did you mean 'pages'?"]),
    "request tables exclude the top level shorthand": ("pages = 2\n[[request]]\npages = 1\n", 1, ["[[request]]"]),
    "matrix key set twice": ("ranks = 2\n[matrix]\nranks = [1, 2]\n", 3, ["both at the top level and in [matrix]"]),
    "matrix value out of range names its case": (
        "[matrix]\nranks = [1, 0]\n", 2,
        ["ranks must be an integer in 1..16, got 0", "matrix case ranks=0"]),
    "bad limit": ("[limits]\nmax_states = 0\n", 2, ["max_states must be an integer >= 1"]),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_file_names_the_line_and_says_what_is_wrong(tmp_path, name):
    text, line, words = BAD_FILES[name]
    err = error_of(tmp_path, text)
    if line is not None:
        assert err.line == line
    for w in words:
        assert w in err.message


# ---- good input ----


def test_defaults_are_the_python_api_defaults(tmp_path):
    scenario = load_scenario(write(tmp_path, "ranks = 1\n"))
    assert [c.config for c in scenario.cases] == [uniform_config(ranks=1, requests=1, pages=2)]
    assert scenario.name == "s"


def test_per_rank_tables_and_request_tables(tmp_path):
    scenario = load_scenario(write(tmp_path, """
        ranks = 2
        alloc_may_fail = { 1 = true }

        [[request]]
        pages = 2
        hits = { 0 = 1 }

        [[request]]
        pages = 3
        failing = { 1 = [0, 2] }
        """))
    (case,) = scenario.cases
    assert case.config == Config(
        ranks=2,
        requests=(
            RequestSpec(pages=2, hits=(1, 2), failing=(frozenset(), frozenset())),
            RequestSpec(pages=3, hits=(3, 3), failing=(frozenset(), frozenset({0, 2}))),
        ),
        alloc_may_fail=(False, True),
    )


def test_matrix_makes_one_case_per_combination_in_written_order(tmp_path):
    scenario = load_scenario(write(tmp_path, """
        name = "sweep"
        pages = 1
        [matrix]
        ranks = [1, 2]
        policy = ["wait_complete", "timeout"]
        """))
    assert [c.name for c in scenario.cases] == [
        "sweep[ranks=1, policy=wait_complete]",
        "sweep[ranks=1, policy=timeout]",
        "sweep[ranks=2, policy=wait_complete]",
        "sweep[ranks=2, policy=timeout]",
    ]
    assert [(c.config.ranks, c.config.policy) for c in scenario.cases] == [
        (1, "wait_complete"), (1, "timeout"), (2, "wait_complete"), (2, "timeout"),
    ]


def test_matrix_can_sweep_a_per_rank_value(tmp_path):
    scenario = load_scenario(write(tmp_path, "ranks = 2\n[matrix]\nhits = [2, { 1 = 0 }]\n"))
    assert [c.config.requests[0].hits for c in scenario.cases] == [(2, 2), (2, 0)]


def test_expectations_judge_a_real_result(tmp_path):
    scenario = load_scenario(write(tmp_path, """
        pages = 2
        [expect.buggy]
        violates = ["no_early_acceptance"]
        verifies = "all"
        why.no_early_acceptance = "0 == 0 before publish"
        why.all = "rest"
        """))
    expect = scenario.expectation("buggy")
    assert [p for p, _ in expect.verdicts] == list(NAMES)
    result = check(scenario.cases[0].config, "buggy")
    judged = {e.prop: e for e in expect.judge(result)}
    assert judged["no_early_acceptance"].holds and judged["no_early_acceptance"].why == "0 == 0 before publish"
    # buggy also violates wait_complete_delivers, which this file (wrongly) says verifies
    assert judged["wait_complete_delivers"].expected == VERIFIED
    assert judged["wait_complete_delivers"].actual == VIOLATED and not judged["wait_complete_delivers"].holds
    assert judged["progress"].why == "rest"


def test_a_bounded_search_never_satisfies_verifies(tmp_path):
    scenario = load_scenario(write(tmp_path, '[limits]\nmax_states = 5\n[expect.fixed]\nverifies = ["host_memory"]\n'))
    limits = scenario.limits_for("fixed")
    assert limits == Limits(max_states=5)
    (judged,) = scenario.expectation("fixed").judge(check(scenario.cases[0].config, "fixed", limits))
    assert judged.actual == BOUNDED and not judged.holds


def test_limits_scenario_then_predicate_then_command_line(tmp_path):
    scenario = load_scenario(write(tmp_path, "[limits]\nmax_states = 100\nmax_depth = 9\n[limits.buggy]\nmax_states = 10\n"))
    assert scenario.limits_for("fixed") == Limits(max_states=100, max_depth=9)
    assert scenario.limits_for("buggy") == Limits(max_states=10, max_depth=9)
    assert scenario.limits_for("buggy", {"max_states": 7, "max_depth": None}) == Limits(max_states=7, max_depth=9)


# ---- folders and several files ----


def test_folders_are_searched_in_sorted_order(tmp_path):
    write(tmp_path, "pages = 1\n", "b.toml")
    write(tmp_path, "pages = 1\n", "a.toml")
    (tmp_path / "notes.txt").write_text("not a scenario")
    assert [p.name for p in scenario_files([tmp_path])] == ["a.toml", "b.toml"]


def test_every_bad_file_is_reported_before_anything_runs(tmp_path):
    write(tmp_path, "rank = 1\n", "a.toml")
    write(tmp_path, "pages = 1\n", "b.toml")
    write(tmp_path, "pages = 0\n", "c.toml")
    with pytest.raises(InputError) as info:
        load_scenarios([tmp_path])
    text = str(info.value)
    assert "a.toml, line 1: unknown key 'rank'" in text and "c.toml, line 1: pages must be" in text
    assert "b.toml" not in text


def test_duplicate_scenario_names(tmp_path):
    write(tmp_path, 'name = "x"\n', "a.toml")
    write(tmp_path, 'name = "x"\n', "b.toml")
    with pytest.raises(InputError, match="already used"):
        load_scenarios([tmp_path])


def test_missing_path(tmp_path):
    with pytest.raises(InputError, match="no such scenario file or folder"):
        scenario_files([tmp_path / "nope"])
