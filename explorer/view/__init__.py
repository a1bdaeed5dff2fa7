"""Counterexample viewers: terminal, HTML, Markdown, JSON, ITF, and the explored state graph.

Every format draws the same `layout.TraceView`, so they show the same steps, the same
changed fields, the same decisive step and the same verdict. `render(result, prop, format)`
draws straight from a CheckResult; the `trace_to_*` functions take a model and a trace.
"""

from prefetch_check.explorer.view.graph_export import state_graph, write_dot, write_graphml
from prefetch_check.explorer.view.html import trace_to_html
from prefetch_check.explorer.view.itf import trace_to_itf
from prefetch_check.explorer.view.json_export import trace_to_json
from prefetch_check.explorer.view.markdown import trace_to_markdown
from prefetch_check.explorer.view.render import render, result_view
from prefetch_check.explorer.view.terminal import render_trace

__all__ = [
    "render",
    "result_view",
    "render_trace",
    "trace_to_itf",
    "trace_to_html",
    "trace_to_markdown",
    "trace_to_json",
    "state_graph",
    "write_dot",
    "write_graphml",
]
