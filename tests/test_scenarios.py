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


def test_toml_syntax_error_names_line_and_column(tmp_path):
    err = error_of(tmp_path, "ranks = 2\npages = = 2\n")
    assert err.line == 2
    assert "not valid TOML" in err.message and "column" in err.message


def test_unknown_key_suggests_the_closest_name(tmp_path):
    err = error_of(tmp_path, "pages = 2\nrank = 2\n")
    assert err.line == 2
    assert "unknown key 'rank'" in err.message and "did you mean 'ranks'?" in err.message


def test_unknown_key_far_from_any_name_lists_the_valid_names(tmp_path):
    err = error_of(tmp_path, "zzzz = 1\n")
    assert "valid names:" in err.message and "ranks" in err.message


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


def test_misspelled_choice_suggests_the_closest(tmp_path):
    err = error_of(tmp_path, 'policy = "wait_completed"\n')
    assert "did you mean 'wait_complete'?" in err.message


def test_a_list_at_top_level_points_to_the_matrix(tmp_path):
    err = error_of(tmp_path, "ranks = [1, 2]\n")
    assert "[matrix]" in err.message


def test_a_list_for_a_per_rank_value_says_per_rank_values_are_tables(tmp_path):
    err = error_of(tmp_path, "ranks = 2\nhits = [2, 1]\n")
    assert "tables keyed by rank" in err.message and err.line == 2


def test_hits_larger_than_pages(tmp_path):
    err = error_of(tmp_path, "ranks = 2\npages = 2\nhits = { 1 = 3 }\n")
    assert err.line == 3
    assert "hits = 3 on rank 1 is larger than pages = 2" in err.message


def test_failing_page_outside_the_request(tmp_path):
    err = error_of(tmp_path, "ranks = 2\n\n[[request]]\npages = 1\n\n[[request]]\npages = 2\nfailing = { 1 = [2] }\n")
    assert err.line == 8
    assert "request 1: failing page 2 on rank 1 is outside the request (pages are 0..1)" in err.message


def test_failing_must_name_its_rank(tmp_path):
    err = error_of(tmp_path, "ranks = 2\nfailing = [1]\n")
    assert "keyed by rank" in err.message


def test_per_rank_table_naming_a_rank_that_does_not_exist(tmp_path):
    err = error_of(tmp_path, "ranks = 2\nalloc_may_fail = { 2 = true }\n")
    assert "names rank 2, but ranks = 2 (ranks are numbered 0..1)" in err.message


def test_predicate_path_that_does_not_import(tmp_path):
    err = error_of(tmp_path, 'pages = 1\n\n[expect."no_such_pkg.mod:fn"]\nverifies = "all"\n')
    assert err.line == 3
    assert "cannot import module 'no_such_pkg.mod'" in err.message


def test_unknown_property_in_an_expectation(tmp_path):
    err = error_of(tmp_path, '[expect.fixed]\nverifies = ["progres"]\n')
    assert err.line == 2 and "did you mean 'progress'?" in err.message


def test_a_property_expected_two_ways(tmp_path):
    err = error_of(tmp_path, '[expect.fixed]\nviolates = ["progress"]\nnot_applicable = ["progress"]\n')
    assert "listed under both violates and not_applicable" in err.message


def test_why_for_an_unknown_property(tmp_path):
    err = error_of(tmp_path, '[expect.fixed]\nverifies = "all"\nwhy.progess = "x"\n')
    assert err.line == 3 and "did you mean 'progress'?" in err.message


def test_unknown_key_in_a_request_table(tmp_path):
    err = error_of(tmp_path, "[[request]]\npage = 2\n")
    assert err.line == 2 and "did you mean 'pages'?" in err.message


def test_request_tables_exclude_the_top_level_shorthand(tmp_path):
    err = error_of(tmp_path, "pages = 2\n[[request]]\npages = 1\n")
    assert err.line == 1 and "[[request]]" in err.message


def test_matrix_key_set_twice(tmp_path):
    err = error_of(tmp_path, "ranks = 2\n[matrix]\nranks = [1, 2]\n")
    assert err.line == 3 and "both at the top level and in [matrix]" in err.message


def test_matrix_value_out_of_range_names_its_case(tmp_path):
    err = error_of(tmp_path, "[matrix]\nranks = [1, 0]\n")
    assert err.line == 2
    assert "ranks must be an integer in 1..16, got 0" in err.message and "matrix case ranks=0" in err.message


def test_bad_limit(tmp_path):
    err = error_of(tmp_path, "[limits]\nmax_states = 0\n")
    assert err.line == 2 and "max_states must be an integer >= 1" in err.message


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
