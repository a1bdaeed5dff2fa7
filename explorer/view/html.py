"""A counterexample as one self-contained HTML page: works offline, steps forward and back.

Everything is inline (CSS, script, data): the page can be attached to a CI run or a
bug report and opened anywhere. Every step is in the static markup (a reader without
JavaScript still sees the whole trace); the script adds the stepping, the cursor, the
keyboard focus and the full state of the selected step.

The steps are an ARIA grid laid out with CSS grid tracks that only shrink (`minmax(0, fr)`),
so the page is never wider than the window. Two layouts of the same markup, as in the
terminal: `columns` writes each step into its thread's column; `lanes` (compact, for many
groups of actors) gives every thread a lane one letter wide with a dot where it acts and writes the
step in one wide column. `auto` picks by the width the page actually has; a button switches.
"""

from __future__ import annotations

import json
from html import escape

from prefetch_check.explorer.view.layout import TraceView, build_view, clauses, group_changes, jsonable, leaf, result_spans, show

GROUP_COLORS = ("#0e7490", "#a21caf", "#15803d", "#b45309", "#1d4ed8", "#be123c")
LAYOUTS = ("auto", "columns", "lanes")

# Grid tracks in px (the script computes the auto layout from the same numbers).
NUM_PX = 40  # the step number
IDLE_PX = 34  # columns layout: a thread that never acts in this trace
LANE_PX = 18  # lanes layout: every thread
MIN_COLUMN_PX = 165  # columns layout: narrower than this and a description wraps into a ribbon
CHANGES_SHARE = 13  # the changed-fields column, in tenths of an acting thread's column
STEPS_PX_AT_1400 = 1000  # the steps pane in a 1400 px window: the layout a reader without script gets


def trace_to_html(model, trace, prop_result, title: str, layout: str = "auto") -> str:
    return view_to_html(build_view(model, trace, prop_result, title), layout)


def choose_layout(view: TraceView, width: float = STEPS_PX_AT_1400) -> str:
    """`columns` when every acting thread's column gets at least MIN_COLUMN_PX of `width`."""
    acting, idle = _acting(view)
    per_column = (width - NUM_PX - IDLE_PX * idle) * 10 / (10 * acting + CHANGES_SHARE)
    return "columns" if per_column >= MIN_COLUMN_PX else "lanes"


def view_to_html(view: TraceView, layout: str = "auto") -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    acting, idle = _acting(view)
    data = {
        "names": list(view.field_names),
        "states": [[show(jsonable(v)) for v in state] for state in view.states],
        "steps": len(view.rows),
        "start": view.key_step,
        "layout": layout,
        "acting": acting,
        "fixed_px": NUM_PX + IDLE_PX * idle,
        "min_column_px": MIN_COLUMN_PX,
        "changes_share": CHANGES_SHARE,
    }
    # `<` escaped so that no text in the data can close the script element
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    mode = choose_layout(view) if layout == "auto" else layout
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(view.title)}</title>",
        f"<style>{_css(view)}</style>",
        "</head><body>",
        _header(view),
        _controls(view, mode),
        "<main>",
        f'<div class="pane" id="pane"><section class="steps" aria-label="steps">{_grid(view, mode)}</section>{_footer(view)}</div>',
        '<aside class="state" id="state" aria-labelledby="state-h">'
        '<h2 id="state-h">State <span id="state-title"></span></h2>'
        '<p class="legend"><span class="chg">changed by this step</span></p>'
        '<table id="fields"><tbody></tbody></table></aside>',
        "</main>",
        f'<script id="trace-data" type="application/json">{payload}</script>',
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _acting(view: TraceView) -> tuple[int, int]:
    acting = len({row.column for row in view.rows})
    return acting, len(view.columns) - acting


