"""ITF export: the structure Apalache's ADR-015 defines, and the trace's states and steps in it.

No JSON Schema for ITF is published (the ADR leaves one for later), so `check_itf` below
checks the ADR's rules one by one: the trace object's keys, `vars` named in every state,
`#meta.index` counting the states, every value an ITF expression, `loop` inside the states.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.view import trace_to_itf
from prefetch_check.explorer.view.itf import ABSENT_TEXT, ACTION_TAKEN, FORMAT_DESCRIPTION, itf_value
from test_view import LostUpdate
from test_view_support import CASES, case

SEED = str(Path(__file__).resolve().parent.parent / "scenarios" / "seed-race.toml")
TRACE_KEYS = {"#meta", "params", "vars", "states", "loop"}


def check_expr(value, where: str) -> None:
    """One ITF expression (ADR-015, "Expressions"), recursively."""
    if isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        assert abs(value) <= 2**53 - 1, f"{where}: JSON integer out of range"
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            check_expr(v, f"{where}[{i}]")
        return
    assert isinstance(value, dict), f"{where}: {type(value).__name__} is no ITF expression"
    tags = [k for k in value if k.startswith("#")]
    if not tags:  # a record
        for k, v in value.items():
            check_expr(v, f"{where}.{k}")
        return
    assert len(value) == 1, f"{where}: a tagged value has one key, not {sorted(value)}"
    tag, body = tags[0], value[tags[0]]
    if tag == "#bigint":
        assert isinstance(body, str) and re.fullmatch(r"-?[0-9]+", body), f"{where}: bad #bigint {body!r}"
    elif tag in ("#tup", "#set"):
        assert isinstance(body, list), f"{where}: {tag} holds a list"
        for i, v in enumerate(body):
            check_expr(v, f"{where}{tag}[{i}]")
    elif tag == "#map":
        assert isinstance(body, list) and all(isinstance(p, list) and len(p) == 2 for p in body), f"{where}: #map holds pairs"
        for i, (k, v) in enumerate(body):
            check_expr(k, f"{where}#map[{i}].key")
            check_expr(v, f"{where}#map[{i}].value")
    elif tag == "#unserializable":
        assert isinstance(body, str)
    else:
        raise AssertionError(f"{where}: unknown tag {tag}")


def check_itf(doc: dict) -> None:
    assert set(doc) <= TRACE_KEYS and {"vars", "states"} <= set(doc), sorted(doc)
    assert isinstance(doc.get("#meta", {}), dict)
    names = doc["vars"]
    assert isinstance(names, list) and all(isinstance(n, str) and not n.startswith("#") for n in names)
    assert len(set(names)) == len(names)
    assert isinstance(doc["states"], list) and doc["states"]
    for i, state in enumerate(doc["states"]):
        assert isinstance(state, dict)
        assert set(state) - {"#meta"} == set(names), f"state {i}: variables {sorted(set(state) ^ set(names))}"
        assert state["#meta"]["index"] == i
        for n in names:
            check_expr(state[n], f"states[{i}].{n}")
    if "loop" in doc:
        assert isinstance(doc["loop"], int) and 0 <= doc["loop"] < len(doc["states"])


def decode(value):
    """An ITF expression back to the Python value `fields(state)` gave."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "#bigint" in value:
            return int(value["#bigint"])
        if "#tup" in value:
            return tuple(decode(v) for v in value["#tup"])
        if "#set" in value:
            return frozenset(decode(v) for v in value["#set"])
        if "#map" in value:
            return {decode(k): decode(v) for k, v in value["#map"]}
    return value


@pytest.mark.parametrize("name", sorted(CASES))
def test_itf_is_well_formed_and_holds_every_state_and_step(name):
    model, trace, prop = case(name)
    doc = json.loads(json.dumps(trace_to_itf(model, trace, prop, name)))  # through JSON text, as a reader gets it
    check_itf(doc)
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["format-description"] == FORMAT_DESCRIPTION
    assert doc["#meta"]["property"] == prop.name and doc["#meta"]["reason"] == prop.reason
    assert doc["#meta"]["schedule"] == trace.schedule
    states = [trace.initial] + [s.state for s in trace.steps]
    assert len(doc["states"]) == len(states)
    # every field any state has, in order of appearance (ack-drain's operations appear when issued)
    fields = list(dict.fromkeys(n for state in states for n in model.fields(state)))
    assert doc["vars"] == fields + [ACTION_TAKEN]
    for itf_state, state in zip(doc["states"], states):
        own = model.fields(state)
        assert {n: decode(itf_state[n]) for n in own} == own
        assert all(n in itf_state for n in fields)  # ITF: every state assigns every variable
        absent = {n: itf_state[n] for n in fields if n not in own}  # e.g. an ack-drain operation not issued yet
        assert all(v == {"#unserializable": ABSENT_TEXT} for v in absent.values()), absent
    assert [s[ACTION_TAKEN] for s in doc["states"]] == ["init"] + [s.action_id for s in trace.steps]
    assert [s["#meta"].get("action") for s in doc["states"][1:]] == [s.action_id for s in trace.steps]
    # the actions taken replay to the same end
    again = replay(model, " ".join(s[ACTION_TAKEN] for s in doc["states"][1:]))
    assert again.final_state == trace.final_state


