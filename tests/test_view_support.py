"""Shared by the viewer tests (no tests here): the seed race, a TP=2 race and a lasso, checked once."""

from __future__ import annotations

from functools import lru_cache
from html.parser import HTMLParser

from prefetch_check.model.config import uniform_config
from prefetch_check import check
from prefetch_check.api import build_model

CASES = {
    # name: (config, predicate, property)
    "race_r1": (uniform_config(ranks=1, requests=1, pages=2), "buggy", "no_early_acceptance"),
    "delivers_r2": (uniform_config(ranks=2, requests=1, pages=2), "buggy", "wait_complete_delivers"),
    "lasso": (
        uniform_config(ranks=1, requests=1, pages=2, hits=0, prefetch_threshold=0, clamp_threshold=False),
        "fixed",
        "progress",
    ),
}


@lru_cache(maxsize=None)
def case(name: str):
    """(model, trace, property result) of one case; the search runs once per test session."""
    config, predicate, prop = CASES[name]
    result = check(config, predicate)
    return build_model(config, predicate), result.trace(prop), result.results[prop]


class StepText(HTMLParser):
    """The text of every `<tr data-step=N>` of a page, to check what a reader sees per step."""

    def __init__(self):
        super().__init__()
        self.rows: dict[int, str] = {}
        self._row = None
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            step = dict(attrs).get("data-step")
            self._row = int(step) if step is not None else None
            if self._row is not None:
                self.rows[self._row] = ""
        elif tag == "br" and self._row is not None:
            self.rows[self._row] += "\n"

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._row is not None:
            self.rows[self._row] += data


def step_texts(page: str) -> dict[int, str]:
    parser = StepText()
    parser.feed(page)
    return parser.rows
