"""The HTML trace in a real headless browser: every step is there after the script ran, stepping works.

Needs Chromium (Debian package `chromium`); skipped with the reason where it is not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from prefetch_check.explorer.view import trace_to_html, trace_to_json
from prefetch_check.explorer.view.layout import clauses
from test_view_support import case, step_texts


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    pytest.skip("no headless browser: install Chromium (apt-get install chromium) to check the HTML trace")


def dump_dom(tmp_path, page: str, fragment: str = "") -> str:
    """The DOM after the page's script ran, as Chromium serialises it."""
    browser = chromium()
    html_file = tmp_path / "trace.html"
    html_file.write_text(page, encoding="utf-8")
    run = subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-extensions", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom", html_file.as_uri() + fragment,
        ],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_every_step_is_in_the_rendered_page(tmp_path):
    model, trace, prop = case("delivers_r2")
    n = len(trace.steps)
    dom = dump_dom(tmp_path, trace_to_html(model, trace, prop, "TP=2 race"))
    assert 'data-ready="true"' in dom  # the script ran to its end
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


def test_stepping_back_shows_that_steps_state(tmp_path):
    model, trace, prop = case("lasso")
    n, k = len(trace.steps), 3
    dom = dump_dom(tmp_path, trace_to_html(model, trace, prop, "lasso"), fragment=f"#step={k}")
    assert f"step {k} of {n}" in dom
    classes = dict((int(s), c) for c, s in re.findall(r'<tr class="([^"]*)" data-step="(\d+)"', dom))
    assert "current" in classes[k].split()
    assert all("future" in classes[i].split() for i in range(k + 1, n + 1))
    assert not any("future" in classes[i].split() for i in range(0, k + 1))
    inspector = re.search(r'<table id="fields"><tbody>(.*?)</tbody>', dom, re.S).group(1)
    changed = trace_to_json(model, trace, prop, "lasso")["steps"][k - 1]["changed"]
    assert inspector.count('<tr class="chg">') == len(changed) > 0
