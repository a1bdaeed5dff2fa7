"""The HTML trace in a real headless browser, as a person at a 1400 x 900 window sees it.

At TP=1, 2 and 8: the page is no wider than the window in either layout (nothing cut off,
nothing scrolled sideways), it opens at the decisive step with the header and its why line in
view (also on a 33-step ack-drain counterexample at 1400 x 1000), Tab reaches the steps
with a visible focus ring and the arrow keys move it, and the grid and the controls carry
their ARIA roles. Keys are pressed through the DevTools protocol, as a keyboard sends them
(Tab moves the focus only then).

Needs Chromium (Debian package `chromium`); skipped with the reason where it is not installed.
Set PREFETCH_CHECK_SCREENSHOTS=DIR to keep a screenshot of each page for a look.
"""

from __future__ import annotations

import os
import re

import pytest

from headless_browser import Browser, BrowserError, find_chromium
from prefetch_check.explorer.view import trace_to_html, trace_to_json
from prefetch_check.explorer.view.layout import clauses
from test_view_support import case, step_texts

WIDTH, HEIGHT = 1400, 900
BY_TP = {1: "race_r1", 2: "delivers_r2", 8: "race_r8"}

# Everything a reader must see, measured in the page: returns what sticks out (empty: all fits).
OVERFLOW = """(() => {
  const width = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > width) out.push('page ' + document.documentElement.scrollWidth + ' > ' + width);
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not shown in this layout
    if (r.right > width + 0.5) out.push((el.className || el.tagName) + ' ends at ' + Math.round(r.right));
    if (el.getAttribute('role') === 'gridcell' && el.scrollWidth > el.clientWidth + 1)
      out.push((el.className || el.tagName) + ' content ' + el.scrollWidth + ' > ' + el.clientWidth);
  }
  return out;
})()"""


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("no headless browser: install Chromium (apt-get install chromium) to check the HTML trace in a browser")
    try:
        b = Browser(executable, WIDTH, HEIGHT)
    except (BrowserError, OSError) as exc:
        pytest.skip(f"Chromium is installed but did not start headless here: {exc}")
    yield b
    b.close()


def show(browser, tmp_path, name: str, fragment: str = ""):
    """Open the HTML of a viewer case; returns (model, trace, property result)."""
    model, trace, prop = case(name)
    page = tmp_path / f"{name}.html"
    page.write_text(trace_to_html(model, trace, prop, f"{name} · {prop.name}"), encoding="utf-8")
    browser.open(page.as_uri() + fragment)
    assert browser.js("document.body.getAttribute('data-ready')") == "true", "the page's script did not run to its end"
    return model, trace, prop


def screenshot(browser, label: str) -> None:
    folder = os.environ.get("PREFETCH_CHECK_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        browser.screenshot(os.path.join(folder, f"{label}.png"))


def layout(browser) -> str:
    return browser.js("document.getElementById('trace').classList.contains('lanes') ? 'lanes' : 'columns'")


@pytest.mark.parametrize("tp", sorted(BY_TP))
def test_the_page_fits_the_window_in_both_layouts(browser, tmp_path, tp):
    show(browser, tmp_path, BY_TP[tp])
    assert browser.js(OVERFLOW) == []
    threads = browser.js("document.querySelectorAll('#trace .hc.thread').length")
    assert threads >= 2 * tp  # every rank's threads are there to be measured
    first = layout(browser)
    if tp == 1:
        assert first == "columns"
    if tp == 8:
        assert first == "lanes"  # too many threads for a readable column each at 1400 px
    screenshot(browser, f"tp{tp}-{first}")
    browser.press("l")  # the other layout, chosen by hand
    assert layout(browser) != first
    assert browser.js("document.getElementById('layout').getAttribute('aria-pressed')") == (
        "true" if layout(browser) == "lanes" else "false"
    )
    assert browser.js(OVERFLOW) == []
    screenshot(browser, f"tp{tp}-{layout(browser)}")
    # the changed fields of the decisive step are on screen, not cut off at the right
    right = browser.js("document.querySelector('.row.decisive .chg').getBoundingClientRect().right")
    assert 0 < right <= WIDTH


# Where things are on open: the header's why line, the pane of steps (its sticky column header
# included) and the decisive row, each as [top, bottom] in the window.
ON_OPEN = """(() => {
  const box = s => { const r = document.querySelector(s).getBoundingClientRect(); return [r.top, r.bottom]; };
  const pane = document.getElementById('pane');
  return {header: box('header.top'), why: box('.why'), controls: box('.controls'), pane: box('#pane'),
          head: box('#trace .head'), decisive: box('.row.decisive'), window: window.innerHeight,
          page_scrolled: window.scrollY, pane_scrolled: pane.scrollTop, pane_height: pane.scrollHeight};
})()"""


@pytest.mark.parametrize("name, height", [(BY_TP[1], HEIGHT), (BY_TP[2], HEIGHT), (BY_TP[8], HEIGHT), ("ack_tp2", 1000)])
def test_opens_at_the_decisive_step_with_the_header_and_why_in_view(browser, tmp_path, name, height):
    browser.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height, deviceScaleFactor=1, mobile=False)
    try:
        model, trace, prop = show(browser, tmp_path, name)
        screenshot(browser, f"open-{name}-{height}")
        at = browser.js(ON_OPEN)
    finally:
        browser.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
    n = len(trace.steps)
    assert browser.js("document.getElementById('pos').textContent") == f"step {n} of {n}"
    assert at["page_scrolled"] == 0 and at["header"][0] == 0, at  # the header is where the page begins
    assert 0 < at["why"][0] and at["why"][1] <= at["controls"][0], at  # the why line, above the controls
    top, bottom = at["decisive"]
    assert at["head"][1] <= top and bottom <= min(at["pane"][1], at["window"]), at  # under the sticky column header
    if at["pane_height"] > 2 * (at["pane"][1] - at["pane"][0]):  # a long trace: the pane had to scroll down to it
        assert at["pane_scrolled"] > 0, at
    if name == "ack_tp2":
        assert at["pane_scrolled"] > 0, at  # the case this test is for: 33 steps do not fit a window
    assert browser.js("document.querySelector('.row.decisive').getAttribute('aria-selected')") == "true"


