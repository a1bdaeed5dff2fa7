"""From a check's result to any trace format in one call: `render(result, "no_early_acceptance")`.

A `CheckResult` already holds the property's verdict, reason and trace, and (when
prefetch_check.check made it) the model whose states the trace holds; the per-format
functions (`trace_to_html(model, trace, prop_result, title)`) stay for callers that have
only a trace.
"""

from __future__ import annotations

import json
from typing import Optional

from rich.console import Console

from prefetch_check.explorer.result import VIOLATED, CheckResult
from prefetch_check.explorer.view.html import view_to_html
from prefetch_check.explorer.view.itf import view_to_itf
from prefetch_check.explorer.view.json_export import view_to_json
from prefetch_check.explorer.view.layout import TraceView, build_view
from prefetch_check.explorer.view.markdown import view_to_markdown
from prefetch_check.explorer.view.terminal import print_view

FORMATS = ("terminal", "html", "markdown", "json", "itf")


def pick_property(result: CheckResult, prop: Optional[str] = None):
    """The PropertyResult to show: `prop`, or the first one violated; ValueError saying why not."""
    if prop is None:
        if not result.violated:
            verdicts = ", ".join(f"{n} {r.verdict}" for n, r in result.results.items())
            raise ValueError(f"{result.name}: no property is violated, so there is no counterexample ({verdicts})")
        prop = result.violated[0]
    if prop not in result.results:
        raise ValueError(f"{result.name}: no property {prop!r}; the properties are {', '.join(result.results)}")
    pr = result.results[prop]
    if pr.verdict != VIOLATED or pr.trace is None:
        why = f": {pr.reason}" if pr.reason else ""
        raise ValueError(f"{result.name}: {prop} is {pr.verdict}{why}; there is no counterexample to show")
    return pr


def result_view(result: CheckResult, prop: Optional[str] = None, title: Optional[str] = None, model=None) -> TraceView:
    """The TraceView of one property's counterexample; `model` only for a result that has none."""
    pr = pick_property(result, prop)
    model = model if model is not None else result.model
    if model is None:
        raise ValueError(
            f"{result.name}: this result carries no model to describe its trace's steps (results lose it "
            f"when they cross a process boundary): pass model=, e.g. prefetch_check.build_model(config, predicate)"
        )
    return build_view(model, pr.trace, pr, title or f"{result.name} · {pr.name}")


def render(result: CheckResult, prop: Optional[str] = None, format: str = "terminal", *, title: Optional[str] = None,
           model=None, console=None, layout: str = "auto"):
    """Draw the counterexample of `prop` (default: the first property violated).

    `terminal` prints to `console` (a rich Console; default: a new one on stdout) and returns
    None; `html`, `markdown`, `json` and `itf` return the text. `layout` is the terminal's or
    the HTML page's first layout: auto, columns or lanes.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return render_view(result_view(result, prop, title, model), format, console=console, layout=layout)


def render_view(view: TraceView, format: str = "terminal", *, console=None, layout: str = "auto"):
    """Draw a TraceView (any trace's: `layout.build_view(model, trace, prop_result, title)`), as `render`."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if format == "terminal":
        print_view(console or Console(), view, layout)
        return None
    if format == "html":
        return view_to_html(view, layout)
    if format == "markdown":
        return view_to_markdown(view)
    doc = view_to_json(view) if format == "json" else view_to_itf(view)
    return json.dumps(doc, indent=2) + "\n"
