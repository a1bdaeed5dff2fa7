"""The mutant catalogue: every mutant is caught by the property it should break, the unmutated
protocol by none, and an unexplained survivor is reported as a gap."""

from __future__ import annotations

import argparse

import pytest

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.model.protocols.poll.mutants import (
    BY_NAME,
    CATALOGUE,
    STAGED_CATALOGUE,
    STAGED_CONFIGS,
    DrainReleaseUnagreed,
    Mutant,
    TerminationMin,
)
from prefetch_check.model.protocols.poll.properties import NAMES
from models import readable
from prefetch_check.commands import mutants as command
from prefetch_check.mutation import (
    BUILTIN_CONFIGS,
    EQUIVALENT,
    GAP,
    KILLED,
    WRONG_EQUIVALENCE,
    NamedConfig,
    run_mutants,
)
from prefetch_check.scenario import InputError

KILLABLE = [m for m in CATALOGUE if not m.equivalent]


@pytest.fixture(scope="module")
def run():
    return run_mutants(BUILTIN_CONFIGS, CATALOGUE)


def test_catalogue_is_documented():
    assert len(KILLABLE) >= 10
    assert len(BY_NAME) == len(CATALOGUE) and set(STAGED_CATALOGUE) <= set(CATALOGUE)  # names are unique
    for m in CATALOGUE:
        assert m.name and m.description and m.upstream and m.touches
        assert m.equivalent or m.expected in NAMES


def test_unmutated_protocol_violates_nothing(run):
    for name, result in run.baseline.items():
        assert result.all_verified, (name, result.violated)


@pytest.mark.parametrize("mutant", KILLABLE, ids=lambda m: m.name)
def test_mutant_is_killed_by_its_expected_property(run, mutant):
    outcome = run.outcome(mutant.name)
    assert outcome.status == KILLED
    assert outcome.killed_by(mutant.expected), [(k.scenario, k.prop) for k in outcome.kills]


@pytest.mark.parametrize("mutant", KILLABLE, ids=lambda m: m.name)
def test_shortest_kill_goes_through_the_mutated_step_and_replays(run, mutant):
    best = run.outcome(mutant.name).best
    kinds = [step.action.kind for step in best.trace.steps]
    assert any(kind in mutant.touches for kind in kinds), kinds
    assert all(best.steps <= k.steps for k in run.outcome(mutant.name).kills)
    config = next(c.config for c in BUILTIN_CONFIGS if c.name == best.scenario)
    again = replay(readable(config, "fixed", protocol=mutant), best.trace.schedule)
    assert [s.state for s in again.steps] == [s.state for s in best.trace.steps]
    marked = [s.description for s in best.trace.steps if s.action.kind in mutant.touches]
    assert all(text.endswith(f"<- mutated ({mutant.name})") for text in marked)


@pytest.mark.parametrize("mutant", KILLABLE, ids=lambda m: m.name)
def test_unmutated_protocol_cannot_follow_a_safety_kill(run, mutant):
    """The kill is the mutation's doing: the unmutated protocol diverges from the schedule or ends fine."""
    for kill in run.outcome(mutant.name).kills:
        config = next(c.config for c in BUILTIN_CONFIGS if c.name == kill.scenario)
        original = readable(config, "fixed")
        prop = next(p for p in original.properties() if p.name == kill.prop)
        if prop.kind not in (ALWAYS, ALWAYS_STEP):
            continue
        try:
            trace = replay(original, kill.trace.schedule)
        except Divergence:
            continue
        if prop.kind == ALWAYS:
            assert prop.check(trace.final_state) is None
        else:
            before = trace.steps[-2].state if len(trace.steps) > 1 else trace.initial
            assert prop.check(before, trace.steps[-1].action, trace.final_state) is None


def test_rank_symmetry_does_not_change_what_kills_a_mutant(run):
    plain = run_mutants(BUILTIN_CONFIGS, CATALOGUE, reductions=False)
    for reduced, full in zip(run.outcomes, plain.outcomes):
        assert {(k.scenario, k.prop) for k in reduced.kills} == {(k.scenario, k.prop) for k in full.kills}
        assert (reduced.best and reduced.best.steps) == (full.best and full.best.steps)


class SameDrain(Mutant):
    """Changes the code, not the behaviour: drain frees the agreed count, computed another way."""

    name = "same_drain"
    touches = ("S.drain",)
    equivalent = "min(agreed, queue) is the agreed count: a rank never agrees on more than it has queued"

    def release_count(self, agreed, rank):
        return min(agreed, rank.release_queue)


def test_every_catalogue_mutant_is_killed(run):
    killed, killable = run.score
    assert (killed, killable) == (len(KILLABLE), len(KILLABLE)) == (len(CATALOGUE), len(CATALOGUE))
    assert run.complete


def test_explained_equivalent_mutant_survives():
    run = run_mutants(BUILTIN_CONFIGS, [SameDrain])
    assert run.outcome("same_drain").status == EQUIVALENT and not run.outcome("same_drain").kills
    assert run.score == (0, 0) and run.complete


def test_drain_release_unagreed_leaks_what_it_does_not_agree_on(run):
    """Judged on what drains actually free: a rank that frees its whole queue brings 0 to the next
    MIN, and the other rank's queued slots are never freed."""
    kill = run.outcome(DrainReleaseUnagreed.name).killed_by("host_memory")[0]
    assert "stay on host_mem_release_queue for good" in kill.reason


class UnexplainedSurvivor(SameDrain):
    name = "unexplained_survivor"
    equivalent = None


class WronglyClaimedEquivalent(TerminationMin):
    name = "wrongly_claimed_equivalent"
    equivalent = "MIN and MAX agree here (they do not)"


