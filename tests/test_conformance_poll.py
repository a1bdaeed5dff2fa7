"""The conformance check of the predicate-poll protocol (model/protocols/poll/refinement.py, the one
replay loop of model/code/conformance/check.py, model/code/worlds/predicate_poll/conformance_configs.py): model schedules replayed
on a 0.5.1-0.5.18 release's own HiRadixCache and HiCacheController in the executor's poll world, in
both directions: an unmodified release conforms under the options its source settles; a poll model
mutant (poll/mutants.py) diverges on it at the step it changes.

On the real cached releases (skipped where the index is unreachable and they are not cached); the
tree's code runs only in the executor's child.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.model.code.worlds.predicate_poll import conformance_configs as conformance_poll
from prefetch_check.model.code.conformance.check import conformance_kit, reachable_schedules
from prefetch_check.model.code.worlds.predicate_poll.conformance_configs import (BUDGETS, Budget, budget_config, config_from_json, config_to_json,
                                                        unsupported)
from prefetch_check.model.code.runner import conform
from prefetch_check.model.engine.readable import ReadableModel
from prefetch_check.model.protocols.poll import refinement
from prefetch_check.model.protocols.poll.config import RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.sglang import conformance_checks
from prefetch_check.sglang.mappings.predicate_poll import options as poll_options
from pack_helpers import cases, use_budgets, use_cases
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.families import classify
from prefetch_check.sglang.protocols import release_protocol
from prefetch_check.sglang.tree_shape import tree_shape
from test_sglang_release import release_srt


def options_of(srt) -> dict:
    """The poll options the release's own source settles (as `prefetch-check sglang` computes them)."""
    shape = tree_shape(read_protocol_files(srt)).shape
    release = release_protocol(shape, classify(shape))
    assert release.protocol == "predicate-poll" and release.modelled, release.not_modelled
    return release.options


E = frozenset()
PREDICATE = "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"  # the release's own, read from source


def item(name, cfg, budget, cover="near", near=None, mutant=""):
    return {"name": name, "config": config_to_json(cfg), "budget": budget, "near": near or budget, "cover": cover,
            "mutant": mutant, "counterexamples": True, "protocol": "predicate-poll", "predicate": PREDICATE}


# ---- the mapping and the budget (no tree)


def test_the_poll_model_view_names_every_thread_queue_operation_and_request():
    protocol = PollProtocol(uniform_config(ranks=2, pages=2), "fixed")
    model = ReadableModel(protocol)
    start = model.initial_states()[0]
    view = refinement.model_view(protocol, start)
    assert view["r0.S"] == ("issue", 0) and view["r1.P"] == -1 and view["r0.IO"] == -1
    assert view["r1.S.coll"] is None and view["r0.q0.ongoing"] is False and view["r0.q0.ready"] is False
    assert view["r0.prefetch_revoke_queue"] == () and "r0.prefetch_hit_queue" not in view  # alloc at issue
    assert not any(k.startswith("r0.#") for k in view)  # no operation issued yet
    issued = next(s for a, s in model.successors(start) if a.id == "S0.issue.q0")
    view = refinement.model_view(protocol, issued)
    assert view["r0.prefetch_queue"] == (0,) and view["r0.#0.slots"] == "HH" and view["r0.q0.ongoing"] is True
    staged = PollProtocol(uniform_config(ranks=1, pages=2, alloc_at="hit"), "fixed")
    view = refinement.model_view(staged, next(s for a, s in ReadableModel(staged).successors(
        ReadableModel(staged).initial_states()[0]) if a.id == "S0.issue.q0"))
    assert view["r0.#0.slots"] is None and view["r0.prefetch_hit_queue"] == ()  # host slots come at the drain


def test_the_poll_budget_says_what_the_world_cannot_build_and_travels_as_json():
    assert "clock" in unsupported(uniform_config(ranks=1, policy="timeout"))
    assert "alloc_may_fail" in unsupported(uniform_config(ranks=2, alloc_may_fail=(True, False)))
    assert "seed" in unsupported(uniform_config(ranks=2, shape="seed"))
    assert unsupported(uniform_config(ranks=1, shape="seed")) == ""
    whole = dict(count_before_write=True, count_whole_batch=True)
    assert "batch counted whole" in unsupported(uniform_config(ranks=1, pages=2, failing={0: {1}}, **whole))
    assert unsupported(uniform_config(ranks=1, pages=2, failing={0: {1}}, storage_batch_size=1, **whole)) == ""
    for b in BUDGETS:
        cfg = budget_config(b, {"alloc_at": "hit"})
        assert config_from_json(config_to_json(cfg)) == cfg
    model = ReadableModel(PollProtocol(uniform_config(ranks=1, pages=2), "fixed"))
    paths, seen, views = reachable_schedules(model, 10_000, "local", None, conformance_kit("predicate-poll"))
    assert paths and views > 1 and 10 < seen < 10_000  # the whole state space, within the budget


