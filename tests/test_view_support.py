"""Shared by the viewer tests (no tests here): the seed race, a TP=2 race, a lasso and an ack-drain
counterexample, checked once."""

from __future__ import annotations

from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check import Limits, check
from prefetch_check.api import build_model
from prefetch_check.scenario import load_scenario

ACK_TWO_REQUESTS = load_scenario(Path(__file__).parent.parent / "scenarios" / "ack-two-requests.toml").cases[0]

CASES = {
    # name: (config, predicate, property[, limits[, protocol]])
    "race_r1": (uniform_config(ranks=1, requests=1, pages=2), "buggy", "no_early_acceptance"),
    # TP=8: the race is found within the first few thousand states; the rest stays unjudged
    "race_r8": (uniform_config(ranks=8, requests=1, pages=1), "buggy", "no_early_acceptance", Limits(max_states=5000)),
    "delivers_r2": (uniform_config(ranks=2, requests=1, pages=2), "buggy", "wait_complete_delivers"),
    "lasso": (
        uniform_config(ranks=1, requests=1, pages=2, hits=0, prefetch_threshold=0, clamp_threshold=False),
        "fixed",
        "progress",
    ),
    # ack-drain at TP=2: 33 steps, longer than a window, so the viewer opens scrolled down to the last
    "ack_tp2": (ACK_TWO_REQUESTS.config, "buggy", "tp_agreement", None, ACK_TWO_REQUESTS.protocol),
}


@lru_cache(maxsize=None)
def case(name: str):
    """(model, trace, property result) of one case; the search runs once per test session."""
    config, predicate, prop, limits, protocol = (CASES[name] + (None, None))[:5]
    result = check(config, predicate, limits, protocol=protocol)
    return build_model(config, predicate, protocol), result.trace(prop), result.results[prop]


class StepText(HTMLParser):
    """The text of every element with `data-step=N` (a step's row) of a page, to check what a reader sees per step."""

    VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}

    def __init__(self):
        super().__init__()
        self.rows: dict[int, str] = {}
        self._row = None
        self._depth = 0  # open elements inside the current row

    def handle_starttag(self, tag, attrs):
        if tag == "br" and self._row is not None:
            self.rows[self._row] += "\n"
        if tag in self.VOID:
            return
        if self._row is not None:
            self._depth += 1
            return
        step = dict(attrs).get("data-step")
        if step is not None:
            self._row, self._depth = int(step), 0
            self.rows[self._row] = ""

    def handle_endtag(self, tag):
        if self._row is None or tag in self.VOID:
            return
        if self._depth == 0:
            self._row = None
        else:
            self._depth -= 1

    def handle_data(self, data):
        if self._row is not None:
            self.rows[self._row] += data


def step_texts(page: str) -> dict[int, str]:
    parser = StepText()
    parser.feed(page)
    return parser.rows