def test_unexplained_survivor_is_a_gap_and_a_refuted_claim_is_flagged():
    configs = [c for c in BUILTIN_CONFIGS if c.name == "two-ranks"]
    run = run_mutants(configs, [UnexplainedSurvivor, WronglyClaimedEquivalent])
    assert run.outcome("unexplained_survivor").status == GAP
    assert run.outcome("wrongly_claimed_equivalent").status == WRONG_EQUIVALENCE
    assert run.score == (1, 2) and not run.complete
    text = "\n".join(command.report_lines(run, traces=False))
    assert "unexplained_survivor: GAP" in text
    assert "the explanation is wrong" in text


def test_properties_the_unmutated_protocol_violates_do_not_count_as_kills():
    # per-rank allocation failure in the seed shape: the unmutated protocol already deadlocks
    config = uniform_config(ranks=2, requests=1, pages=2, shape="seed", alloc_may_fail=(True, False))
    run = run_mutants([NamedConfig("alloc-fails-seed", config)], [TerminationMin])
    already = set(run.baseline["alloc-fails-seed"].violated)
    assert already  # the premise of this test
    assert all(k.prop not in already for k in run.outcome(TerminationMin.name).kills)


def test_a_survivor_of_cut_searches_says_so():
    tiny = Limits(max_states=5)
    run = run_mutants([NamedConfig("two-ranks", uniform_config(ranks=2, requests=1, pages=2), tiny)], [TerminationMin])
    outcome = run.outcome(TerminationMin.name)
    assert outcome.status == GAP and outcome.bounded == ("two-ranks",)
    assert "within the search limits" in "\n".join(command.report_lines(run))


def test_pairs_are_accepted_as_scenarios():
    run = run_mutants([("tiny", uniform_config(ranks=1, requests=1, pages=1))], [BY_NAME["count_before_write"]])
    assert run.outcome("count_before_write").killed_by("data_integrity")


# ---- the command ----


def parse(*argv):
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_command_reports_kill_table_and_score(capsys):
    status = command.execute(parse("-q", "--mutant", "release_untruncated", "--mutant", "drain_release_unagreed"))
    out = capsys.readouterr().out
    assert status == 0
    assert "release_untruncated: KILLED by host_memory in partial-hits" in out
    assert "schedule: " in out and "<- mutated (release_untruncated)" in out
    assert "drain_release_unagreed: KILLED by host_memory" in out
    assert "mutation score: 2 of 2 killable mutants killed (100%)" in out


def test_command_markdown_and_list(capsys):
    assert command.execute(parse("--markdown", "--mutant", "termination_min")) == 0
    out = capsys.readouterr().out
    assert "| `termination_min` |" in out and "wait_complete_delivers" in out
    assert command.execute(parse("--list")) == 0
    listing = capsys.readouterr().out
    assert all(m.name in listing for m in CATALOGUE)


def test_command_refuses_an_unknown_mutant():
    with pytest.raises(InputError, match="did you mean 'termination_min'"):
        command.execute(parse("--mutant", "termination_mn"))


def test_mutant_base_marks_only_touched_steps():
    class Plain(Mutant):
        name = "plain"
        touches = ("S.insert",)

    model = readable(uniform_config(ranks=1, requests=1, pages=1), "fixed", protocol=Plain)
    state = model.initial_states()[0]
    action, nxt = model.successors(state)[0]
    assert action.kind == "S.issue"
    assert "mutated" not in model.describe(state, action, nxt)


# ---- the staged shapes' own catalogue (alloc_at = "hit") ----


@pytest.fixture(scope="module")
def staged_run():
    return run_mutants(STAGED_CONFIGS, STAGED_CATALOGUE)


def test_the_staged_catalogue_is_documented_and_runs_on_staged_configurations(staged_run):
    assert len(STAGED_CATALOGUE) >= 3
    for m in STAGED_CATALOGUE:
        assert m.name and m.description and m.upstream and m.touches and m.expected in NAMES
    assert all(c.alloc_at == "hit" for _, c in STAGED_CONFIGS)
    for name, result in staged_run.baseline.items():
        assert result.all_verified, (name, result.violated)


@pytest.mark.parametrize("mutant", STAGED_CATALOGUE, ids=lambda m: m.name)
def test_a_staged_mutant_is_killed_by_its_expected_property_through_its_step(staged_run, mutant):
    outcome = staged_run.outcome(mutant.name)
    assert outcome.status == KILLED and outcome.killed_by(mutant.expected)
    kinds = [step.action.kind for step in outcome.best.trace.steps]
    assert set(mutant.touches) & set(kinds)


def test_a_staged_mutant_changes_nothing_in_the_late2025_shape():
    """Its change is in steps only hit-time allocation takes: on the default shape it is the protocol."""
    run = run_mutants(BUILTIN_CONFIGS[:3], STAGED_CATALOGUE)
    assert all(o.status == GAP for o in run.outcomes)


def test_a_scenario_without_a_state_limit_gets_the_mutant_budget(tmp_path):
    """A mutant can turn a small search into millions of states: where neither the scenario nor
    a flag bounds the states, each search stops at the budget; a scenario's own limit and the flag win."""
    (tmp_path / "open.toml").write_text("ranks = 2\npages = 1\n")
    (tmp_path / "own.toml").write_text("ranks = 2\npages = 1\n[limits]\nmax_states = 1234\n")
    configs = {c.name: c.limits for c in command._configs(parse(str(tmp_path)), "predicate-poll")}
    assert configs["open"].max_states == command.MUTANT_STATE_BUDGET
    assert configs["own"].max_states == 1234
    flagged = {c.name: c.limits for c in command._configs(parse(str(tmp_path), "--max-states", "99"), "predicate-poll")}
    assert flagged["open"].max_states == flagged["own"].max_states == 99
