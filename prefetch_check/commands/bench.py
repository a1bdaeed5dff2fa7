"""`prefetch-check bench`: the benchmark of issue 4 as one table, figures next to their targets.

Exit status: 0 every row ran (targets met or not are reported, not judged: the figures
depend on the machine), 1 a row's process died without a result, 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from prefetch_check.commands import COMMANDS
from prefetch_check import bench
from prefetch_check.bench_sampling import PREDICATE as SAMPLING_PREDICATE
from prefetch_check.bench_sampling import measure_sampling
from prefetch_check.bench_startup import STARTUP_ROWS, measure_startup
from prefetch_check.bench_table import TABLE_ROWS, measure_table
from prefetch_check.commands.common import output_console, positive_float, positive_int
from prefetch_check.progress import progress_console
from prefetch_check.sglang.cache import cache_root as sglang_cache_root
from prefetch_check.scenario import InputError

HELP = COMMANDS["bench"]

COLUMNS = ("row", "configuration", "reductions", "states", "stored", "transitions", "depth", "seconds", "states/s",
           "peak MiB", "B/state", "verdicts", "target", "met")
STYLE = {True: "green", False: "bold red", None: "dim"}


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="only the small rows (seconds, for tests)")
    parser.add_argument("--rows", action="append", metavar="NAMES",
                        help="rows or sections to run, comma-separated (sections: " + ", ".join(bench.SECTIONS)
                        + f", {bench.SAMPLING}, {bench.STARTUP}, {bench.TABLE}; rows: "
                        + ", ".join(r.key for r in bench.ROWS + bench.SAMPLING_ROWS + STARTUP_ROWS + TABLE_ROWS)
                        + "; the table rows run only when named)")
    parser.add_argument("--budget", type=positive_float, default=bench.DEFAULT_BUDGET, metavar="SECONDS",
                        help=f"time limit of each row's search (default {bench.DEFAULT_BUDGET:g}); a row still "
                        "running at budget + grace is killed; either way it is BOUNDED")
    parser.add_argument("--max-memory", type=positive_int, default=bench.DEFAULT_MAX_MEMORY_MB, metavar="MIB",
                        help=f"memory limit of each row's search (default {bench.DEFAULT_MAX_MEMORY_MB})")
    parser.add_argument("--json", metavar="FILE", help="write the same figures as JSON (overwrites)")
    parser.add_argument("--table-report", metavar="FILE",
                        help="with the table row: also write the release table's own JSON report there")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")


def execute(args) -> int:
    names = [n.strip() for chunk in (args.rows or []) for n in chunk.split(",") if n.strip()]
    rows = bench.select_rows(names, args.quick)
    sampling_rows = bench.select_sampling_rows(names, args.quick)
    startup_rows = bench.select_startup_rows(names, args.quick)
    table_rows = bench.select_table_rows(names)
    if not rows and not sampling_rows and not startup_rows and not table_rows:
        raise InputError("--rows: none of the named rows is part of --quick; drop --quick or name a quick row")
    if args.json and not Path(args.json).parent.is_dir():
        raise InputError(f"--json {args.json}: the folder {Path(args.json).parent} does not exist")
    log = progress_console()

    def on_row(i, row, m):
        if args.quiet:
            return
        if m is None:
            log.print(f"bench [{i + 1}/{len(rows)}] {row.key}: {row.configuration}, reductions "
                      f"{'on' if row.reductions else 'off'} ...", highlight=False)
        elif not m.ran:
            log.print(f"bench [{i + 1}/{len(rows)}] {row.key}: {m.summary()}", highlight=False)
        else:
            log.print(f"bench [{i + 1}/{len(rows)}] {row.key}: {m.states:,} states, {m.seconds:.1f} s, {m.summary()}",
                      highlight=False)

    headroom = bench.parallel_headroom() if any(r.workers > 1 for r in rows) else None
    measurements = bench.run(rows, args.budget, args.max_memory, on_row)
    sampled = []
    for i, row in enumerate(sampling_rows):
        if not args.quiet:
            log.print(f"bench [sampling {i + 1}/{len(sampling_rows)}] {row.key}: {row.configuration} ...",
                      highlight=False)
        sampled.append(measure_sampling(row, args.budget, bench.grace_for(args.budget)))
    started = []
    for i, row in enumerate(startup_rows):
        if not args.quiet:
            log.print(f"bench [startup {i + 1}/{len(startup_rows)}] {row.key} ...", highlight=False)
        started.append(measure_startup(row))
    tabled = []
    for i, row in enumerate(table_rows):
        if not args.quiet:
            log.print(f"bench [table {i + 1}/{len(table_rows)}] {row.key}: {row.command}, cold then cached "
                      "(minutes) ...", highlight=False)
        tabled.append(measure_table(row, sglang_cache_root(), Path(args.table_report) if args.table_report else None))
    console = output_console()
    if measurements:
        console.print(table(measurements, args.budget))
        for line in notes(measurements, args.budget, headroom):
            console.print(Text(line), soft_wrap=True)
    if sampled:
        console.print(sampling_table(sampled))
        console.print(Text(SAMPLING_NOTE), soft_wrap=True)
    if started:
        console.print(startup_table(started))
        console.print(Text(STARTUP_NOTE), soft_wrap=True)
    if tabled:
        console.print(release_table(tabled))
        console.print(Text(TABLE_NOTE), soft_wrap=True)
    if args.json:
        figures = bench.to_json(measurements, args.budget, args.max_memory, headroom)
        figures["sampling"] = [m.as_json() for m in sampled]
        figures["startup"] = [m.as_json() for m in started]
        figures["table"] = [m.as_json() for m in tabled]
        try:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(figures, out, indent=2)
                out.write("\n")
        except OSError as exc:
            raise InputError(f"--json {args.json}: cannot write the figures: {exc.strerror}") from None
    return 1 if (any(m.error for m in measurements) or any(m.error and not m.killed for m in sampled)
                 or any(m.error for m in started) or any(m.error for m in tabled)) else 0


def _num(x, fmt: str = ",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def _met(m: bench.Measurement) -> Text:
    met = m.met()
    return Text({True: "met", False: "NOT MET", None: ""}[met], style=STYLE[met])


def table(measurements: list[bench.Measurement], budget: float) -> Table:
    t = Table(title=f"prefetch-check bench · predicate {bench.PREDICATE}, policy {bench.POLICY} unless the row says, "
              f"budget {budget:g} s per row", box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    for name in COLUMNS:
        numeric = name in ("states", "stored", "transitions", "depth", "seconds", "states/s", "peak MiB", "B/state")
        t.add_column(name, justify="right" if numeric else "left", no_wrap=name != "verdicts",
                     overflow="fold")
    section = None
    for m in measurements:
        if section is not None and m.row.section != section:
            t.add_section()
        section = m.row.section
        r = m.row
        verdict_style = "green" if m.summary().startswith("VERIFIED") else ("red" if "VIOLATED" in m.summary()
                                                                           else "yellow")
        if not m.ran:
            figures = ["-"] * 8
        else:
            figures = [_num(m.states), _num(m.stored), _num(m.transitions), _num(m.depth), _num(m.seconds, ".2f"),
                       _num(m.states_per_second), _num(m.peak_mib, ".0f"), _num(m.bytes_per_state)]
        t.add_row(r.key, r.configuration + (" *" if r.note else ""), "on" if r.reductions else "off", *figures,
                  Text(m.summary(), style=verdict_style), r.target.text if r.target else "", _met(m))
    return t


def notes(measurements: list[bench.Measurement], budget: float, headroom: float | None = None) -> list[str]:
    """What the figures mean, the growth judgement and the machine, below the table."""
    lines = []
    marked = sorted({m.row.note for m in measurements if m.row.note})
    lines += [f"* {note}" for note in marked]
    lines.append("states: distinct states visited; stored: of them, those kept in the visited set (the reduced "
                 "search walks through states with a single chosen step without storing them); "
                 "seconds: search + progress analysis; states/s: distinct states per second of the search alone; "
                 "peak MiB: peak resident memory of the row's own process (ru_maxrss), progress analysis included; "
                 "B/state: (peak RSS when the search ends - RSS before it) / states, approximate: what one visited "
                 "state costs with the visited set, the BFS bookkeeping and the edges kept for the progress analysis.")
    lines.append(f"Each row runs in a fresh process; its search stops at the budget ({budget:g} s) and the row is "
                 f"killed at budget + {bench.grace_for(budget):g} s; a cut row is BOUNDED with the figures it "
                 "reached, and growth stops after its first bounded row.")
    g = bench.growth(measurements)
    if g is not None:
        verdict = {True: "met", False: "NOT MET", None: "not judged"}[g.met]
        lines.append(f"growth with R (target: polynomial for R=1..8, {verdict}): {g.text}")
    for line in bench.rank_costs(measurements):
        lines.append(f"what a rank costs: {line}")
    for speedup in bench.speedups(measurements, headroom):
        lines.append(f"one search on two processes: {speedup.text}")
    info = bench.machine()
    load = info["load_average"]
    lines.append(f"machine: {info['cpus']} cores, Python {info['python']}"
                 + (f", load average {load[0]:.2f} at the end (other work shares the cores: figures are noisy)"
                    if load else ""))
    return lines


SAMPLING_COLUMNS = ("row", "configuration", "runs", "steps", "states", "seconds", "shrink s", "peak MiB", "result",
                    "target", "met")
SAMPLING_NOTE = (
    f"sampling rows: the seed race (1 request, 2 pages, wait_complete), predicate {SAMPLING_PREDICATE}. simulate: "
    "seconds from the row's start (model built from scratch) until both no_early_acceptance and "
    "wait_complete_delivers were found; shrink s: making both counterexamples 1-minimal and replaying them. "
    "census: the probability that a uniform random schedule violates each, exact (the symmetry-lumped state graph "
    "solved as an absorbing Markov chain; states: its size) or sampled (95% Wilson interval)."
)


def sampling_table(measurements: list) -> Table:
    t = Table(title="sampling (issue 13): simulate and census", box=box.SIMPLE_HEAD, header_style="bold",
              pad_edge=False)
    for name in SAMPLING_COLUMNS:
        numeric = name in ("runs", "steps", "states", "seconds", "shrink s", "peak MiB")
        t.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for m in measurements:
        r = m.row
        simulate = r.kind == "simulate"
        t.add_row(r.key, r.configuration, _num(m.runs) if m.runs else "-", _num(m.steps) if simulate else "-",
                  _num(m.states) if m.states else "-", _num(m.seconds, ".2f"),
                  _num(m.shrink_seconds, ".2f") if simulate else "-", _num(m.peak_mib, ".0f"),
                  Text(m.summary(), style="bold red" if m.error else ""), r.target, _met(m))
    return t


STARTUP_NOTE = (
    "startup rows (issue 23): wall seconds of the installed command in a fresh process each time (as a shell runs "
    "it), median and fastest of the runs; run checks scenarios/release-seed.toml (552 states over buggy and fixed). "
)


def startup_table(measurements: list) -> Table:
    import os

    cache = "off (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    t = Table(title=f"start-up (issue 23) · bytecode cache {cache}", box=box.SIMPLE_HEAD, header_style="bold",
              pad_edge=False)
    for name in ("row", "command", "runs", "median s", "fastest s", "target", "met"):
        t.add_column(name, justify="right" if name in ("runs", "median s", "fastest s") else "left", overflow="fold")
    for m in measurements:
        met = m.met()
        t.add_row(m.row.key, m.command, str(len(m.times)) if not m.error else m.summary(), _num(m.median, ".3f"),
                  _num(m.fastest, ".3f"), m.row.target,
                  Text({True: "met", False: "NOT MET", None: ""}[met], style=STYLE[met]))
    return t


TABLE_NOTE = (
    "table rows (issue 22): the installed command in a fresh process, on a copy of the release source cache with an "
    "empty verdict cache (cold: every model search, code case and conformance check runs) and then again (cached); "
    "releases missing from the source cache are fetched first, timed apart; runs are --offline. "
)


def release_table(measurements: list) -> Table:
    t = Table(title="the release table (issue 22)", box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    for name in ("row", "command", "rows", "fetch s", "cold s", "cached s", "ran cold", "exit"):
        t.add_column(name, justify="right" if name in ("rows", "fetch s", "cold s", "cached s") else "left",
                     overflow="fold")
    for m in measurements:
        if m.error:
            t.add_row(m.row.key, m.row.command, "-", _num(m.fetch_seconds, ".1f"), "-", "-",
                      Text(m.summary(), style="bold red"), "-")
            continue
        ran = ", ".join(f"{n:,} {k}" for k, n in m.cold.executed.items())
        t.add_row(m.row.key, m.row.command, str(m.cold.rows), _num(m.fetch_seconds, ".1f"), _num(m.cold.seconds, ".1f"),
                  _num(m.cached.seconds, ".1f"), ran, f"{m.cold.status} / {m.cached.status}")
    return t