def _header(view: TraceView) -> str:
    kind = {"VIOLATED": "bad", "VERIFIED": "good"}.get(view.verdict, "other")
    out = ['<header class="top">']
    out.append(f'<h1><span class="verdict {kind}">{escape(view.verdict)}</span> {escape(view.title)}</h1>')
    if view.prop_name:
        out.append(f'<p class="prop"><code>{escape(view.prop_name)}</code> {escape(view.prop_description)}</p>')
    if view.reason:
        out.append(f'<p class="why"><b>Why:</b> {escape(view.reason)}</p>')
    decisive = [r for r in view.rows if r.decisive]
    if decisive:
        r = decisive[0]
        col = view.columns[r.column]
        out.append(
            f'<p class="meta">Decisive step: <a href="#step={r.number}" class="jump" data-to="{r.number}">{r.number}</a> '
            f"({escape(col.label)}, <code>{escape(r.action_id)}</code>)</p>"
        )
    if view.cycle_start is not None:
        out.append(f'<p class="lasso">&#10227; Lasso: {escape(view.cycle_text)}</p>')
    out.append("</header>")
    return "\n".join(out)


def _controls(view: TraceView, mode: str) -> str:
    n = len(view.rows)
    pressed = "true" if mode == "lanes" else "false"
    kind = {"VIOLATED": "bad", "VERIFIED": "good"}.get(view.verdict, "other")
    return (
        '<nav class="controls" role="toolbar" aria-label="step through the trace" aria-controls="trace">'
        f'<span class="verdict {kind} small" title="{escape(view.prop_description)}">{escape(view.verdict)}</span>'
        f'<code class="propname">{escape(view.prop_name)}</code>'
        '<button type="button" id="first" aria-label="first: the initial state (Home)" title="Home">&laquo; first</button>'
        '<button type="button" id="prev" aria-label="back one step (left arrow)" title="&#8592;">&#9664; back</button>'
        f'<span id="pos" class="pos" role="status" aria-live="polite">step {view.key_step} of {n}</span>'
        '<button type="button" id="next" aria-label="forward one step (right arrow)" title="&#8594;">forward &#9654;</button>'
        '<button type="button" id="last" aria-label="last step (End)" title="End">last &raquo;</button>'
        f'<button type="button" id="layout" class="toggle" aria-pressed="{pressed}" '
        'title="one narrow lane per thread and the step in one wide column (L)">compact lanes</button>'
        '<span class="hint" id="keys">Tab to the steps, &#8593; &#8595; or &#8592; &#8594; step, Home/End jump, L lanes</span>'
        "</nav>"
    )


def _grid(view: TraceView, mode: str) -> str:
    n = len(view.columns)
    acting = {row.column for row in view.rows}
    out = [
        f'<div id="trace" class="trace {mode}" role="grid" aria-readonly="true" '
        f'aria-label="{escape(view.title)}: one row per step" aria-describedby="keys">'
    ]
    out.append('<div class="head" role="rowgroup">')
    if any(c.group is not None for c in view.columns):
        cells = ['<div class="hc num" role="columnheader" aria-hidden="true"></div>']
        start = 0
        for g, (group, cols) in enumerate(view.groups):
            short = view.columns[cols[0]].group_short or group or ""
            cells.append(
                f'<div class="hc group g{g % len(GROUP_COLORS)}" role="columnheader" '
                f'style="grid-column:{start + 2} / span {len(cols)}" title="{escape(group or "")}">'
                f'<span class="long">{escape(group or "")}</span><span class="short">{escape(short)}</span></div>'
            )
            start += len(cols)
        out.append(f'<div class="row groups" role="row">{"".join(cells)}</div>')
    cells = ['<div class="hc num" role="columnheader">#</div>']
    for i, col in enumerate(view.columns):
        idle = "" if i in acting else " idle"
        long_name = col.name if i in acting else col.short
        cells.append(
            f'<div class="hc thread c{i} g{_gi(view, i)}{idle}" role="columnheader" title="{escape(col.label)}">'
            f'<span class="long">{escape(long_name)}</span><span class="short">{escape(col.lane or col.short)}</span></div>'
        )
    cells.append('<div class="hc deschead" role="columnheader">step</div>')
    cells.append('<div class="hc chg" role="columnheader">changed fields</div>')
    out.append(f'<div class="row threads" role="row">{"".join(cells)}</div>')
    out.append("</div>")

    out.append('<div class="body" role="rowgroup">')
    out.append(
        '<div class="row step init" role="row" data-step="0" tabindex="-1" aria-selected="false">'
        '<div class="num" role="gridcell">0</div>'
        + _idle_lanes(view, None)
        + '<div class="desc initcell" role="gridcell">initial state</div><div class="chg" role="gridcell"></div></div>'
    )
    for row in view.rows:
        if row.cycle_start:
            out.append(
                f'<div class="row cycle-mark" role="row"><div class="mark" role="gridcell">&#10227; cycle starts here: '
                f"{escape(view.cycle_text)}</div></div>"
            )
        cls = ["row", "step"] + (["decisive"] if row.decisive else []) + (["cycle"] if row.in_cycle else [])
        col = view.columns[row.column]
        out.append(
            f'<div class="{" ".join(cls)}" role="row" data-step="{row.number}" tabindex="-1" aria-selected="false" '
            f'title="{escape(row.action_id)}">'
            f'<div class="num" role="gridcell">{row.number}</div>'
            + _idle_lanes(view, row.column)
            + f'<div class="desc d{row.column} g{_gi(view, row.column)}" role="gridcell">{_description(view, row, col.label)}</div>'
            + f'<div class="chg" role="gridcell">{_changes(row.changes)}</div></div>'
        )
    if view.cycle_start is not None:
        out.append(
            f'<div class="row cycle-mark" role="row"><div class="mark" role="gridcell">&#10227; back to step '
            f"{view.cycle_start + 1}, forever</div></div>"
        )
    out.append("</div></div>")
    return "\n".join(out)


