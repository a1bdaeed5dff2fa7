"""The trace viewer's formats show every step, the changed fields, the decisive step and the verdict."""

from __future__ import annotations

import html
import json
import re

import pytest
from rich.console import Console

from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.interface import always
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.view import render_trace, trace_to_html, trace_to_json, trace_to_markdown
from prefetch_check.explorer.view.layout import clauses
from prefetch_check.explorer.view.terminal import render_trace as render_with_layout  # `layout=` is beyond the public API
from test_view_support import CASES, case, step_texts

ALL = sorted(CASES)


def terminal(name: str, width: int = 2000, layout: str = "auto") -> str:
    model, trace, prop = case(name)
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    render_with_layout(console, model, trace, prop, f"title of {name}", layout=layout)
    return console.export_text()


def outputs(name: str) -> dict:
    model, trace, prop = case(name)
    title = f"title of {name}"
    return {
        "html": trace_to_html(model, trace, prop, title),
        "markdown": trace_to_markdown(model, trace, prop, title),
        "json": trace_to_json(model, trace, prop, title),
    }


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("layout", ["columns", "lanes"])
def test_terminal_shows_every_step_and_the_verdict_last(name, layout):
    model, trace, prop = case(name)
    text = terminal(name, layout=layout)
    lines = text.splitlines()
    for i, step in enumerate(trace.steps):
        for clause in clauses(step.description):
            assert clause in text, f"step {i + 1}: {clause!r} missing"
    numbered = [ln for ln in lines if re.match(r"\s*[▶⟳]?\d+\s", ln)]
    assert [int(re.match(r"\s*[▶⟳]?(\d+)", ln).group(1)) for ln in numbered] == list(range(1, len(trace.steps) + 1))
    verdict_line = max(i for i, ln in enumerate(lines) if prop.verdict in ln)
    assert verdict_line > max(i for i, ln in enumerate(lines) if ln in numbered)
    assert prop.reason in text and trace.schedule in text


def test_terminal_places_each_step_in_its_actors_column():
    model, trace, prop = case("delivers_r2")
    text = terminal("delivers_r2", width=600, layout="columns")
    lines = text.splitlines()
    header = next(ln for ln in lines if "rank 1" in ln)
    rank1_at = header.index("rank 1")
    for number, step in enumerate(trace.steps, start=1):
        first = clauses(step.description)[0][:20]
        line = next(ln for ln in lines if re.match(rf"\s*▶?{number}\s", ln))
        left = line.index(first) < rank1_at
        assert left == (step.actor[0] == 0), f"{step.action_id} drawn under the wrong rank"


def test_terminal_spells_out_the_decisive_evaluation():
    text = terminal("race_r1")
    decisive = case("race_r1")[1].steps[-1]
    assert decisive.action_id.startswith("S0.check")
    assert "▶4" in text
    flat = " ".join(text.split())
    assert "completed_tokens=0, len(hash_value)=0 -> 0 == 0 -> accept" in flat
    assert "no_early_acceptance fails here" in flat


def test_narrow_terminal_switches_to_lanes_and_still_shows_every_step():
    model, trace, prop = case("delivers_r2")
    text = terminal("delivers_r2", width=100)
    header = next(ln for ln in text.splitlines() if "changed fields" in ln)
    words = header.split()
    lanes = words[1 : words.index("step")]  # narrow lanes, then one wide column
    assert words[0] == "#" and lanes == sorted(lanes, key=lambda lane: (lane[1:], "SPIC".index(lane[0])))
    assert {f"{s.actor[1]}{s.actor[0]}" for s in trace.steps} <= set(lanes)
    for step in trace.steps:
        assert f"{step.actor[1]}{step.actor[0]} " in text  # the lane label before the description
    assert len(re.findall("●", text)) == len(trace.steps)


