"""The conformance check's bench rows: `python -m prefetch_check.bench_conformance SRT [SRT...]`
runs, for each tree, the budget `prefetch-check sglang` uses (its protocol's world pack's conformance
budgets, with the options its source settles) and prints per configuration the schedules replayed, the model
states compared, the seconds and the answer (docs/conformance.md keeps the figures)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from prefetch_check.sglang.families import classify
from prefetch_check.sglang.conformance_checks import plan_conformance, run_conformance
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.tree_shape import tree_shape
from prefetch_check.sglang.protocols import release_protocol


def rows(srt: Path, cache: Path) -> list[str]:
    shape = tree_shape(read_protocol_files(srt)).shape
    release = release_protocol(shape, classify(shape))
    check = plan_conformance(srt, release.options, [], release.protocol, shape.predicate.value or "")
    start = time.monotonic()
    run_conformance([(srt, check)], cache, 1)
    wall = time.monotonic() - start
    out = []
    for a in check.answers or []:
        answer = "DIVERGES" if a["divergence"] else ("not modelled" if a["not_modelled"] else "conforms")
        d = a["divergence"]
        if d:  # where: the model step, the code's innermost frame, the fields
            answer += f" at step {d['step']} {d['action']} ({(d['stack'] or [d['site']])[0]}; {', '.join(d['fields'])})"
        out.append(f"{srt} | {a['name']} | schedules {a['schedules']:,} | states {a['states']:,} "
                   f"(of {a['model_states']:,} searched) | {a['seconds']:.1f} s | {answer}")
    for name, why in check.skipped:
        out.append(f"{srt} | {name} | skipped: {why}")
    f = check.figures()
    out.append(f"{srt} | all | schedules {f['schedules']:,} | states {f['states']:,} | {f['seconds']:.1f} s "
               f"(wall {wall:.1f} s) | {'conforms' if check.conforms else check.error or 'see above'}")
    return out


def main(argv: list[str]) -> int:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="prefetch-check-bench-") as cache:
        for srt in argv:
            for line in rows(Path(srt), Path(cache)):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