def _idle_lanes(view: TraceView, acting) -> str:
    """One decorative cell per thread: the lane lines, and the dot of the acting thread in lanes layout."""
    cells = []
    for i in range(len(view.columns)):
        first = " first" if i == 0 or view.columns[i - 1].group != view.columns[i].group else ""
        if i == acting:
            cells.append(f'<div class="lane on c{i} g{_gi(view, i)}{first}" aria-hidden="true">&#9679;</div>')
        else:
            cells.append(f'<div class="lane c{i}{first}" aria-hidden="true"></div>')
    return "".join(cells)


def _description(view: TraceView, row, who: str) -> str:
    lines = []
    for clause in clauses(row.description):
        lines.append("".join(f'<mark class="res">{escape(t)}</mark>' if r else escape(t) for t, r in result_spans(clause)))
    text = f'<div class="aid"><span class="who">{escape(who)} </span>{escape(row.action_id)}</div>' + "<br>".join(lines)
    if row.decisive:
        text += f'<div class="fails">&#9664; {escape(view.prop_name or "property")} fails here</div>'
    return text


def _changes(changes) -> str:
    out = []
    for prefix, items in group_changes(changes):
        body = ", ".join(
            f'<span class="f">{escape(leaf(c.name))}</span> <s>{escape(show(c.old))}</s>&#8594;<b>{escape(show(c.new))}</b>' for c in items
        )
        out.append(f'<div><span class="pfx">{escape(prefix)}</span> {body}</div>' if prefix else f"<div>{body}</div>")
    return "".join(out)


def _footer(view: TraceView) -> str:
    return (
        '<footer><h2>Schedule <button type="button" id="copy">copy</button></h2>'
        f'<pre id="schedule">{escape(view.schedule)}</pre>'
        "<p class=\"hint\">The schedule replays this trace step by step through the model.</p></footer>"
    )


def _gi(view: TraceView, column: int) -> int:
    groups = list(dict.fromkeys(c.group for c in view.columns))
    return groups.index(view.columns[column].group) % len(GROUP_COLORS)


def _css(view: TraceView) -> str:
    """The colours, and the grid tracks of both layouts for this trace's threads."""
    n = len(view.columns)
    acting = {row.column for row in view.rows}
    threads = " ".join("minmax(0,10fr)" if i in acting else f"{IDLE_PX}px" for i in range(n))
    rules = [f".g{i}{{--g:{c}}}" for i, c in enumerate(GROUP_COLORS)]
    rules.append(f".columns .row{{grid-template-columns:{NUM_PX}px {threads} 0 minmax(0,{CHANGES_SHARE}fr)}}")
    rules.append(f".lanes .row{{grid-template-columns:{NUM_PX}px repeat({n},{LANE_PX}px) minmax(0,1fr) minmax(0,1fr)}}")
    rules += [f".c{i}{{grid-column:{i + 2}}}.columns .d{i}{{grid-column:{i + 2}}}" for i in range(n)]
    rules.append(f".lanes .desc{{grid-column:{n + 2}}}.deschead{{grid-column:{n + 2}}}.chg{{grid-column:{n + 3}}}")
    rules.append(f".columns .init .desc{{grid-column:2 / span {n}}}")
    return "".join(rules) + _CSS


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;background:#f6f7f9}
/* The page itself never scrolls: the header (verdict, property, why) and the controls stay on
   screen, and the steps scroll in their own pane, which opens at the decisive step. */