def test_a_poll_tree_is_planned_with_the_poll_budget(tmp_path):
    srt = release_srt("0.5.18")
    check = conformance_checks.plan_conformance(srt, options_of(srt), [], "predicate-poll")
    assert check.protocol == "predicate-poll" and all(i["protocol"] == "predicate-poll" for i in check.items)
    assert all(i["predicate"] == "" for i in check.items)  # none given: the fixed one
    assert [i["name"] for i in check.items] == [b.name for b in BUDGETS]
    seed = release_srt("0.5.1.post3")
    check = conformance_checks.plan_conformance(seed, options_of(seed), [], "predicate-poll")
    assert {n for n, _ in check.skipped} == {b.name for b in BUDGETS if budget_config(b, {}).ranks == 2}


# ---- the release options that make a release conform


@pytest.mark.parametrize("version, whole", [("0.5.1", True), ("0.5.1.post2", True), ("0.5.1.post3", False), ("0.5.10", False)])
def test_the_batch_count_is_read_off_the_release_tree(version, whole):
    """0.5.1-0.5.1.post2 count a whole batch (`increment(self.page_size * len(page_hashes))`, then a
    loop of writes); 0.5.1.post3 counts page by page, 0.5.2 on write first."""
    srt = release_srt(version)
    shape = tree_shape(read_protocol_files(srt)).shape
    assert (shape.write_order.value == "count-batch-then-write") is whole
    assert options_of(srt).get("count_whole_batch", False) is whole
    if whole:
        assert [f"{e.file}:{e.line}" for e in shape.write_order.evidence] == [
            "managers/cache_controller.py:608", "managers/cache_controller.py:610"]


@pytest.mark.parametrize("version, rounds", [("0.5.1", 1), ("0.5.12", 0), ("0.5.13", 1), ("0.5.14", 2), ("0.5.16", 2),
                                             ("0.5.17", 0)])
def test_the_round_collectives_are_read_off_the_release_tree(version, rounds):
    """The all_reduce calls before the drain: writing_check's (0.5.1.x), loading_check's (0.5.13),
    both (0.5.14-0.5.16); none in 0.5.2-0.5.12 (recorded: writing_check returns first while nothing
    is written back, loading_check has none), one with the drain's sizes from 0.5.17."""
    srt = release_srt(version)
    feature = tree_shape(read_protocol_files(srt)).shape.round_collectives
    assert options_of(srt).get("round_collectives", 0) == rounds
    if version == "0.5.13":
        assert [f"{e.file}:{e.line}" for e in feature.evidence] == [
            "mem_cache/hiradix_cache.py:1283", "mem_cache/hiradix_cache.py:950"]


def test_0_5_13_conforms_at_two_ranks_with_its_round_collective_and_diverges_without_it():
    """0.5.13's check_hicache_events calls loading_check first, whose all_reduce(MIN) makes each
    scheduler wait for the other before its drain reads the queue sizes. With the option the
    2-rank runs conform; without it the model lets S0's drain read its sizes while S1 still issues,
    and the code's S1 cannot follow: the divergence at step 2, S1.drain_arrive."""
    srt = release_srt("0.5.13")
    opts = options_of(srt)
    assert opts["round_collectives"] == 1
    on = item("2x1", uniform_config(ranks=2, pages=1, **opts), 2_000, "steps", near=60)
    off = item("2x1 without", uniform_config(ranks=2, pages=1, **dict(opts, round_collectives=0)), 2_000, "steps",
               near=60)
    a_on, a_off = conform(srt, [on, off])
    assert a_on["divergence"] is None and not a_on["unsupported"] and a_on["schedules"] > 1, a_on
    d = a_off["divergence"]
    assert d is not None and d["action"] == "S1.drain_arrive" and len(d["schedule"]) == 2, d


# ---- an unmodified release conforms


def test_0_5_1_conforms_under_its_own_predicate_counting_a_whole_batch():
    """0.5.1's predicate accepts before the page list is published (0 == 0): under that predicate the
    model takes the same early acceptance as the code. Its IO thread counts a whole storage batch
    (`operation.increment(page_size * len(page_hashes))`) before it writes the batch's pages: with
    the release's own options (count_whole_batch) two pages in one batch conform; counted page by
    page (the option forced off) they diverge at the batch's count."""
    srt = release_srt("0.5.1")
    opts = options_of(srt)
    assert opts["count_before_write"] and opts["count_whole_batch"]
    one, two = (item(f"{p} page(s)", uniform_config(ranks=1, pages=p, **opts), 2_000) for p in (1, 2))
    fixed = dict(one, predicate="")
    by_page = item("2 pages, counted page by page", uniform_config(ranks=1, pages=2, **dict(opts, count_whole_batch=False)), 2_000)
    a1, a2, af, ap = conform(srt, [one, two, fixed, by_page])
    for a in (a1, a2):
        assert a["divergence"] is None and a["counterexamples"] >= 1 and a["states"] == a["model_states"], a
    assert af["divergence"] is not None and af["divergence"]["action"].startswith("S0.")  # the fixed predicate waits
    d = ap["divergence"]
    assert d["action"] == "I0.increment.q0" and d["fields"] == {"r0.#0.written": {"model": 0, "code": 1}}, d
    assert d["site"] == "managers/cache_controller.py:610" and d["stack"][0].endswith("(generic_page_transfer)")