def test_every_format_shows_every_step():
    for name in ALL:
        model, trace, prop = case(name)
        out = outputs(name)
        rows = step_texts(out["html"])
        assert sorted(rows) == list(range(len(trace.steps) + 1))  # 0 is the initial state
        md_rows = [ln for ln in out["markdown"].splitlines() if re.match(r"\| (\*\*)?\d+", ln)]
        assert len(md_rows) == len(trace.steps)
        for i, step in enumerate(trace.steps, start=1):
            assert step.action_id in rows[i]
            for clause in clauses(step.description):
                assert clause in rows[i]
            assert step.description in md_rows[i - 1]
            assert re.match(rf"\| (\*\*)?{i}\b", md_rows[i - 1])
        assert [s["description"] for s in out["json"]["steps"]] == [s.description for s in trace.steps]
        assert [s["action_id"] for s in out["json"]["steps"]] == [s.action_id for s in trace.steps]
        assert [tuple(s["actor"]) for s in out["json"]["steps"]] == [s.actor for s in trace.steps]


@pytest.mark.parametrize("name", ALL)
def test_changed_fields_are_the_diff_of_consecutive_states(name):
    model, trace, prop = case(name)
    doc = trace_to_json(model, trace, prop, "t")
    states = [trace.initial] + [s.state for s in trace.steps]
    for i, step in enumerate(doc["steps"]):
        before, after = model.fields(states[i]), model.fields(states[i + 1])
        # ack-drain's fields of an operation appear when it is issued: absent reads as None
        want = {k for k in after.keys() | before.keys() if before.get(k) != after.get(k)}
        assert set(step["changed"]) == want
        for k, change in step["changed"].items():
            assert (change["old"], change["new"]) == (json.loads(json.dumps(before.get(k))), json.loads(json.dumps(after.get(k))))
    rows = step_texts(trace_to_html(model, trace, prop, "t"))
    first = doc["steps"][0]["changed"]
    for field in first:
        assert field.rsplit(".", 1)[1] in rows[1]


def test_decisive_step_and_reason_in_every_safety_format():
    for name in ("race_r1", "delivers_r2"):
        model, trace, prop = case(name)
        out = outputs(name)
        n = len(trace.steps)
        assert [s["decisive"] for s in out["json"]["steps"]] == [False] * (n - 1) + [True]
        assert out["json"]["property"] == {
            "name": prop.name, "verdict": "VIOLATED", "description": prop.description, "reason": prop.reason,
        }
        assert re.search(rf'<div class="row step decisive" role="row" data-step="{n}"', out["html"])
        assert html.escape(prop.reason) in out["html"]
        assert out["html"].count("fails here") == 1
        md = out["markdown"]
        assert re.search(rf"^\| \*\*{n}\*\* ▶ decisive \|", md, re.M)
        assert prop.reason in md and md.index(prop.reason) > md.index(f"| **{n}**")


def test_json_schedule_replays_to_the_same_final_state():
    for name in ALL:
        model, trace, prop = case(name)
        doc = json.loads(json.dumps(trace_to_json(model, trace, prop, "t")))
        assert doc["schedule"] == trace.schedule
        again = replay(model, doc["schedule"])
        assert again.final_state == trace.final_state
        assert again.cycle_start == doc["cycle_start"] == trace.cycle_start


def test_lasso_shows_where_the_cycle_starts_in_every_format():
    model, trace, prop = case("lasso")
    assert trace.cycle_start is not None, "the threshold-0 scenario no longer gives a lasso"
    k = trace.cycle_start + 1  # 1-based first repeating step
    n = len(trace.steps)
    text = terminal("lasso", width=160)
    assert f"⟳{k}" in text
    assert f"steps {k}-{n} repeat forever" in " ".join(text.split())
    assert "fails here" not in text  # a lasso has no single decisive step
    out = outputs("lasso")
    page = out["html"]
    mark = page.index('class="row cycle-mark"')
    assert page.index(f'data-step="{k - 1}"') < mark < page.index(f'data-step="{k}"')
    cycle_rows = [int(s) for s in re.findall(r'class="row step cycle" role="row" data-step="(\d+)"', page)]
    assert cycle_rows == list(range(k, n + 1))
    md = out["markdown"].splitlines()
    at = next(i for i, ln in enumerate(md) if "cycle starts here" in ln)
    assert md[at + 1].startswith(f"| {k} |")
    doc = out["json"]
    assert doc["cycle_start"] == k - 1 and "repeat forever" in doc["lasso"]
    assert [s["in_cycle"] for s in doc["steps"]] == [i >= k - 1 for i in range(n)]
    assert not any(s["decisive"] for s in doc["steps"])


