"""Determinism: the same configuration gives the same counts and the same counterexamples,
run after run and whatever PYTHONHASHSEED is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# A summary of several checks: counts, verdicts, reasons and every schedule (lassos included).
SUMMARY = r"""
import json
from prefetch_check import check, uniform_config

CONFIGS = [
    (uniform_config(ranks=2, pages=2, failing={1: {1}}), "buggy", True),
    (uniform_config(ranks=2, pages=2, failing={1: {1}}), "buggy", False),
    (uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), policy="timeout"), "fixed", True),
    (uniform_config(requests=2, pages=2, failing={0: {1}}, shape="seed"), "buggy", True),
]

def summary(config, predicate, reductions):
    r = check(config, predicate, reductions=reductions)
    s = r.stats
    return {
        "states": s.states, "transitions": s.transitions, "depth": s.max_depth,
        "actions": s.action_counts, "never_fired": list(s.never_fired),
        "verdicts": {n: (p.verdict, p.reason) for n, p in r.results.items()},
        "schedules": {n: p.trace.schedule for n, p in r.results.items() if p.trace is not None},
    }

print(json.dumps([summary(*c) for c in CONFIGS], sort_keys=True))
"""


def run_summary(hash_seed: str) -> list:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run([sys.executable, "-c", SUMMARY], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_same_counts_and_schedules_run_after_run():
    namespace: dict = {}
    exec(SUMMARY.replace("print(", "result = ("), namespace)
    first = namespace["result"]
    exec(SUMMARY.replace("print(", "result = ("), namespace)
    assert namespace["result"] == first


def test_same_counts_and_schedules_whatever_the_hash_seed():
    zero, other = run_summary("0"), run_summary("123")
    assert zero == other
    # the summary is not empty: it carries violations, a lasso and a deadlock
    schedules = [s for entry in zero for s in entry["schedules"].values()]
    assert any("|" in s for s in schedules)
    assert any(entry["verdicts"]["deadlock_freedom"][0] == "VIOLATED" for entry in zero)
    assert all(entry["states"] > 0 for entry in zero)
