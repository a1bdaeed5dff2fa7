"""Counterexample viewers: terminal, HTML, Markdown, JSON, ITF, and the explored state graph.

Every format draws the same `layout.TraceView`, so they show the same steps, the same
changed fields, the same decisive step and the same verdict. `render(result, prop, format)`
draws straight from a CheckResult; the `trace_to_*` functions take a model and a trace.
"""

# `render` is imported here, not on first use: a submodule of the same name would otherwise
# shadow the function once anything imported it. The rest is imported on first use (PEP 562):
# the graph exports need networkx, which a counterexample on the terminal does not.
from prefetch_check.explorer.view.render import render, render_view, result_view

_LAZY = {
    "state_graph": "graph_export", "write_dot": "graph_export", "write_graphml": "graph_export",
    "trace_to_html": "html", "trace_to_itf": "itf", "trace_to_json": "json_export",
    "trace_to_markdown": "markdown", "render_trace": "terminal",
}

__all__ = [
    "render",
    "render_view",
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


from prefetch_check.explorer.lazy import lazy_names  # noqa: E402 (after the names it serves)

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