@pytest.mark.parametrize("version", ["0.5.18", "0.5.1.post3", "0.5.10"])
def test_an_unmodified_poll_release_conforms(version):
    srt = release_srt(version)
    opts = options_of(srt)
    items = [item("1x1", uniform_config(ranks=1, pages=2, **opts), 2_000),
             item("1 of 2 in storage", uniform_config(ranks=1, pages=2, hits=1, **opts), 2_000),
             item("1x1 best_effort", uniform_config(ranks=1, pages=2, policy="best_effort", **opts), 2_000)]
    if not unsupported(uniform_config(ranks=2, **opts)):
        items.append(item("2x1", uniform_config(ranks=2, pages=1, **opts), 2_000, "steps", near=60))
    answers = conform(srt, items)
    for a in answers:
        assert a["divergence"] is None and not a["not_modelled"] and not a["unsupported"], a
        assert a["schedules"] > 1 and a["states"] > 10
    assert answers[0]["states"] == answers[0]["model_states"]  # 1x1: every state of the model


# ---- a model step changed diverges on the unmodified release


MUTANTS = {  # mutant -> (release, configuration keywords, the model step it changes, a field that differs)
    "count_before_write": ("0.5.10", dict(ranks=1, pages=2), "I0.increment.q0", ".written"),
    "terminate_without_mark": ("0.5.10", dict(ranks=1, pages=2, policy="best_effort"), "S0.check.q0", ".terminated"),
    "termination_min": ("0.5.10", dict(ranks=2, pages=1), "S1.check.q0", "S.coll"),
    "release_untruncated": ("0.5.10", dict(ranks=1, pages=2, hits=1), "I0.release.q0", ".slots"),
    "drain_revoke_keeps_ongoing": ("0.5.18", dict(ranks=1, pages=2, hits=0, prefetch_threshold=1), "S0.drain", ".ongoing"),
    "decide_on_local_hits": ("0.5.10", dict(requests=(RequestSpec(pages=2, hits=(2, 1), failing=(E, E)),)),
                             "P0.publish.q0", ".slots"),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_poll_mutant_diverges_on_an_unmodified_release(mutant):
    version, kwargs, action, field = MUTANTS[mutant]
    srt = release_srt(version)
    cfg = budget_config(Budget(mutant, kwargs, 0, 0), options_of(srt))
    [answer] = conform(srt, [item(mutant, cfg, 2_000, "steps", near=100, mutant=mutant)])
    d = answer["divergence"]
    assert d is not None, answer
    assert d["action"] == action and any(f.endswith(field) for f in d["fields"]), d
    assert d["site"].rsplit(":", 1)[1].isdigit() and d["schedule"][-1] == action
    assert all(set(v) == {"model", "code"} for v in d["fields"].values())


# ---- prefetch-check sglang: a poll row says whether its tree conforms


POLL_SCENARIO = Path(__file__).parent / "fixtures" / "sglang" / "scenarios" / "predicate-poll" / "fixture-poll-tp1.toml"


@pytest.fixture
def small(monkeypatch):
    use_cases(monkeypatch, "predicate-poll", cases("predicate-poll", "1 rank x 1 request"))
    use_budgets(monkeypatch, "predicate-poll", tuple(b for b in conformance_poll.BUDGETS if b.name == "1 rank x 1 request, 2 pages"))


@pytest.mark.parametrize("version, by_page, conforms", [("0.5.18", False, True), ("0.5.1", False, True), ("0.5.1", True, False)])
def test_sglang_gives_a_poll_row_its_conformance_line(tmp_path, capsys, monkeypatch, small, version, by_page, conforms):
    srt = release_srt(version)
    if by_page:  # the release mapping without count_whole_batch: 0.5.1 counted page by page
        rules = dict(poll_options.FEATURE_RULES, write_order=dict(poll_options.FEATURE_RULES["write_order"]))
        rules["write_order"]["count-batch-then-write"] = {"count_before_write": True}
        monkeypatch.setattr(poll_options, "FEATURE_RULES", rules)
    status = main(["sglang", str(srt), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--json", "-",
                   "--scenarios", str(POLL_SCENARIO)])
    out = capsys.readouterr()
    [row] = json.loads(out.out)["releases"]
    c = row["conformance"]
    assert c["checked"] and c["conforms"] is conforms, c
    if conforms:
        assert c["model_verdicts"] == "shown" and c["schedules"] > 1 and "conforms" in out.err
    else:  # 0.5.1's IO thread counts a whole batch before it writes its pages; this model counts page by page
        assert c["model_verdicts"].startswith("withheld") and c["divergence"]["action"] == "I0.increment.q0"
        assert "DIVERGES" in out.err and status in (1, 3)
