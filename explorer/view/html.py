"""A counterexample as one self-contained HTML page: works offline, steps forward and back.

Everything is inline (CSS, script, data): the page can be attached to a CI run or a
bug report and opened anywhere. Every step is in the static markup (a reader without
JavaScript still sees the whole trace); the script adds the stepping, the cursor and
the full state of the selected step.
"""

from __future__ import annotations

import json
from html import escape

from prefetch_check.explorer.view.layout import TraceView, build_view, clauses, group_changes, jsonable, leaf, result_spans, show

GROUP_COLORS = ("#0e7490", "#a21caf", "#15803d", "#b45309", "#1d4ed8", "#be123c")


def trace_to_html(model, trace, prop_result, title: str) -> str:
    return view_to_html(build_view(model, trace, prop_result, title))


def view_to_html(view: TraceView) -> str:
    data = {
        "names": list(view.field_names),
        "states": [[show(jsonable(v)) for v in state] for state in view.states],
        "steps": len(view.rows),
        "start": len(view.rows),
    }
    # `<` escaped so that no text in the data can close the script element
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(view.title)}</title>",
        f"<style>{_css(view)}</style>",
        "</head><body>",
        _header(view),
        _controls(view),
        '<main><section class="steps">',
        _table(view),
        "</section>",
        '<aside class="state" id="state"><h2>State <span id="state-title"></span></h2>'
        '<p class="legend"><span class="chg">changed by this step</span></p>'
        '<table id="fields"><tbody></tbody></table></aside>',
        "</main>",
        _footer(view),
        f'<script id="trace-data" type="application/json">{payload}</script>',
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


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
        out.append(f'<p class="meta">Decisive step: <b>{r.number}</b> ({escape(col.label)}, <code>{escape(r.action_id)}</code>)</p>')
    if view.cycle_start is not None:
        out.append(f'<p class="lasso">&#10227; Lasso: {escape(view.cycle_text)}</p>')
    out.append("</header>")
    return "\n".join(out)


def _controls(view: TraceView) -> str:
    return (
        '<nav class="controls">'
        '<button id="first" title="first (Home)">&laquo; first</button>'
        '<button id="prev" title="back (&#8592;)">&#9664; back</button>'
        f'<span id="pos" class="pos">step {len(view.rows)} of {len(view.rows)}</span>'
        '<button id="next" title="forward (&#8594;)">forward &#9654;</button>'
        '<button id="last" title="last (End)">last &raquo;</button>'
        '<span class="hint">&#8592; &#8594; keys step, Home/End jump, click a row to select it</span>'
        "</nav>"
    )


def _table(view: TraceView) -> str:
    n = len(view.columns)
    grouped = any(c.group is not None for c in view.columns)
    head = ['<table class="trace"><thead>']
    if grouped:
        head.append('<tr><th rowspan="2" class="num">#</th>')
        for g, (group, cols) in enumerate(view.groups):
            head.append(f'<th colspan="{len(cols)}" class="group g{g % len(GROUP_COLORS)}">{escape(group or "")}</th>')
        head.append('<th rowspan="2" class="chg-h">changed fields</th></tr><tr>')
        for i, col in enumerate(view.columns):
            head.append(f'<th class="actor g{_gi(view, i)}">{escape(col.name)}</th>')
        head.append("</tr>")
    else:
        head.append('<tr><th class="num">#</th>')
        head += [f'<th class="actor g{_gi(view, i)}">{escape(c.name)}</th>' for i, c in enumerate(view.columns)]
        head.append('<th class="chg-h">changed fields</th></tr>')
    head.append("</thead><tbody>")
    rows = [f'<tr class="step init" data-step="0"><td class="num">0</td><td colspan="{n}" class="initcell">initial state</td><td></td></tr>']
    for row in view.rows:
        if row.cycle_start:
            rows.append(f'<tr class="cycle-mark"><td class="num">&#10227;</td><td colspan="{n + 1}">cycle starts here: {escape(view.cycle_text)}</td></tr>')
        cls = ["step"] + (["decisive"] if row.decisive else []) + (["cycle"] if row.in_cycle else [])
        cells = [f'<td class="num">{row.number}</td>']
        for i in range(n):
            if i == row.column:
                cells.append(f'<td class="act g{_gi(view, i)}">{_description(view, row)}</td>')
            else:
                cells.append('<td class="idle"></td>')
        cells.append(f'<td class="chg">{_changes(row.changes)}</td>')
        rows.append(f'<tr class="{" ".join(cls)}" data-step="{row.number}" title="{escape(row.action_id)}">{"".join(cells)}</tr>')
    if view.cycle_start is not None:
        rows.append(f'<tr class="cycle-mark"><td class="num">&#10227;</td><td colspan="{n + 1}">back to step {view.cycle_start + 1}, forever</td></tr>')
    return "".join(head) + "\n" + "\n".join(rows) + "\n</tbody></table>"


