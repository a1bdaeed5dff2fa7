"""Shared helpers of the model and explorer tests (kept small on purpose).

`proto(config, predicate)` wraps one protocol instance with short ways to replay a
schedule and to look at what is enabled; `shortest_violation` is an independent
breadth-first search (no explorer code) that the shortest-counterexample tests
compare the explorer against.
"""

from __future__ import annotations

import functools

import os
from pathlib import Path
from collections import deque

import pytest

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP
from prefetch_check.explorer.replay import replay
from models import readable

# pytest-xdist hands each worker the controller's terminal width as COLUMNS; the commands read
# COLUMNS as the user's choice of width, so each worker drops it and sees what a serial run sees
# (off a terminal: the commands' fixed report width). A test that wants a width sets its own.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)


class Proto:
    """One protocol instance plus the few operations every test needs."""

    def __init__(self, config, predicate="fixed"):
        self.config = config
        self.model = readable(config, predicate)

    @property
    def initial(self):
        return self.model.initial_states()[0]

    def state(self, schedule: str = ""):
        """The state a schedule (action ids separated by spaces) leads to, replayed from the start."""
        return replay(self.model, schedule).final_state

    def enabled(self, state) -> list[str]:
        return [self.model.action_id(a) for a, _ in self.model.successors(state)]

    def step(self, state, action_id: str):
        """The state after one enabled action; fails the test if the action is not enabled."""
        for action, nxt in self.model.successors(state):
            if action.id == action_id:
                return nxt
        pytest.fail(f"{action_id} is not enabled; enabled: {self.enabled(state)}")

    def action(self, state, action_id: str):
        """(state, action, next state) of one enabled step, the arguments of a step property."""
        for action, nxt in self.model.successors(state):
            if action.id == action_id:
                return state, action, nxt
        pytest.fail(f"{action_id} is not enabled; enabled: {self.enabled(state)}")

    def prop(self, name: str):
        return next(p for p in self.model.properties() if p.name == name)


@pytest.fixture
def proto():
    return Proto


def shortest_violation_length(model, prop, max_depth: int) -> int | None:
    """Length of the shortest schedule ending in a violation of a safety property, by plain BFS."""
    start = model.initial_states()[0]
    if prop.kind == ALWAYS and prop.check(start):
        return 0
    seen = {start}
    frontier = deque([(start, 0)])
    while frontier:
        state, depth = frontier.popleft()
        if depth >= max_depth:
            continue
        for action, nxt in model.successors(state):
            if prop.kind == ALWAYS_STEP and prop.check(state, action, nxt):
                return depth + 1
            if prop.kind == ALWAYS and prop.check(nxt):
                return depth + 1
            if nxt not in seen:
                seen.add(nxt)
                frontier.append((nxt, depth + 1))
    return None


@pytest.fixture(scope="session")
def shortest_violation():
    return shortest_violation_length


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    """A `--cache-dir` every test of this pytest session shares, on every xdist worker: the
    executor's and the model's answers about an unmodified release are computed once a session,
    not once a test (the cache keys them by the tree's content, the cases and the checker's code,
    so sharing cannot mix answers). For tests that do not count what the cache answered."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "session-cache"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture
def fixture_trees_followed(monkeypatch):
    """Let the upstream-shaped fixture trees stand for the releases they are shaped after, so a test
    of shape detection and release mapping gets verdicts for them (sglang_fixtures.fixture_follows)."""
    from prefetch_check.sglang import followed
    from sglang_fixtures import fixture_follows

    follows = fixture_follows()
    monkeypatch.setattr(followed, "shipped", lambda: follows)
    return follows


def also_follow(monkeypatch, follows, label: str, srt, cache_class=None):
    """Let one more tree (its sglang/srt folder) stand for a release the model follows: for tests of
    what happens after the floor (an edited predicate's verdicts, footnotes), not of the floor."""
    from prefetch_check.sglang import followed
    from prefetch_check.sglang.locate import read_protocol_files

    more = follows.merged(followed.build([(label, read_protocol_files(srt), cache_class)]))
    monkeypatch.setattr(followed, "shipped", lambda: more)
    return more


RELEASE_CALLS = ("release_srt(", "fetch_release(")


@functools.lru_cache(maxsize=None)  # a parametrised test's items share one function: read it once
def _source(fn) -> str:
    import inspect

    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def _release_calls(module) -> tuple[str, ...]:
    """The calls that fetch a release in a test module: release_srt/fetch_release and, to a fixed
    point, the module's own functions that call one of them (a helper that builds an edited tree)."""
    import inspect

    calls = set(RELEASE_CALLS)
    helpers = {name: _source(fn) for name, fn in vars(module).items()
               if inspect.isfunction(fn) and getattr(fn, "__module__", None) == module.__name__}
    grown = True
    while grown:
        grown = False
        for name, source in helpers.items():
            if f"{name}(" not in calls and any(call in source for call in calls):
                calls.add(f"{name}(")
                grown = True
    return tuple(calls)


def _reads_a_release(item, calls: tuple[str, ...]) -> bool:
    """Whether a test, or a fixture it uses, fetches a real SGLang release: read off their source,
    so no test has to remember a mark."""
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        functions += [d.func for d in defs]
    return any(call in _source(fn) for fn in functions if fn is not None for call in calls)


def pytest_collection_modifyitems(config, items):
    """`release`: the tests that run or read a real release's code (skipped where it cannot be
    fetched); `-m "not release"` is the fast part of the suite (docs/testing.md)."""
    by_module: dict = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        if module.__name__ not in by_module:
            by_module[module.__name__] = _release_calls(module)
        if _reads_a_release(item, by_module[module.__name__]):
            item.add_marker(pytest.mark.release)
