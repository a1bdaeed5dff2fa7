"""Counterexample viewers: terminal, HTML, Markdown, JSON, and the explored state graph.

Every format draws the same `layout.TraceView`, so they show the same steps, the same
changed fields, the same decisive step and the same verdict.
"""

from prefetch_check.explorer.view.graph_export import state_graph, write_dot, write_graphml
from prefetch_check.explorer.view.html import trace_to_html
from prefetch_check.explorer.view.json_export import trace_to_json
from prefetch_check.explorer.view.markdown import trace_to_markdown
from prefetch_check.explorer.view.terminal import render_trace

__all__ = [
    "render_trace",
    "trace_to_html",
    "trace_to_markdown",
    "trace_to_json",
    "state_graph",
    "write_dot",
    "write_graphml",
]