def test_html_is_one_self_contained_file():
    for name in ALL:
        page = outputs(name)["html"]
        assert page.startswith("<!DOCTYPE html>")
        assert page.count("<html") == 1
        low = page.lower()
        for needle in ("http", "src=", "url(", "<link", "@import", "//cdn"):
            assert needle not in low, needle
        data = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', page, re.S).group(1)
        states = json.loads(data)["states"]
        assert len(states) == len(case(name)[1].steps) + 1
        assert case(name)[1].schedule in page


def test_thread_names_hook_names_the_columns():
    model, trace, prop = case("race_r1")

    class Named:
        thread_names = {"S": "scheduler", "P": "prefetch thread", "I": "IO thread"}

        def __getattr__(self, attr):
            return getattr(model, attr)

    doc = trace_to_json(Named(), trace, prop, "t")
    assert [a["name"] for a in doc["actors"]] == ["scheduler", "prefetch thread"]
    assert doc["steps"][0]["actor_label"] == "rank 0 scheduler"


# ---- a toy model that is not the prefetch protocol: the viewer stays generic ----


class LostUpdate:
    """Two workers read then write a shared counter; descriptions carry text that must be escaped."""

    def initial_states(self):
        return [(0, None, None)]  # counter, what A read, what B read

    def successors(self, s):
        counter, a, b = s
        out = []
        for who, seen in (("A", a), ("B", b)):
            if seen is None:
                nxt = (counter, counter, b) if who == "A" else (counter, a, counter)
                out.append(((who, "read"), nxt))
            elif seen != "done":
                nxt = (seen + 1, "done", b) if who == "A" else (seen + 1, a, "done")
                out.append(((who, "write"), nxt))
        return out

    def properties(self):
        return [always("no_lost_update", lambda s: "counter is 1 | </script> <b>" if s == (1, "done", "done") else None)]

    def actor(self, action):
        return action[0]

    def action_id(self, action):
        return f"{action[0]}.{action[1]}"

    def action_kind(self, action):
        return action[1]

    def action_kinds(self):
        return ("read", "write")

    def describe(self, s, action, nxt):
        return f"{action[0]} {action[1]}s counter | </script><b>x</b> -> {nxt[0]}"


def test_generic_model_without_fields_and_with_hostile_text():
    model = LostUpdate()
    result = check_model(model, name="toy")
    prop = result.results["no_lost_update"]
    trace = prop.trace
    out = {
        "html": trace_to_html(model, trace, prop, "toy"),
        "md": trace_to_markdown(model, trace, prop, "toy"),
        "json": trace_to_json(model, trace, prop, "toy"),
    }
    assert [a["label"] for a in out["json"]["actors"]] == ["A", "B"]  # one column per plain actor
    assert all(s["changed"] == {} for s in out["json"]["steps"])
    page = out["html"]
    assert page.count("</script>") == 2  # only the two real script elements end
    rows = step_texts(page)
    for i, step in enumerate(trace.steps, start=1):
        assert step.description in rows[i]
    md_rows = [ln for ln in out["md"].splitlines() if re.match(r"\| (\*\*)?\d", ln)]
    assert len(md_rows) == len(trace.steps)
    assert all(len(re.split(r"(?<!\\)\|", ln)) == 6 for ln in md_rows)  # pipes escaped: still 4 cells
    console = Console(width=120, record=True, color_system=None)
    render_trace(console, model, trace, prop, "toy")
    assert "counter is 1 | </script> <b>" in console.export_text()
