"""The conformance check (model/code/conformance/check.py, refinement.py): model schedules replayed on a
release's own code, the views compared step by step, in both directions: an unmodified release
conforms; a model with one step changed (a mutant of mutants.py) diverges on it; a tree edit the
code engine's verdicts miss diverges, naming the edited line. And `prefetch-check sglang` shows
the model's verdicts only where the tree conforms.

On the real releases, fetched at test time (skipped where the index is unreachable and they are
not cached); the tree's code runs only in the executor's child.
"""

from __future__ import annotations

import json

import pytest

from prefetch_check.cli import main
from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.model.code.conformance.check import conformance_kit, reachable_schedules
from prefetch_check.model.code.worlds.ack_drain.conformance_configs import BUDGETS, Budget, budget_config, config_to_json, unsupported
from prefetch_check.model.code.runner import conform
from prefetch_check.model.engine.readable import ReadableModel
from prefetch_check.model.protocols.ack_drain import refinement
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from pack_helpers import cases, use_budgets, use_cases
from test_code_executor import clean, edited, release
from test_sglang_floor import ACK_SCENARIO, EDITS_0523

ACK = conformance_kit("ack-drain")

OPTIONS = {"0.5.22": dict(exceptions="caught"), "0.5.23": dict(exceptions="caught", deadline="admission")}
E = frozenset()
HIT_DRAIN_LOCAL = ("mem_cache/unified_radix_cache.py", "_drain_queue(cc.prefetch_hit_queue, n_storage_hit)",
                   "_drain_queue(cc.prefetch_hit_queue, cc.prefetch_hit_queue.qsize())")


def item(name, cfg, budget, cover="steps", mutant=""):
    return {"name": name, "config": config_to_json(cfg), "budget": budget, "cover": cover, "mutant": mutant,
            "counterexamples": True}


# ---- the mapping itself (no tree)


def test_the_model_view_names_every_thread_queue_operation_and_request():
    protocol = AckDrainProtocol(uniform_ack_config(ranks=2, pages=2), "fixed")
    model = ReadableModel(protocol)
    view = refinement.model_view(protocol, model.initial_states()[0])
    assert view["r0.S"] == ("issue", 0) and view["r1.P"] == -1 and view["r0.Y"] == ()
    assert view["r1.S.coll"] is False and view["r0.q0.ongoing"] == -1 and view["r0.q0.ready"] is False
    assert not any(k.startswith("r0.#") for k in view)  # no operation issued yet
    after = model.successors(model.initial_states()[0])[0][1]  # S0 issues q0
    view = refinement.model_view(protocol, after)
    assert view["r0.prefetch_queue"] == (0,) and view["r0.#0.slots"] is None and view["r0.q0.ongoing"] == 0


def test_every_step_between_the_states_is_covered_within_the_budget():
    model = ReadableModel(AckDrainProtocol(uniform_ack_config(ranks=1, pages=2), "fixed"))
    local, seen, views = reachable_schedules(model, 10_000, "local", None, ACK)
    steps, seen_again, _ = reachable_schedules(model, 10_000, "steps", None, ACK)
    assert seen == seen_again and len(steps) > len(local) > 1 and views > 1
    cut, seen_cut, _ = reachable_schedules(model, 20, "steps", None, ACK)
    assert seen_cut == 20 and cut


def test_what_the_executor_cannot_build_is_said():
    assert "clock is per rank" in unsupported(uniform_ack_config(ranks=1, requests=2, policy="timeout"))
    assert "pools are all one size" in unsupported(uniform_ack_config(ranks=2, host_pages=(1, 0), alloc_deterministic=False))
    assert "more than one prefetch" in unsupported(uniform_ack_config(ranks=1, requests=2, host_pages=(1,)))
    for buildable in (uniform_ack_config(ranks=2, pages=2), uniform_ack_config(ranks=1, policy="timeout"),
                      uniform_ack_config(ranks=1, host_pages=(0,)),
                      AckConfig(ranks=1, requests=(Request(pages=2, hits=(2,), failing=(E,), batch_raises=(frozenset({0}),)),))):
        assert unsupported(buildable) == "", buildable


# ---- an unmodified release conforms


@pytest.mark.parametrize("version", ["0.5.23", "0.5.22"])
def test_an_unmodified_release_conforms(version):
    opts = OPTIONS[version]
    items = [
        item("1x1", uniform_ack_config(ranks=1, pages=2, **opts), 2_000),
        item("2x1", uniform_ack_config(ranks=2, pages=1, **opts), 120),
        item("readmit", AckConfig(ranks=1, requests=(Request(pages=1, hits=(1,), failing=(E,), readmits=1),),
                                  policy="best_effort", **opts), 150),
    ]
    answers = conform(release(version), items)
    for a in answers:
        assert a["divergence"] is None and not a["not_modelled"] and not a["unsupported"], a
        assert a["schedules"] > 1 and a["states"] > 10
    assert answers[0]["states"] == answers[0]["model_states"]  # 1x1: every state of the model
    assert answers[2]["counterexamples"] == 1  # the stale operation's revoke (operation_identity), replayed


# ---- a model step changed diverges on the unmodified release


