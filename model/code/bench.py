"""The executor's bench: `python -m prefetch_check.model.code.bench [--poll] SRT [SRT...]` checks
each tree under a fixed list of configurations and prints runs, states, seconds and the child's
peak memory per line (docs/executor.md keeps the figures). `--poll`: the trees are predicate-poll
releases (HiRadixCache 0.5.1-0.5.18), run in the poll world with its own configurations."""

from __future__ import annotations

import os
import sys
import time

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree

CONFIGS = (
    ("1x1", CodeConfig(ranks=1)),
    ("2x1", CodeConfig(ranks=2)),
    ("2x1, rank 0 cannot read page 1", CodeConfig(ranks=2, failing=((1,), ()))),
    ("2x1, rank 0's existence query raises", CodeConfig(ranks=2, query_raises=(True, False))),
    ("1x2", CodeConfig(ranks=1, requests=2)),
    ("1x1 best_effort", CodeConfig(ranks=1, policy="best_effort")),
    ("2x1 best_effort", CodeConfig(ranks=2, policy="best_effort")),
    ("1x1 abort in round 1", CodeConfig(ranks=1, abort_round=1)),
    ("2x1 abort in round 1", CodeConfig(ranks=2, abort_round=1)),
    ("1x1 prefetched again, wait_complete", CodeConfig(ranks=1, reissue=True)),
    ("1x1 prefetched again, best_effort", CodeConfig(ranks=1, policy="best_effort", reissue=True)),
)

POLL = dict(world="poll")
POLL_CONFIGS = (
    ("poll 1x1", CodeConfig(ranks=1, **POLL)),
    ("poll 1x1 best_effort", CodeConfig(ranks=1, policy="best_effort", **POLL)),
    ("poll 1x1, cannot read page 1", CodeConfig(ranks=1, failing=((1,),), **POLL)),
    ("poll 1x1, no hits, threshold 0", CodeConfig(ranks=1, hits=(0,), threshold_pages=0, **POLL)),
    ("poll 2x1", CodeConfig(ranks=2, **POLL)),
    ("poll 2x1, 1 page", CodeConfig(ranks=2, pages=1, **POLL)),
    ("poll 1x2", CodeConfig(ranks=1, requests=2, **POLL)),
)


def main(argv: list[str]) -> int:
    configs = CONFIGS
    if argv[:1] == ["--poll"]:
        argv, configs = argv[1:], POLL_CONFIGS
    limits = CodeLimits(max_seconds=float(os.environ.get("BENCH_SECONDS", 300)))  # a shorter pass: BENCH_SECONDS
    for srt in argv:
        for name, config in configs:
            start = time.monotonic()
            r = check_tree(srt, config, limits)
            violated = sorted(k for k, v in r.verdicts.items() if v == "VIOLATED")
            print(f"{srt} | {name} | runs {r.runs} | states {r.states} | search {r.seconds:.2f} s | "
                  f"wall {time.monotonic() - start:.1f} s | child peak {r.peak_rss_kib / 1024:.0f} MiB | "
                  f"{'exhaustive' if r.exhaustive else 'BOUNDED: ' + r.bound} | violated {violated or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