body{display:flex;flex-direction:column;height:100vh;overflow:hidden}
header.top,.controls{flex:none}
code,pre,.aid,.chg,#fields{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
header.top{padding:12px 24px 8px;background:#fff;border-bottom:1px solid #e5e7eb}
h1{font-size:20px;margin:0 0 8px;overflow-wrap:anywhere}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-size:14px;vertical-align:middle;letter-spacing:.04em}
.verdict.bad{background:#dc2626}.verdict.good{background:#16a34a}.verdict.other{background:#ca8a04}
.prop,.why,.meta,.lasso{margin:4px 0;overflow-wrap:anywhere}
.why{color:#991b1b}.lasso{color:#0e7490;font-weight:600}
.controls{z-index:4;display:flex;flex-wrap:wrap;gap:8px;align-items:center;padding:8px 24px;background:#111827;color:#f9fafb}
.controls button{font:inherit;padding:4px 12px;border:1px solid #4b5563;border-radius:4px;background:#1f2937;color:#f9fafb;cursor:pointer}
.controls button:hover:not(:disabled){background:#374151}.controls button:disabled{opacity:.4;cursor:default}
.controls button[aria-pressed=true]{background:#f59e0b;border-color:#f59e0b;color:#111827}
button:focus-visible,a:focus-visible{outline:3px solid #60a5fa;outline-offset:2px}
.verdict.small{font-size:12px;padding:1px 8px}.propname{margin-right:8px;color:#e5e7eb}
.pos{min-width:110px;text-align:center;font-weight:600}
.hint{color:#9ca3af;font-size:12px;margin-left:8px}
main{flex:1 1 auto;min-height:0;display:grid;grid-template-columns:minmax(0,1fr) 300px;grid-template-rows:minmax(0,1fr);gap:16px;padding:12px 24px 0}
.pane{min-width:0;min-height:0;overflow:auto;scroll-padding-top:var(--head,40px);scroll-padding-bottom:8px}
.steps{min-width:0;background:#fff;border:1px solid #e5e7eb;border-radius:6px}
.state{align-self:start;min-height:0;max-height:calc(100% - 12px);overflow:auto;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px}
/* too narrow for two columns, too low for a fixed header, or on paper: one page that scrolls */
@media (max-width:900px),(max-height:520px),print{body{display:block;height:auto;overflow:visible}
  main{display:block;padding:12px 24px}.pane{overflow:visible}.state{max-height:none;margin-top:16px}
  .controls{position:sticky;top:0}.head{top:var(--nav,48px)!important}html{scroll-padding-top:var(--sticky,110px)}}
.state h2{font-size:15px;margin:4px 0}
.legend{margin:0 0 6px;font-size:12px}
.trace .row{display:grid;min-width:0}
.trace .row>*{min-width:0;overflow-wrap:anywhere;grid-row:1}
.head{position:sticky;top:0;z-index:3;background:#f9fafb;border-bottom:1px solid #e5e7eb}
.hc{font-weight:600;padding:6px 8px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.hc.num{grid-column:1;text-align:right;color:#6b7280}
.hc.group{text-align:center;color:var(--g);border-bottom:3px solid var(--g)}
.hc.thread{color:var(--g)}
.hc .short{display:none}
.lanes .hc .long{display:none}.lanes .hc .short{display:inline}
.lanes .hc.thread,.lanes .hc.group{padding:6px 0;text-align:center;overflow:visible}
.columns .hc.thread.idle{padding:6px 2px;text-align:center;font-weight:400}
.columns .deschead{display:none}
.body .row{border-bottom:1px solid #f1f5f9}
.num{grid-column:1;text-align:right;color:#6b7280;padding:6px 8px}
.lane{border-left:1px solid #f1f5f9}
.lane.first{border-left:1px solid #d1d5db}
.lane.on{color:var(--g);text-align:center;font-size:12px;padding-top:7px}
.columns .lane.on{display:none}
.desc{padding:6px 8px}
.columns .desc{border-left:3px solid var(--g);background:color-mix(in srgb,var(--g) 6%,#fff)}
.lanes .desc{border-left:1px solid #d1d5db}
.desc.initcell{color:#6b7280;font-style:italic;background:none;border-left:0}
.aid{font-size:11px;color:var(--g);font-weight:600}
.who{display:none}.lanes .who{display:inline;font-family:system-ui,sans-serif}
.chg{font-size:12px;padding:6px 8px;border-left:1px solid #f1f5f9}
.hc.chg{font-size:14px;font-family:inherit}
.chg s{color:#9ca3af}.chg .f{color:#64748b}.chg b{color:#15803d}.pfx{font-weight:700;color:#374151}
mark.res{background:#fde68a;padding:0 2px;border-radius:2px;font-weight:700}
.decisive>*{background:#fef2f2}
.decisive mark.res{background:#dc2626;color:#fff}
.fails{color:#dc2626;font-weight:700;margin-top:4px}
.cycle .num{color:#0e7490;font-weight:700;box-shadow:inset 3px 0 #0e7490}
.cycle-mark .mark{grid-column:1 / -1;background:#ecfeff;color:#0e7490;font-weight:600;padding:4px 8px}
.row.step{cursor:pointer}
.row.step.future>*{opacity:.35}
.row.step.current>*{background:#fffbeb}
.row.step.current .num{box-shadow:inset 4px 0 #f59e0b;color:#111827;font-weight:700}
.row.step:focus{outline:none}
.row.step:focus-visible{outline:3px solid #2563eb;outline-offset:-3px;position:relative;z-index:1}
#fields{border-collapse:collapse;width:100%;font-size:12px;table-layout:fixed}
#fields td{padding:1px 4px;vertical-align:top;overflow-wrap:anywhere}
#fields td:first-child{width:45%}
#fields tr.pfx td{padding-top:8px;font-weight:700;color:#374151;border-bottom:1px solid #e5e7eb}
#fields tr.chg td{background:#fef9c3}
#fields s{color:#9ca3af}
.legend .chg{background:#fef9c3;padding:0 4px;border:0;font-family:inherit}
footer{padding:0 0 24px}
footer h2{font-size:15px}
footer button{font:inherit;font-size:12px;padding:1px 8px;margin-left:8px;cursor:pointer}
#schedule{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:10px}
"""

_SCRIPT = r"""
(function(){
  var data = JSON.parse(document.getElementById('trace-data').textContent);
  var grid = document.getElementById('trace');
  var rows = Array.prototype.slice.call(grid.querySelectorAll('.row.step'));
  var pos = document.getElementById('pos');
  var fields = document.querySelector('#fields tbody');
  var title = document.getElementById('state-title');
  var toggle = document.getElementById('layout');
  var nav = document.querySelector('.controls'), head = grid.querySelector('.head');
  var current = -1, auto = data.layout === 'auto';
  function esc(t){ var d = document.createElement('span'); d.textContent = t; return d.innerHTML; }
  function showState(i){
    if (!data.names.length) { document.getElementById('state').style.display = 'none'; return; }
    var now = data.states[i], before = i > 0 ? data.states[i-1] : now, html = [], last = null;
    for (var k = 0; k < data.names.length; k++) {
      var name = data.names[k], cut = name.lastIndexOf('.');
      var prefix = cut < 0 ? '' : name.slice(0, cut), leaf = cut < 0 ? name : name.slice(cut + 1);
      if (prefix !== last) { html.push('<tr class="pfx"><td colspan="2">' + esc(prefix) + '</td></tr>'); last = prefix; }
      var changed = now[k] !== before[k];
      var value = changed ? '<s>' + esc(before[k]) + '</s> &#8594; <b>' + esc(now[k]) + '</b>' : esc(now[k]);
      html.push('<tr' + (changed ? ' class="chg"' : '') + '><td>' + esc(leaf) + '</td><td>' + value + '</td></tr>');
    }
    fields.innerHTML = html.join('');
    title.textContent = i === 0 ? '(initial)' : 'after step ' + i;
  }
  function focused(){ return grid.contains(document.activeElement); }
  // how: {focus: move keyboard focus to the row, scroll: 'nearest' | 'center' | false}
  function go(i, how){
    how = how || {};
    i = Math.max(0, Math.min(data.steps, i));
    current = i;
    rows.forEach(function(r){
      var s = +r.getAttribute('data-step');
      r.classList.toggle('current', s === i);
      r.classList.toggle('future', s > i);
      r.setAttribute('aria-selected', s === i ? 'true' : 'false');
      r.tabIndex = s === i ? 0 : -1;
    });
    pos.textContent = 'step ' + i + ' of ' + data.steps;
    document.getElementById('first').disabled = document.getElementById('prev').disabled = i === 0;
    document.getElementById('next').disabled = document.getElementById('last').disabled = i === data.steps;
    showState(i);
    var row = rows[i];
    if (how.focus) row.focus({preventScroll: true});
    if (how.scroll && row.scrollIntoView) row.scrollIntoView({block: how.scroll});
    if (history.replaceState) history.replaceState(null, '', '#step=' + i);
  }
  function step(i){ go(i, {focus: focused(), scroll: 'nearest'}); }
  function setMode(mode){
    grid.classList.toggle('lanes', mode === 'lanes');
    grid.classList.toggle('columns', mode !== 'lanes');
    toggle.setAttribute('aria-pressed', mode === 'lanes' ? 'true' : 'false');
    measure();
  }
  function choose(){
    if (!auto) return;
    var per = (grid.clientWidth - data.fixed_px) * 10 / (10 * data.acting + data.changes_share);
    setMode(per >= data.min_column_px ? 'columns' : 'lanes');
  }
  function measure(){
    var n = nav.offsetHeight, root = document.documentElement.style;
    root.setProperty('--nav', n + 'px');
    root.setProperty('--head', (head.offsetHeight + 8) + 'px');  // over the pane's scrolled steps
    root.setProperty('--sticky', (n + head.offsetHeight + 8) + 'px');  // when the page scrolls (narrow, low, print)
  }
  document.getElementById('first').onclick = function(){ go(0, {scroll: 'nearest'}); };
  document.getElementById('prev').onclick = function(){ go(current - 1, {scroll: 'nearest'}); };
  document.getElementById('next').onclick = function(){ go(current + 1, {scroll: 'nearest'}); };
  document.getElementById('last').onclick = function(){ go(data.steps, {scroll: 'nearest'}); };
  toggle.onclick = function(){ auto = false; setMode(grid.classList.contains('lanes') ? 'columns' : 'lanes'); go(current, {scroll: 'nearest'}); };
  rows.forEach(function(r){ r.onclick = function(){ go(+r.getAttribute('data-step'), {focus: true}); }; });
  Array.prototype.forEach.call(document.querySelectorAll('a.jump'), function(a){
    a.onclick = function(e){ e.preventDefault(); go(+a.getAttribute('data-to'), {focus: true, scroll: 'center'}); };
  });
  document.addEventListener('keydown', function(e){
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var k = e.key;
    if (k === 'ArrowRight' || k === 'ArrowDown' || k === 'j') step(current + 1);
    else if (k === 'ArrowLeft' || k === 'ArrowUp' || k === 'k') step(current - 1);
    else if (k === 'PageDown') step(current + 10);
    else if (k === 'PageUp') step(current - 10);
    else if (k === 'Home') step(0);
    else if (k === 'End') step(data.steps);
    else if ((k === 'Enter' || k === ' ') && focused()) step(current);
    else if (k === 'l' || k === 'L') { toggle.click(); }
    else return;
    e.preventDefault();
  });
  document.getElementById('copy').onclick = function(){
    var text = document.getElementById('schedule').textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) { navigator.clipboard.writeText(text); }
    else { var r = document.createRange(); r.selectNodeContents(document.getElementById('schedule'));
           var s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }
  };
  window.addEventListener('resize', function(){ choose(); measure(); });
  choose();
  measure();
  var m = /step=(\d+)/.exec(location.hash);
  go(m ? +m[1] : data.start, {scroll: 'center'});
  document.body.setAttribute('data-ready', 'true');
})();
"""
