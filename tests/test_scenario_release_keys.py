"""Scenario keys of the release shapes: `release` sets a family's options, keys beside it win,
`alloc_pages` is per request and rank, and combinations no release has are refused at the key."""

from __future__ import annotations

import pytest

from prefetch_check.model.protocols.poll.releases import options
from prefetch_check.scenario import ScenarioError, load_scenario
from prefetch_check.scenario.schema import PARAMETERS, POLL_SHAPE, REQUEST_KEYS
from test_scenarios import error_of, write


def config_of(tmp_path, text):
    (case,) = load_scenario(write(tmp_path, text)).cases
    return case.config


@pytest.mark.parametrize("family", ["seed", "seed-guarded", "late2025-tail-twice", "late2025", "staged", "staged-drain-threshold"])
def test_release_sets_the_family_options(tmp_path, family):
    config = config_of(tmp_path, f'release = "{family}"\n')
    for key, value in options(family).items():
        assert getattr(config, key) == value


def test_a_key_beside_release_wins(tmp_path):
    # counting a whole batch needs counting first: both keys go (count_whole_batch alone is a ShapeError)
    config = config_of(tmp_path, 'release = "seed"\ncount_before_write = false\ncount_whole_batch = false\n')
    assert config.shape == "seed" and config.direct_release and not config.count_before_write


def test_release_in_a_matrix_gives_one_case_per_family(tmp_path):
    scenario = load_scenario(write(tmp_path, 'pages = 1\n[matrix]\nrelease = ["seed", "staged"]\n'))
    assert [c.label for c in scenario.cases] == ["release=seed", "release=staged"]
    assert [c.config.alloc_at for c in scenario.cases] == ["issue", "hit"]


def test_alloc_pages_per_request_and_rank(tmp_path):
    config = config_of(tmp_path, """
        ranks = 2
        release = "staged"
        alloc_deterministic = false

        [[request]]
        pages = 2
        alloc_pages = { 1 = 0 }

        [[request]]
        pages = 3
        alloc_pages = 1
    """)
    assert [q.alloc_pages for q in config.requests] == [(2, 0), (1, 1)]


@pytest.mark.parametrize(
    "text, line, words",
    [
        ('ranks = 2\npages = 2\nrelease = "staged"\nalloc_pages = { 1 = 0 }\n', 4, "set alloc_deterministic = false"),
        ('threshold_test = "drain"\n', 1, 'needs alloc_at = "hit"'),
        ('release = "staged"\nalloc_may_fail = true\n', 2, "alloc_pages, per request and rank"),
        ('pages = 2\nalloc_pages = 1\n', 2, 'alloc_pages is the hit-time allocation'),
        ('release = "staged"\npages = 2\nalloc_pages = 3\n', 3, "alloc_pages = 3 is larger than pages = 2"),
        ('release = "unified"\n', 1, 'release must be one of "seed"'),
        ('tail_releases = 3\n', 1, "tail_releases must be an integer in 1..2"),
        ('completed_min = "never"\n', 1, 'completed_min must be one of "always", "except_wait_complete"'),
        ('alloc_at = "drain"\n', 1, 'alloc_at must be one of "issue", "hit"'),
    ],
)
def test_a_shape_combination_no_release_has_points_at_its_key(tmp_path, text, line, words):
    err = error_of(tmp_path, text)
    assert err.line == line and words in err.message


def test_a_per_request_conflict_points_into_its_request_table(tmp_path):
    err = error_of(tmp_path, 'ranks = 2\nrelease = "staged"\n[[request]]\npages = 2\n[[request]]\npages = 2\nalloc_pages = { 0 = 1 }\n')
    assert err.line == 7 and "request 1" in err.message


def test_the_shape_keys_are_one_movable_list():
    names = [p.name for p in POLL_SHAPE]
    assert names[:2] == ["release", "shape"]
    assert set(names[1:]) == set(options("seed")) | {"tail_releases", "alloc_at", "threshold_test", "alloc_deterministic"}
    assert all(PARAMETERS[n] is p for n, p in zip(names, POLL_SHAPE))
    assert "alloc_pages" in REQUEST_KEYS


def test_a_bad_shape_is_exit_status_2_and_one_paragraph(tmp_path, capsys):
    from prefetch_check.cli import main

    path = write(tmp_path, 'threshold_test = "drain"\n')
    assert main(["run", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{path}, line 1" in err
    with pytest.raises(ScenarioError):
        load_scenario(path)