def test_a_lasso_names_its_loop_state_and_returns_to_it():
    model, trace, prop = case("lasso")
    doc = trace_to_itf(model, trace, prop, "lasso")
    assert doc["loop"] == trace.cycle_start
    variables = [n for n in doc["vars"] if n != ACTION_TAKEN]
    loop, last = doc["states"][doc["loop"]], doc["states"][-1]
    assert {n: loop[n] for n in variables} == {n: last[n] for n in variables}
    assert "repeat forever" in doc["#meta"]["lasso"]
    finite = trace_to_itf(*case("race_r1"), "race")
    assert "loop" not in finite and "lasso" not in finite["#meta"]


def test_values_take_the_itf_forms():
    assert itf_value(True) is True and itf_value("x") == "x"
    assert itf_value(2**70) == {"#bigint": "1180591620717411303424"} and itf_value(-3) == {"#bigint": "-3"}
    assert itf_value([1, "a"]) == [{"#bigint": "1"}, "a"]
    assert itf_value((1, False)) == {"#tup": [{"#bigint": "1"}, False]}
    assert itf_value(frozenset({"b", "a"})) == {"#set": ["a", "b"]}
    assert itf_value({"k": 1}) == {"#map": [["k", {"#bigint": "1"}]]}
    assert itf_value(None) == {"#unserializable": "None"}
    check_expr(itf_value({(1, 2): {frozenset({3}), 4}, "z": [None, 1.5]}), "nested")


def test_a_model_without_fields_still_gives_its_actions():
    model = LostUpdate()
    prop = check_model(model, name="toy").results["no_lost_update"]
    doc = trace_to_itf(model, prop.trace, prop, "toy")
    check_itf(doc)
    assert doc["vars"] == [ACTION_TAKEN]
    assert [s[ACTION_TAKEN] for s in doc["states"]][1:] == [s.action_id for s in prop.trace.steps]


def test_field_names_that_collide_with_itf_are_refused():
    model, trace, prop = case("race_r1")

    class Hashed:
        def __getattr__(self, attr):
            return getattr(model, attr)

        def fields(self, state):
            return {"#meta": 1, **model.fields(state)}

    with pytest.raises(ValueError, match="cannot start with '#'"):
        trace_to_itf(Hashed(), trace, prop, "t")


def test_cli_writes_itf(tmp_path, capsys):
    out = tmp_path / "race.itf.json"
    assert main(["trace", SEED, "--format", "itf", "--out", str(out), "-q"]) == 0
    assert f"wrote itf to {out}" in capsys.readouterr().out
    doc = json.loads(out.read_text(encoding="utf-8"))
    check_itf(doc)
    assert doc["#meta"]["property"] == "no_early_acceptance" and doc["#meta"]["status"] == "violation"
    assert main(["trace", SEED, "--format", "itf", "--property", "wait_complete_delivers", "-q"]) == 0
    check_itf(json.loads(capsys.readouterr().out))


def test_an_operation_not_issued_yet_is_absent_not_none(capsys):
    """Issue 20: an ack-drain counterexample starts before its operation is issued; the ITF export
    says the operation's fields are absent there (it wrote {"#unserializable": "None"}, a value)."""
    assert main(["trace", str(SEED.replace("seed-race", "ack-race")), "--property", "no_early_acceptance",
                 "--format", "itf", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_itf(doc)
    first, issued = doc["states"][0], doc["states"][1]
    assert issued[ACTION_TAKEN] == "S0.issue.q0"
    assert first["r0.#0.stage"] == {"#unserializable": ABSENT_TEXT} and issued["r0.#0.stage"] == "queued"
    assert first["r0.#0.terminated"] == {"#unserializable": ABSENT_TEXT} and issued["r0.#0.terminated"] is False