def _description(view: TraceView, row) -> str:
    lines = []
    for clause in clauses(row.description):
        lines.append("".join(f'<mark class="res">{escape(t)}</mark>' if r else escape(t) for t, r in result_spans(clause)))
    text = f'<div class="aid">{escape(row.action_id)}</div>' + "<br>".join(lines)
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
        '<footer><h2>Schedule <button id="copy">copy</button></h2>'
        f'<pre id="schedule">{escape(view.schedule)}</pre>'
        "<p class=\"hint\">The schedule replays this trace step by step through the model.</p></footer>"
    )


def _gi(view: TraceView, column: int) -> int:
    groups = list(dict.fromkeys(c.group for c in view.columns))
    return groups.index(view.columns[column].group) % len(GROUP_COLORS)


def _css(view: TraceView) -> str:
    colors = "".join(
        f".g{i}{{--g:{c}}}" for i, c in enumerate(GROUP_COLORS)
    )
    return colors + _CSS


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;background:#f6f7f9}
code,pre,.aid,.chg,#fields{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
header.top{padding:18px 24px 10px;background:#fff;border-bottom:1px solid #e5e7eb}
h1{font-size:20px;margin:0 0 8px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-size:14px;vertical-align:middle;letter-spacing:.04em}
.verdict.bad{background:#dc2626}.verdict.good{background:#16a34a}.verdict.other{background:#ca8a04}
.prop,.why,.meta,.lasso{margin:4px 0}
.why{color:#991b1b}.lasso{color:#0e7490;font-weight:600}
.controls{position:sticky;top:0;z-index:3;display:flex;gap:8px;align-items:center;padding:8px 24px;background:#111827;color:#f9fafb}
.controls button{font:inherit;padding:4px 12px;border:1px solid #4b5563;border-radius:4px;background:#1f2937;color:#f9fafb;cursor:pointer}
.controls button:hover:not(:disabled){background:#374151}.controls button:disabled{opacity:.4;cursor:default}
.pos{min-width:110px;text-align:center;font-weight:600}
.hint{color:#9ca3af;font-size:12px;margin-left:12px}
main{display:flex;gap:16px;padding:16px 24px;align-items:flex-start}
.steps{flex:3;overflow-x:auto;background:#fff;border:1px solid #e5e7eb;border-radius:6px}
.state{flex:1;min-width:300px;position:sticky;top:56px;max-height:calc(100vh - 72px);overflow:auto;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px}
.state h2{font-size:15px;margin:4px 0}
.legend{margin:0 0 6px;font-size:12px}
table.trace{border-collapse:collapse;width:100%}
.trace th{background:#f9fafb;font-weight:600;padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left}
.trace th.group{text-align:center;color:var(--g);border-bottom:3px solid var(--g)}
.trace th.actor{color:var(--g)}
.trace td{padding:6px 8px;border-bottom:1px solid #f1f5f9;vertical-align:top}
.trace td+td,.trace th+th{border-left:1px solid #f1f5f9}
td.num,th.num{text-align:right;color:#6b7280;width:2.5em}
td.act{border-left:3px solid var(--g)!important;background:color-mix(in srgb,var(--g) 6%,#fff);min-width:180px}
.aid{font-size:11px;color:var(--g);font-weight:600}
td.chg{font-size:12px;min-width:200px}
.chg s{color:#9ca3af}.chg .f{color:#64748b}.chg b{color:#15803d}.pfx{font-weight:700;color:#374151}
mark.res{background:#fde68a;padding:0 2px;border-radius:2px;font-weight:700}
tr.decisive td{background:#fef2f2}
tr.decisive mark.res{background:#dc2626;color:#fff}
.fails{color:#dc2626;font-weight:700;margin-top:4px}
tr.cycle td.num{color:#0e7490;font-weight:700}
tr.cycle td:first-child{box-shadow:inset 3px 0 #0e7490}
tr.cycle-mark td{background:#ecfeff;color:#0e7490;font-weight:600;padding:4px 8px}
tr.step{cursor:pointer}
tr.step.future{opacity:.35}
tr.step.current td{background:#fffbeb}
tr.step.current td.num{box-shadow:inset 4px 0 #f59e0b;color:#111827;font-weight:700}
td.initcell{color:#6b7280;font-style:italic}
#fields{border-collapse:collapse;width:100%;font-size:12px}
#fields td{padding:1px 4px;vertical-align:top}
#fields tr.pfx td{padding-top:8px;font-weight:700;color:#374151;border-bottom:1px solid #e5e7eb}
#fields tr.chg td{background:#fef9c3}
#fields s{color:#9ca3af}
.legend .chg{background:#fef9c3;padding:0 4px}
footer{padding:0 24px 24px}
footer h2{font-size:15px}
footer button{font:inherit;font-size:12px;padding:1px 8px;margin-left:8px;cursor:pointer}
#schedule{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:10px}
"""

_SCRIPT = r"""
(function(){
  var data = JSON.parse(document.getElementById('trace-data').textContent);
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr.step'));
  var pos = document.getElementById('pos');
  var fields = document.querySelector('#fields tbody');
  var title = document.getElementById('state-title');
  var current = -1;
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
  function go(i){
    i = Math.max(0, Math.min(data.steps, i));
    current = i;
    rows.forEach(function(r){
      var s = +r.getAttribute('data-step');
      r.classList.toggle('current', s === i);
      r.classList.toggle('future', s > i);
    });
    pos.textContent = 'step ' + i + ' of ' + data.steps;
    document.getElementById('first').disabled = document.getElementById('prev').disabled = i === 0;
    document.getElementById('next').disabled = document.getElementById('last').disabled = i === data.steps;
    showState(i);
    var row = rows[i];
    if (row && row.scrollIntoView && document.readyState === 'complete') row.scrollIntoView({block: 'nearest'});
    if (history.replaceState) history.replaceState(null, '', '#step=' + i);
  }
  document.getElementById('first').onclick = function(){ go(0); };
  document.getElementById('prev').onclick = function(){ go(current - 1); };
  document.getElementById('next').onclick = function(){ go(current + 1); };
  document.getElementById('last').onclick = function(){ go(data.steps); };
  rows.forEach(function(r){ r.onclick = function(){ go(+r.getAttribute('data-step')); }; });
  document.addEventListener('keydown', function(e){
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var k = e.key;
    if (k === 'ArrowRight' || k === 'ArrowDown' || k === 'j') { go(current + 1); e.preventDefault(); }
    else if (k === 'ArrowLeft' || k === 'ArrowUp' || k === 'k') { go(current - 1); e.preventDefault(); }
    else if (k === 'Home') { go(0); e.preventDefault(); }
    else if (k === 'End') { go(data.steps); e.preventDefault(); }
  });
  document.getElementById('copy').onclick = function(){
    var text = document.getElementById('schedule').textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) { navigator.clipboard.writeText(text); }
    else { var r = document.createRange(); r.selectNodeContents(document.getElementById('schedule'));
           var s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }
  };
  var m = /step=(\d+)/.exec(location.hash);
  go(m ? +m[1] : data.start);
  document.body.setAttribute('data-ready', 'true');
})();
"""