@pytest.mark.parametrize("tp", sorted(BY_TP))
def test_tab_reaches_the_steps_and_arrow_keys_move_the_focus(browser, tmp_path, tp):
    model, trace, prop = show(browser, tmp_path, BY_TP[tp])
    n = len(trace.steps)
    active = "document.activeElement.getAttribute('data-step')"
    for _ in range(20):  # through the toolbar's buttons to the grid
        browser.press("Tab")
        if browser.js(active) is not None:
            break
    assert browser.js(active) == str(n), "Tab should land on the selected (decisive) step"
    ring = browser.js("(() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()")
    assert ring[0] != "none" and ring[1] >= 2, f"no visible focus ring: {ring}"
    browser.press("ArrowUp")
    assert browser.js(active) == str(n - 1)
    assert browser.js("document.getElementById('pos').textContent") == f"step {n - 1} of {n}"
    assert browser.js("document.querySelector('[aria-selected=true]').getAttribute('data-step')") == str(n - 1)
    browser.press("ArrowDown")
    assert browser.js(active) == str(n)
    browser.press("Home")
    assert browser.js(active) == "0"
    top = browser.js("document.activeElement.getBoundingClientRect().top")
    assert 0 <= top < HEIGHT  # the focused step was scrolled into view
    browser.press("Tab", shift=True)  # back out of the grid to the controls: one tab stop for the grid
    assert browser.js("document.activeElement.closest('[role=toolbar]') !== null")


def test_grid_and_controls_have_their_roles(browser, tmp_path):
    model, trace, prop = show(browser, tmp_path, "delivers_r2")
    roles = browser.js(
        "(() => { const g = document.getElementById('trace'); return {"
        " grid: g.getAttribute('role'), label: g.getAttribute('aria-label'),"
        " steps: g.querySelectorAll('[role=row][data-step]').length,"
        " bad_rows: [...g.querySelectorAll('[role=row]')].filter(r => !r.querySelector('[role=gridcell],[role=columnheader]')).length,"
        " headers: g.querySelectorAll('[role=columnheader]').length,"
        " tab_stops: g.querySelectorAll('[tabindex=\"0\"]').length,"
        " toolbar: document.querySelector('[role=toolbar]').getAttribute('aria-label'),"
        " unnamed: [...document.querySelectorAll('[role=toolbar] button')].filter(b => !(b.getAttribute('aria-label') || b.textContent.trim())).length,"
        " status: document.getElementById('pos').getAttribute('role') + ' ' + document.getElementById('pos').getAttribute('aria-live'),"
        " pressed: document.getElementById('layout').getAttribute('aria-pressed') }; })()"
    )
    assert roles["grid"] == "grid" and roles["label"]
    assert roles["steps"] == len(trace.steps) + 1 and roles["bad_rows"] == 0 and roles["headers"] > 0
    assert roles["tab_stops"] == 1  # roving tabindex: the grid is one stop, arrows move inside
    assert roles["toolbar"] and roles["unnamed"] == 0
    assert roles["status"] == "status polite"
    assert roles["pressed"] in ("true", "false")


def test_every_step_is_in_the_rendered_page(browser, tmp_path):
    model, trace, prop = show(browser, tmp_path, "delivers_r2")
    n = len(trace.steps)
    dom = browser.js("document.documentElement.outerHTML")
    assert f"step {n} of {n}" in dom
    rows = step_texts(dom)
    assert sorted(rows) == list(range(n + 1))
    for i, step in enumerate(trace.steps, start=1):
        assert step.action_id in rows[i]
        for clause in clauses(step.description):
            assert clause in rows[i]
    assert prop.reason in dom
    # the state inspector was filled by the script with the final state
    inspector = re.search(r'<table id="fields"><tbody>(.*?)</tbody>', dom, re.S).group(1)
    assert inspector.count("<tr") > len(model.fields(trace.final_state))
    assert f"after step {n}" in dom


def test_stepping_back_shows_that_steps_state(browser, tmp_path):
    model, trace, prop = case("lasso")
    n, k = len(trace.steps), 3
    show(browser, tmp_path, "lasso", fragment=f"#step={k}")
    assert browser.js("document.getElementById('pos').textContent") == f"step {k} of {n}"
    classes = browser.js("[...document.querySelectorAll('.row.step')].map(r => [+r.dataset.step, r.className])")
    classes = {s: c.split() for s, c in classes}
    assert "current" in classes[k]
    assert all("future" in classes[i] for i in range(k + 1, n + 1))
    assert not any("future" in classes[i] for i in range(0, k + 1))
    changed = trace_to_json(model, trace, prop, "lasso")["steps"][k - 1]["changed"]
    assert browser.js("document.querySelectorAll('#fields tr.chg').length") == len(changed) > 0


def test_a_lasso_opens_where_its_cycle_starts(browser, tmp_path):
    model, trace, prop = show(browser, tmp_path, "lasso")
    start = trace.cycle_start + 1
    assert browser.js("document.getElementById('pos').textContent") == f"step {start} of {len(trace.steps)}"
    top = browser.js(f"document.querySelector('[data-step=\"{start}\"]').getBoundingClientRect().top")
    assert 0 <= top < HEIGHT
