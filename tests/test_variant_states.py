"""A variant that adds a scheduler state of its own (as a fix that adds an agreement step would):
`trace` and `run --traces-dir` show it, by the name the variant declares or as its raw value,
instead of dying on a KeyError (issue 20)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cli_helpers import run, write_scenario

SCENARIOS = Path(__file__).parent.parent / "scenarios"

MODULE = "pausing_variants"
VARIANTS = '''
"""Variants whose scheduler pauses at a state of its own before each drain."""
from prefetch_check.model.interface import Step, formats
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from prefetch_check.model.protocols.ack_drain.state import S_ROUND
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.model.protocols.poll.state import S_DRAIN

S_PAUSED = 9  # a scheduler state neither built-in protocol has


class PauseBeforeDrain(PollProtocol):
    """The scheduler stops at a new state before it arrives in the drain's all_reduce (no name declared)."""

    def scheduler_steps(self, r, rank):
        if rank.s_pc[0] == S_DRAIN:
            return [Step("S", "pause", -1, rank._replace(s_pc=(S_PAUSED, 0)))]
        if rank.s_pc[0] == S_PAUSED:
            return self.s_drain_arrive(r, rank)
        return super().scheduler_steps(r, rank)

    @formats("S.pause")
    def format_pause(self, before, after, a):
        return "pause before the drain"


class NamedPause(PauseBeforeDrain):
    """The same, with the state's name declared."""

    scheduler_states = {**PollProtocol.scheduler_states, S_PAUSED: "paused before the drain"}


class AckPause(AckDrainProtocol):
    """The ack-drain scheduler stops at a new state at the top of each round (no name declared)."""

    def scheduler_steps(self, r, rank):
        if rank.s_pc[0] == S_ROUND:
            return [Step("S", "pause", -1, rank._replace(s_pc=(S_PAUSED, 0, 0)))]
        if rank.s_pc[0] == S_PAUSED:
            return self.s_round(r, rank)
        return super().scheduler_steps(r, rank)

    @formats("S.pause")
    def format_pause(self, before, after, a):
        return "pause at the top of the round"
'''

RAW = f"s_pc=(9, 0"  # the raw value of the undeclared state (ack-drain's has a third element)


@pytest.fixture
def variants(tmp_path, monkeypatch):
    """The variants' module, importable as `pausing_variants` (a fresh import per test)."""
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(VARIANTS), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, MODULE, raising=False)
    return tmp_path


def test_trace_shows_an_undeclared_state_by_its_raw_value(variants, capsys):
    code, out, err = run(capsys, "trace", SCENARIOS / "seed-race.toml", "--protocol", f"{MODULE}:PauseBeforeDrain",
                         "--property", "no_early_acceptance", "-q")
    assert code == 0, err
    assert "S0.pause" in out  # the counterexample goes through the new state
    assert f"drain (round start) → {RAW})" in out
    assert "Traceback" not in err


def test_trace_shows_the_name_a_variant_declares(variants, capsys):
    code, out, err = run(capsys, "trace", SCENARIOS / "seed-race.toml", "--protocol", f"{MODULE}:NamedPause",
                         "--property", "no_early_acceptance", "-q")
    assert code == 0, err
    assert "drain (round start) → paused before the drain" in out
    assert "s_pc=" not in out


def test_an_ack_drain_variants_state_is_shown_too(variants, capsys):
    code, out, err = run(capsys, "trace", SCENARIOS / "ack-race.toml", "--protocol", f"{MODULE}:AckPause",
                         "--property", "no_early_acceptance", "-q")
    assert code == 0, err
    assert "S0.pause" in out and RAW in out


def test_run_writes_the_variants_counterexample_page(variants, capsys, tmp_path):
    scenario = write_scenario(tmp_path, f"""
        protocol = "{MODULE}:NamedPause"
        ranks = 1
        pages = 1
    """, name="paused.toml")  # no expectations: every violation is unexpected, so each gets a page
    pages = tmp_path / "pages"
    code, out, err = run(capsys, "run", scenario, "--predicate", "buggy", "--traces-dir", pages, "-q")
    assert code == 0, err
    page = pages / "paused.buggy.no_early_acceptance.html"
    assert page.exists(), sorted(p.name for p in pages.iterdir())
    assert "paused before the drain" in page.read_text(encoding="utf-8")
