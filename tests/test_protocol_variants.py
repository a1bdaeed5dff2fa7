"""A user's protocol variant, checked through the supported routes: --protocol, a scenario's
`protocol` key, and `check(..., protocol=...)`; reductions only where the harness vouches for them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prefetch_check import check, uniform_config
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.engine.vouch import choose
from prefetch_check.model.protocols.poll.protocol import PollProtocol

SCENARIOS = Path(__file__).parent.parent / "scenarios"

VARIANT = '''
"""A change about to be merged: the IO thread no longer marks an operation terminated after a short batch."""
from prefetch_check.model.protocols.poll.protocol import PollProtocol


class NoMarkAfterShortBatch(PollProtocol):
    @property
    def short_batch_terminates(self) -> bool:
        return False
'''


@pytest.fixture
def user_folder(tmp_path):
    """A folder outside the repository holding a variant, as a user would write it."""
    (tmp_path / "my_variant.py").write_text(VARIANT)
    return tmp_path


def cli(folder, *argv):
    env = {**os.environ, "PYTHONPATH": ""}
    return subprocess.run([sys.executable, "-m", "prefetch_check", *argv], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_variant_from_the_command_line_is_caught_with_vouched_reductions(user_folder):
    out = cli(user_folder, "run", str(SCENARIOS / "failing-page-one-rank.toml"), "--predicate", "fixed",
              "--protocol", "my_variant:NoMarkAfterShortBatch", "--json", "report.json", "-q")
    assert out.returncode == 1, out.stderr  # the scenario expects progress VERIFIED: the variant hangs
    report = json.loads((user_folder / "report.json").read_text())
    (run,) = report["runs"]
    assert run["parameters"]["protocol"] == "my_variant:NoMarkAfterShortBatch"
    assert {p["name"]: p["verdict"] for p in run["properties"]}["progress"] == VIOLATED
    assert run["stats"]["reductions"].startswith("full: vouched for this variant by the soundness harness")
    assert "reductions for my_variant:NoMarkAfterShortBatch: full: vouched" in out.stderr
    assert "--protocol my_variant:NoMarkAfterShortBatch" in out.stdout  # the hint reproduces the run


def test_a_scenario_names_its_protocol(user_folder):
    text = (SCENARIOS / "failing-page-one-rank.toml").read_text()
    (user_folder / "variant.toml").write_text('protocol = "my_variant:NoMarkAfterShortBatch"\n' + text)
    out = cli(user_folder, "run", "variant.toml", "--predicate", "fixed", "--json", "-", "-q")
    run = json.loads(out.stdout)["runs"][0]
    assert run["parameters"]["protocol"] == "my_variant:NoMarkAfterShortBatch"
    assert {p["name"]: p["verdict"] for p in run["properties"]}["progress"] == VIOLATED
    trace = cli(user_folder, "trace", "variant.toml", "--predicate", "fixed", "--property", "progress", "--format", "json")
    assert trace.returncode == 0 and '"schedule"' in trace.stdout
    assert "reductions for my_variant:NoMarkAfterShortBatch: full: vouched" in trace.stderr


WATCHED = '''
"""A variant that counts a page before writing it, with a property that sees the window at the check."""
from prefetch_check.model.interface import step_invariant
from prefetch_check.model.protocols.poll.protocol import PollProtocol


def counted_is_written(rank, action):
    op = rank.ops[action.q]
    return None if op.completed <= op.written else f"{op.completed} page(s) counted, {op.written} written"


class CountFirstWatched(PollProtocol):
    property_names = PollProtocol.property_names + ("counted_is_written",)

    def write_then_count(self) -> bool:
        return False

    def properties(self):
        return super().properties() + [step_invariant(
            "counted_is_written", counted_is_written, "a check never sees a counted page that is not written",
            concerns=lambda action: action.kind == "S.check")]
'''


def test_a_scenario_may_expect_a_property_its_variant_adds(tmp_path):
    (tmp_path / "watched.py").write_text(WATCHED)
    (tmp_path / "watched.toml").write_text(
        'protocol = "watched:CountFirstWatched"\nranks = 1\npages = 2\n\n'
        '[expect.fixed]\nviolates = ["counted_is_written", "data_integrity"]\nverifies = "all"\n'
    )
    out = cli(tmp_path, "run", "watched.toml", "--predicate", "fixed", "--json", "-", "-q")
    assert out.returncode == 0, out.stderr
    (run,) = json.loads(out.stdout)["runs"]
    judged = {p["name"]: (p["verdict"], p["holds"]) for p in run["properties"]}
    assert judged["counted_is_written"] == (VIOLATED, True)
    assert judged["progress"] == (VERIFIED, True)
    typo = tmp_path / "typo.toml"
    typo.write_text('protocol = "watched:CountFirstWatched"\n[expect.fixed]\nviolates = ["counted_is_writen"]\n')
    bad = cli(tmp_path, "run", "typo.toml", "--predicate", "fixed")
    assert bad.returncode == 2 and "counted_is_writen" in bad.stderr and "Traceback" not in bad.stderr


def test_a_bad_protocol_key_is_bad_input_with_file_and_line(tmp_path):
    (tmp_path / "bad.toml").write_text('ranks = 1\nprotocol = "nosuch:Thing"\n')
    out = cli(tmp_path, "run", "bad.toml")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "bad.toml" in out.stderr and "line 2" in out.stderr and "nosuch" in out.stderr


def test_the_mutants_command_runs_a_variant_like_a_mutant(user_folder):
    out = cli(user_folder, "mutants", "--protocol", "my_variant:NoMarkAfterShortBatch", "--no-traces", "-q")
    assert out.returncode == 0, out.stderr
    assert "my_variant:NoMarkAfterShortBatch" in out.stdout and "killed" in out.stdout and "progress" in out.stdout
    assert all(line.strip() != "upstream:" for line in out.stdout.splitlines())  # a variant names no upstream change


class ClaimsTooMuch(PollProtocol):
    """A variant that declares the prefetch thread's take and publish persistent sets on their own:
    they are not (publish does not commute with the scheduler's check), so the partial-order
    reduction would always publish first and hide the race."""

    solo_steps = {**PollProtocol.solo_steps, "P.take": -2, "P.publish": -1}


def test_the_harness_refuses_reductions_that_change_a_verdict():
    config = uniform_config(ranks=1, pages=2)
    chosen = choose(ClaimsTooMuch, "buggy", config, True)
    assert chosen.level == "off" and "change a verdict" in chosen.note
    result = check(config, "buggy", protocol=ClaimsTooMuch)
    assert result.stats.reductions == chosen.note
    assert result.verdict("no_early_acceptance") == VIOLATED  # the plain search finds the race


class TakeAlone(PollProtocol):
    """A variant that takes the prefetch thread's take alone even with hit-time allocation, where
    the take reads `terminated`: no verdict changes, but the revoke after an early terminate is
    never reached, so the reductions would hide a step."""

    def solo_priority(self, rank, action):
        if action.kind == "P.take":
            return 5
        return super().solo_priority(rank, action)


def test_the_harness_refuses_reductions_that_hide_a_step():
    from prefetch_check.model.engine.vouch import compare
    from prefetch_check.model.protocols.poll.releases import options

    config = uniform_config(ranks=2, pages=2, **options("staged"))
    assert compare(TakeAlone, config, "buggy") == (
        "hide a step", "P.revoke: taken by the plain search, never with the reductions")
    assert compare(PollProtocol, config, "buggy") is None  # the built-in protocol does not take it alone
    chosen = choose(TakeAlone, "buggy", config, True)
    assert chosen.level == "off" and "hide a step of this variant (P.revoke" in chosen.note


def test_builtin_protocols_are_vouched_by_the_test_suite_and_subclasses_are_not():
    assert choose(PollProtocol, "fixed", uniform_config(), True).note.startswith("full: vouched for this protocol")

    class Same(PollProtocol):
        pass

    assert "vouched for this variant" in choose(Same, "fixed", uniform_config(ranks=2), True).note
    result = check(uniform_config(ranks=2, pages=2), "fixed", protocol=Same)
    assert result.all_verified and result.verdict("progress") == VERIFIED


@pytest.mark.parametrize("argv", [
    ("run", str(SCENARIOS / "ack-race.toml"), "--protocol", "predicate-poll", "-q"),
    ("trace", str(SCENARIOS / "ack-race.toml"), "--protocol", "my_variant:NoMarkAfterShortBatch", "-q"),
    ("replay", str(SCENARIOS / "seed-race.toml"), "S0.issue.q0", "--protocol", "ack-drain"),
])
def test_protocol_of_another_family_than_the_scenarios_is_bad_input(user_folder, argv):
    out = cli(user_folder, *argv)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "is a scenario of the" in out.stderr and "cannot replace its protocol key" in out.stderr


def test_protocol_without_a_property_the_scenario_expects_is_bad_input(tmp_path):
    (tmp_path / "watched.py").write_text(WATCHED)
    (tmp_path / "watched.toml").write_text(
        'protocol = "watched:CountFirstWatched"\nranks = 1\n[expect.fixed]\nviolates = ["counted_is_written"]\n'
    )
    out = cli(tmp_path, "run", "watched.toml", "--predicate", "fixed", "--protocol", "predicate-poll", "-q")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'counted_is_written'" in out.stderr and "does not have" in out.stderr
