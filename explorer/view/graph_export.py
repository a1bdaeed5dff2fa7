"""The explored state graph of a small scenario, with a counterexample's path marked.

Drawn with Graphviz (DOT) or opened in a graph tool (GraphML), the graph shows where a
trace leaves the behaviours that work. The search here is a plain breadth-first walk
of the model's own states (no reduction), so every node is a state a reader can check
against the trace; it refuses scenarios larger than `max_states` instead of drawing a
graph nobody can read.
"""

from __future__ import annotations

from prefetch_check.explorer.interface import hooks

from collections import deque

import networkx as nx

from prefetch_check.explorer.view.layout import diff, group_changes, jsonable, leaf, show

PATH_COLOR = "red"


def state_graph(model, highlight=None, max_states: int = 5000) -> nx.DiGraph:
    """Every reachable state as a node (ids in BFS order), every step as an edge.

    Node attributes: `label` (the fields that differ from the initial state), `initial`,
    `on_path`, `path_step` (first index of the state on `highlight`, -1 if off it) and one
    `field:<name>` text attribute per model field. Edge attributes: `label` (action ids),
    `actor`, `description`, `on_path`, `path_step`. Parallel steps between two states
    share one edge whose label lists their action ids.
    """
    fields = hooks(model).fields
    graph = nx.DiGraph(name="state graph")
    index: dict = {}
    order: list = []

    def add(state) -> int:
        nid = len(order)
        if nid >= max_states:
            raise ValueError(
                f"the scenario has more than {max_states} reachable states: a state graph that large is "
                f"unreadable; export the graph of a smaller scenario (fewer actors or smaller parameters) or "
                f"raise max_states"
            )
        index[state] = nid
        order.append(state)
        graph.add_node(nid)
        return nid

    todo = deque(add(s) for s in model.initial_states() if s not in index)
    while todo:
        u = todo.popleft()
        for action, nxt in model.successors(order[u]):
            v = index.get(nxt)
            if v is None:
                v = add(nxt)
                todo.append(v)
            aid = model.action_id(action)
            if graph.has_edge(u, v):
                graph.edges[u, v]["actions"].append(aid)
            else:
                graph.add_edge(
                    u, v, actions=[aid], actor=str(model.actor(action)),
                    description=model.describe(order[u], action, nxt),
                )

    base = fields(order[0]) if fields else None
    names = list(base) if base else []
    initial_ids = {index[s] for s in model.initial_states()}
    for nid, state in enumerate(order):
        data = graph.nodes[nid]
        data["initial"] = nid in initial_ids
        data["on_path"] = False
        data["path_step"] = -1
        if fields:
            now = fields(state)
            for n, value in now.items():
                data[f"field:{n}"] = show(jsonable(value))
            data["label"] = f"s{nid} (initial)" if nid in initial_ids else _node_label(nid, names, base, now)
        else:
            data["label"] = f"s{nid}\n{state!r}"
    for u, v, data in graph.edges(data=True):
        data["label"] = ", ".join(data.pop("actions"))
        data["on_path"] = False
        data["path_step"] = -1
    if highlight is not None:
        _mark(graph, index, model, highlight)
    return graph


def path_nodes(graph: nx.DiGraph) -> set:
    return {n for n, on in graph.nodes(data="on_path") if on}


def path_edges(graph: nx.DiGraph) -> set:
    return {(u, v) for u, v, on in graph.edges(data="on_path") if on}


def write_graphml(graph: nx.DiGraph, path) -> None:
    nx.write_graphml(graph, path)


def write_dot(graph: nx.DiGraph, path) -> None:
    """Graphviz DOT text, written directly (no pydot or pygraphviz needed)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_dot(graph))


def to_dot(graph: nx.DiGraph) -> str:
    lines = [
        f"digraph {_quote(graph.name or 'G')} {{",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]
    for n, data in graph.nodes(data=True):
        attrs = {"label": _dot_label(data.get("label", str(n)))}
        if data.get("initial"):
            attrs["peripheries"] = "2"
        if data.get("on_path"):
            attrs.update(color=PATH_COLOR, penwidth="2.5", fontcolor=PATH_COLOR)
        attrs["on_path"] = str(bool(data.get("on_path"))).lower()
        lines.append(f"  {_quote(n)} [{_attrs(attrs)}];")
    for u, v, data in graph.edges(data=True):
        attrs = {"label": _escape(data.get("label", "")), "tooltip": _escape(data.get("description", ""))}
        if data.get("on_path"):
            attrs.update(color=PATH_COLOR, penwidth="2.5", fontcolor=PATH_COLOR)
        attrs["on_path"] = str(bool(data.get("on_path"))).lower()
        lines.append(f"  {_quote(u)} -> {_quote(v)} [{_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mark(graph: nx.DiGraph, index: dict, model, trace) -> None:
    states = [trace.initial] + [s.state for s in trace.steps]
    ids = []
    for k, state in enumerate(states):
        if state not in index:
            raise ValueError(f"the highlighted trace leaves the explored graph at step {k}: not a trace of this model")
        ids.append(index[state])
    for k, nid in enumerate(ids):
        data = graph.nodes[nid]
        data["on_path"] = True
        if data["path_step"] < 0:
            data["path_step"] = k
    for k, step in enumerate(trace.steps):
        u, v = ids[k], ids[k + 1]
        if not graph.has_edge(u, v) or step.action_id not in graph.edges[u, v]["label"].split(", "):
            raise ValueError(f"step {k + 1} of the highlighted trace ({step.action_id}) is not a step of this model")
        data = graph.edges[u, v]
        data["on_path"] = True
        if data["path_step"] < 0:
            data["path_step"] = k + 1
    graph.graph["highlight"] = trace.schedule


def _node_label(nid: int, names, base: dict, now: dict) -> str:
    changes = diff(names, tuple(base.get(n) for n in names), tuple(now.get(n) for n in names))
    lines = [f"s{nid}"]
    for prefix, items in group_changes(changes):
        body = ", ".join(f"{leaf(c.name)}={show(c.new)}" for c in items)
        lines.append(f"{prefix}: {body}" if prefix else body)
    return "\n".join(lines)


def _escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _dot_label(text: str) -> str:
    """Left-aligned lines in a Graphviz label (`\\l` ends a left-justified line)."""
    return "\\l".join(_escape(line) for line in str(text).split("\n")) + "\\l"


def _quote(value) -> str:
    return '"' + _escape(value) + '"'


def _attrs(attrs: dict) -> str:
    return ", ".join(f'{k}="{v}"' for k, v in attrs.items())
