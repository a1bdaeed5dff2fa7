"""`prefetch-check replay`: re-run a saved schedule step by step and say where it diverges.

Exit status: 0 the whole schedule replays, 1 it diverges (the step and what was
enabled instead are printed), 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.explorer.trace import parse_schedule
from prefetch_check.api import build_model
from prefetch_check.model.source.files import FileProblem, read_regular_file
from prefetch_check.commands.common import add_case_flag, check_predicate, one_case, output_console
from prefetch_check.scenario import InputError

HELP = "re-run a schedule string through a scenario step by step"


def add_arguments(parser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    parser.add_argument("schedule", metavar="SCHEDULE",
                        help="action ids separated by spaces (e.g. 'S0.issue.q0 S0.drain_arrive'), "
                             "or @FILE holding one (text, or JSON with a \"schedule\" key)")
    add_case_flag(parser)
    parser.add_argument("--predicate", default="buggy", metavar="P", help="buggy (default), fixed or package.module:function")


MAX_SCHEDULE_BYTES = 64 * 1024 * 1024  # a trace JSON of thousands of steps is a few MB


def read_schedule(text: str) -> str:
    if text.startswith("@"):
        path = Path(text[1:])
        try:  # only a regular file: `@fifo` would hang, `@/dev/zero` would fill memory
            raw = read_regular_file(path, MAX_SCHEDULE_BYTES, "a schedule file").decode("utf-8")
        except FileProblem as exc:
            raise InputError(f"{path}: cannot read the schedule file: {exc}") from None
        except UnicodeDecodeError:
            raise InputError(f"{path}: cannot read the schedule file: it is not UTF-8 text") from None
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict):
            if not isinstance(data.get("schedule"), str):
                raise InputError(f"{path}: a JSON schedule file needs a \"schedule\" string")
            return data["schedule"]
        text = raw
    if not parse_schedule(text)[0]:
        raise InputError("the schedule is empty: give action ids such as 'S0.issue.q0 P0.take.q0'")
    return text


def execute(args) -> int:
    predicate = check_predicate(args.predicate)
    schedule = read_schedule(args.schedule)
    _, case = one_case(args.scenario, args.case)
    model = build_model(case.config, predicate)
    console = output_console()
    console.print(f"replaying on {case.name} with predicate {predicate}:", highlight=False)
    try:
        trace = replay(model, schedule)
    except Divergence as div:
        _print_steps(console, model, div.trace_so_far)
        enabled = ", ".join(div.enabled) or "nothing (every thread is blocked)"
        console.print(
            f"diverges at step {div.step + 1}: {div.wanted!r} is not enabled; enabled instead: {enabled}",
            style="bold red", highlight=False, soft_wrap=True,
        )
        return 1
    _print_steps(console, model, trace)
    if trace.cycle_start is not None:
        entry = trace.steps[trace.cycle_start - 1].state if trace.cycle_start > 0 else trace.initial
        closes = "returns to" if trace.final_state == entry else "does NOT return to"
        console.print(f"the cycle (after '|') {closes} the state after step {trace.cycle_start}", highlight=False)
    console.print(f"replayed all {len(trace)} steps", style="bold green", highlight=False)
    return 0


def _print_steps(console, model, trace) -> None:
    """Each step with its description, and the first step at which a safety property fails."""
    props = [p for p in model.properties() if p.not_applicable is None and p.kind in (ALWAYS, ALWAYS_STEP)]
    reported = set()
    state = trace.initial
    width = len(str(max(len(trace), 1)))
    for n, step in enumerate(trace.steps, start=1):
        if trace.cycle_start is not None and n == trace.cycle_start + 1:
            console.print(f"{'':>{width}}  | cycle starts here", style="dim", highlight=False)
        console.print(f"{n:>{width}}. {step.action_id:<22} {step.description}", highlight=False, soft_wrap=True)
        for p in props:
            if p.name in reported:
                continue
            reason = p.check(state, step.action, step.state) if p.kind == ALWAYS_STEP else p.check(step.state)
            if reason:
                reported.add(p.name)
                console.print(f"{'':>{width}}  -> {p.name} violated: {reason}", style="bold red", highlight=False, soft_wrap=True)
        state = step.state