MUTANTS = {
    "result_frees_inserted_pages": (uniform_ack_config(ranks=1, pages=2, **OPTIONS["0.5.23"]), "S0.drain", ".slots"),
    "hits_published_without_agreement": (AckConfig(ranks=2, requests=(Request(pages=2, hits=(2, 1), failing=(E, E)),),
                                                   **OPTIONS["0.5.23"]), "P0.publish.q0", ".hash_value"),
    "drain_own_sizes": (uniform_ack_config(ranks=2, pages=1, **OPTIONS["0.5.23"]), "S1.drain", "S.coll"),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_model_mutant_diverges_on_an_unmodified_release(mutant):
    cfg, action, field = MUTANTS[mutant]
    [answer] = conform(release("0.5.23"), [item(mutant, cfg, 300, mutant=mutant)])
    d = answer["divergence"]
    assert d is not None, answer
    assert d["action"] == action and any(f.endswith(field) for f in d["fields"]), d
    assert d["site"].rsplit(":", 1)[1].isdigit() and d["schedule"][-1] == action
    assert all(set(v) == {"model", "code"} for v in d["fields"].values())


# ---- a tree edit whose code verdicts are clean diverges, naming the edited line


def test_a_tree_edit_the_code_engine_misses_diverges_naming_the_edited_line(tmp_path):
    rel, old, new = HIT_DRAIN_LOCAL
    srt = edited(tmp_path, release("0.5.23"), rel, old, new)
    assert clean(check_tree(srt, CodeConfig(ranks=2), CodeLimits(max_seconds=120)))  # its code's verdicts: clean
    line = (srt / rel).read_text().splitlines().index(next(
        x for x in (srt / rel).read_text().splitlines() if new in x)) + 1
    [answer] = conform(srt, [item("2x1", uniform_ack_config(ranks=2, pages=1, **OPTIONS["0.5.23"]), 300)])
    d = answer["divergence"]
    assert d is not None and d["action"] == "S0.drain", answer
    assert f"{rel}:{line} (_drain_and_alloc_storage_hit)" in d["stack"], d["stack"]
    assert d["fields"]["r0.prefetch_hit_queue"] == {"model": [0], "code": []}


# ---- the floor's edits that need a short pool, the clock or a batch past the first: the budget runs them

# edit -> (the budget configuration that runs it, the model step, a field that differs, the tree's function
# at the divergence: the edited one, or the one that reads the edited constant)
FLOOR_EDITS = {
    "allocation failure keeps the operation": ("no host pool", "S0.drain", "r0.q0.ongoing", "_try_alloc_storage_hit"),
    "return before the timeout vote's collective": ("1 rank, timeout", "S0.vote.q0", "r0.S", "_can_terminate_prefetch"),
    "storage batch size constant": ("129 pages", "I0.write.q0", "r0.prefetch_sync_queue", "_page_transfer"),
}


def budget_item(part: str, **options) -> dict:
    [b] = [b for b in BUDGETS if part in b.name]
    return {"name": b.name, "config": config_to_json(budget_config(b, dict(OPTIONS["0.5.23"], **options))),
            "budget": b.states, "near": b.near, "cover": b.cover, "counterexamples": b.counterexamples}


@pytest.mark.parametrize("name", sorted(FLOOR_EDITS))
def test_a_floor_edit_the_world_now_runs_diverges_in_the_edited_function(tmp_path, name):
    part, action, field, function = FLOOR_EDITS[name]
    [edit] = EDITS_0523[name][0]
    [answer] = conform(edited(tmp_path, release("0.5.23"), edit.file, edit.old, edit.new), [budget_item(part)])
    d = answer["divergence"]
    assert d is not None and not answer["not_modelled"], answer
    assert d["action"] == action and field in d["fields"], d
    assert any(f"({function})" in frame for frame in d["stack"]), d["stack"]


def test_the_final_ack_out_of_its_finally_conforms_where_a_read_raises_since_the_batch_catches_it(tmp_path):
    """0.5.22+ catch a batch read's exception per batch (`except Exception` in _page_transfer): the
    finally around it is reached by no exception the storage raises. The read does raise in this
    world: a model whose IO thread dies of it (end_thread, 0.5.19-0.5.21) diverges from 0.5.23."""
    [edit] = EDITS_0523["final ACK no longer in a finally"][0]
    srt = edited(tmp_path, release("0.5.23"), edit.file, edit.old, edit.new)
    raising, dying = conform(srt, [budget_item("batch 1 raises"), budget_item("batch 1 raises", exceptions="end_thread")])
    assert raising["divergence"] is None and not raising["not_modelled"] and raising["schedules"] > 1, raising
    assert dying["divergence"]["action"] == "I0.batch_raises.q0", dying


# ---- prefetch-check sglang: the model's verdicts only where the tree conforms


@pytest.fixture
def small(monkeypatch):
    use_cases(monkeypatch, "ack-drain", cases("ack-drain", "1 rank x 1 request"))
    use_budgets(monkeypatch, "ack-drain", (Budget("2 ranks x 1 request", dict(ranks=2, pages=1), 2_000, 100),))


def sglang_json(capsys, tmp_path, tree) -> tuple[int, dict, str]:
    status = main(["sglang", str(tree), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--json", "-",
                   "--scenarios", str(ACK_SCENARIO)])
    out = capsys.readouterr()
    return status, json.loads(out.out), out.err


def test_sglang_withholds_the_model_where_the_tree_diverges(tmp_path, capsys, small):
    """(Where it conforms, the model's verdicts are shown: tests/test_sglang_code.py.)"""
    rel, old, new = HIT_DRAIN_LOCAL
    edit = edited(tmp_path / "edit", release("0.5.23"), rel, old, new)
    status, doc, table = sglang_json(capsys, tmp_path, edit)
    [row] = doc["releases"]
    c = row["conformance"]
    assert c["conforms"] is False and c["divergence"]["action"] == "S0.drain" and c["model_verdicts"].startswith("withheld")
    assert "properties" not in row or not row["properties"]  # never shown
    assert status == 3 and "DIVERGES" in table
