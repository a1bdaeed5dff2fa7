"""The state-graph export: every reachable state, the counterexample's path marked and nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess

import networkx as nx
import pytest

from prefetch_check.explorer.bfs import explore
from prefetch_check.explorer.view import state_graph, write_dot, write_graphml
from prefetch_check.explorer.view.graph_export import path_edges, path_nodes
from test_view_support import case


def path_ids(model, trace):
    """Node ids of the trace's states: ids follow the explorer's own BFS order of the model's states."""
    ex = explore(model)
    assert ex.complete
    index = {state: i for i, state in enumerate(ex.states)}
    return [index[s] for s in [trace.initial] + [step.state for step in trace.steps]]


def _text(value):
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


@pytest.mark.parametrize("name", ["race_r1", "lasso"])
def test_graph_holds_every_reachable_state_and_marks_exactly_the_path(name):
    model, trace, _ = case(name)
    graph = state_graph(model, highlight=trace)
    ex = explore(model)
    assert ex.complete
    assert graph.number_of_nodes() == len(ex.states)
    pairs = {(s, t) for s in ex.states for _, t in model.successors(s)}
    assert graph.number_of_edges() == len(pairs)
    ids = path_ids(model, trace)
    assert path_nodes(graph) == set(ids)
    assert path_edges(graph) == set(zip(ids, ids[1:]))
    for i, state in enumerate(ex.states):  # node i is the i-th state in BFS order
        fields = {k[len("field:"):]: v for k, v in graph.nodes[i].items() if k.startswith("field:")}
        assert fields == {k: _text(v) for k, v in model.fields(state).items()}
    for k, step in enumerate(trace.steps):
        assert step.action_id in graph.edges[ids[k], ids[k + 1]]["label"].split(", ")
    assert graph.nodes[ids[0]]["initial"] and graph.nodes[ids[0]]["path_step"] == 0


def test_lasso_path_closes_its_cycle():
    model, trace, _ = case("lasso")
    graph = state_graph(model, highlight=trace)
    ids = path_ids(model, trace)
    entry = ids[trace.cycle_start]
    assert ids[-1] == entry  # the last step leads back to where the cycle starts
    cycle = nx.find_cycle(graph.edge_subgraph(path_edges(graph)))
    assert {u for u, _ in cycle} == set(ids[trace.cycle_start + 1 :])


def test_without_highlight_nothing_is_marked():
    model, _, _ = case("race_r1")
    graph = state_graph(model)
    assert not path_nodes(graph) and not path_edges(graph)


def test_too_large_a_scenario_is_refused_with_a_clear_error():
    model, _, _ = case("race_r1")
    with pytest.raises(ValueError, match="more than 20 reachable states"):
        state_graph(model, max_states=20)


def test_a_trace_of_another_model_is_refused():
    model, _, _ = case("race_r1")
    _, other, _ = case("delivers_r2")
    with pytest.raises(ValueError, match="leaves the explored graph"):
        state_graph(model, highlight=other)


def test_dot_marks_the_path_edges_and_nodes(tmp_path):
    model, trace, _ = case("race_r1")
    graph = state_graph(model, highlight=trace)
    out = tmp_path / "g.dot"
    write_dot(graph, out)
    text = out.read_text()
    assert text.startswith('digraph "state graph" {') and text.rstrip().endswith("}")
    edges = re.findall(r'^  "(\d+)" -> "(\d+)" \[(.*)\];$', text, re.M)
    nodes = re.findall(r'^  "(\d+)" \[(.*)\];$', text, re.M)
    assert len(edges) == graph.number_of_edges() and len(nodes) == graph.number_of_nodes()
    red_edges = {(int(u), int(v)) for u, v, attrs in edges if 'color="red"' in attrs}
    red_nodes = {int(n) for n, attrs in nodes if 'color="red"' in attrs}
    assert red_edges == path_edges(graph) and red_nodes == path_nodes(graph)


def test_dot_is_valid_graphviz(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed (Debian package graphviz); the DOT syntax is not checked")
    model, trace, _ = case("lasso")
    out = tmp_path / "g.dot"
    write_dot(state_graph(model, highlight=trace), out)
    run = subprocess.run(["dot", "-Tsvg", str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count('stroke="red"') >= len(trace.steps)


def test_graphml_round_trips_the_marks(tmp_path):
    model, trace, _ = case("race_r1")
    graph = state_graph(model, highlight=trace)
    out = tmp_path / "g.graphml"
    write_graphml(graph, out)
    back = nx.read_graphml(out)
    assert back.number_of_nodes() == graph.number_of_nodes()
    assert {int(n) for n, on in back.nodes(data="on_path") if on} == path_nodes(graph)
    assert {(int(u), int(v)) for u, v, on in back.edges(data="on_path") if on} == path_edges(graph)
    assert back.nodes["0"]["label"] == graph.nodes[0]["label"]
