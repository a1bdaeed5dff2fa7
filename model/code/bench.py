"""The executor's bench: `python -m prefetch_check.model.code.bench [--world PROTOCOL] SRT [SRT...]`
checks each tree under its world's bench configurations (the world pack's `bench`; default: the
ack-drain world, `--world predicate-poll` for HiRadixCache 0.5.1-0.5.18; `--only TEXT`: the rows
whose name holds TEXT, repeatable) and prints runs, states, seconds and the child's peak memory per
line (docs/executor.md keeps the figures). BENCH_SECONDS cuts each search shorter; BENCH_STRATEGY
names another exhaustive strategy (dfs: the search before the sleep sets, for before/after rows);
BENCH_GATE=any runs the ack-drain rows under the round gate without the MIN assumption
(CodeConfig.round_gate)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.model.code.pack import pack


def main(argv: list[str]) -> int:
    world = CodeConfig().world
    only: list[str] = []
    while argv[:1] in (["--world"], ["--only"]):
        if argv[0] == "--world":
            world = argv[1]
        else:
            only.append(argv[1])
        argv = argv[2:]
    limits = CodeLimits(max_seconds=float(os.environ.get("BENCH_SECONDS", 300)),  # a shorter pass: BENCH_SECONDS
                        strategy=os.environ.get("BENCH_STRATEGY", CodeLimits.strategy))
    gate = os.environ.get("BENCH_GATE")
    for srt in argv:
        for name, config in pack(world).bench:
            if only and not any(text in name for text in only):
                continue
            if gate:
                config = dataclasses.replace(config, round_gate=gate)
            start = time.monotonic()
            r = check_tree(srt, config, limits)
            violated = sorted(k for k, v in r.verdicts.items() if v == "VIOLATED")
            print(f"{srt} | {name} | runs {r.runs} | states {r.states} | search {r.seconds:.2f} s | "
                  f"wall {time.monotonic() - start:.1f} s | child peak {r.peak_rss_kib / 1024:.0f} MiB | "
                  f"{'exhaustive' if r.exhaustive else 'BOUNDED: ' + r.bound} | violated {violated or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
