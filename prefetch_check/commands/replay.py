"""`prefetch-check replay`: re-run a saved schedule step by step and say where it diverges.

Exit status: 0 the whole schedule replays, 1 it diverges (the step and what was
enabled instead are printed), 2 bad input: among it an id that is no action of the
scenario at all (a misspelling), as opposed to an action that is merely not enabled.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefetch_check.commands import COMMANDS
from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.explorer.trace import parse_schedule
from prefetch_check.model.interface import parse_action_id
from prefetch_check.scenario import one_case
from prefetch_check.commands.common import (
    add_case_flag, add_protocol_flag, check_predicate, check_protocol, output_console,
)
from prefetch_check.commands.sampling_args import at_ranks, ranks_value
from prefetch_check.model.source.files import FileProblem, read_regular_file
from prefetch_check.scenario import InputError
from prefetch_check.scenario.errors import closest

HELP = COMMANDS["replay"]


def add_arguments(parser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    parser.add_argument("schedule", metavar="SCHEDULE",
                        help="action ids separated by spaces (e.g. 'S0.issue.q0 S0.drain_arrive'), "
                             "or @FILE holding one (text, or JSON with a \"schedule\" key)")
    add_case_flag(parser)
    add_protocol_flag(parser)
    parser.add_argument("--ranks", type=ranks_value, metavar="N",
                        help="at N tensor-parallel ranks instead of the scenario's (as `simulate --ranks` ran it)")
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
    scenario, case = one_case(args.scenario, args.case)
    case = at_ranks(case.with_protocol(check_protocol(args.protocol, [scenario])), args.ranks, args.scenario)
    model = case.model(predicate)
    check_action_ids(schedule, model, case.config)
    console = output_console()
    console.print(f"replaying on {case.name} with predicate {predicate}:", highlight=False)
    try:
        trace = replay(model, schedule)
    except Divergence as div:
        print_steps(console, model, div.trace_so_far)
        enabled = ", ".join(div.enabled) or "nothing (every thread is blocked)"
        console.print(
            f"diverges at step {div.step + 1}: {div.wanted!r} is not enabled; enabled instead: {enabled}",
            style="bold red", highlight=False, soft_wrap=True,
        )
        return 1
    print_steps(console, model, trace)
    if trace.cycle_start is not None:
        entry = trace.steps[trace.cycle_start - 1].state if trace.cycle_start > 0 else trace.initial
        closes = "returns to" if trace.final_state == entry else "does NOT return to"
        console.print(f"the cycle (after '|') {closes} the state after step {trace.cycle_start}", highlight=False)
    console.print(f"replayed all {len(trace)} steps", style="bold green", highlight=False)
    return 0


def check_action_ids(schedule: str, model, config) -> None:
    """Refuse an id that names no action of this scenario (wrong thread letter, step, rank or
    request), naming the valid ones; an action that exists but is not enabled where the
    schedule takes it is left to the replay (a divergence)."""
    kinds = list(model.action_kinds())
    ranks, requests = range(config.ranks), range(model.protocol.num_requests)
    for n, text in enumerate(parse_schedule(schedule)[0], start=1):
        try:
            action = parse_action_id(text)
            valid = action.id == text and action.kind in kinds and action.rank in ranks and (action.q == -1 or action.q in requests)
        except ValueError:
            valid = False
        if valid:
            continue
        ids = [f"{k[0]}{r}{k[1:]}{q}" for k in kinds for r in ranks for q in ("", *(f".q{i}" for i in requests))]
        near = closest(text, ids)
        threads = ", ".join(f"{t} {name}" for t, name in model.thread_names.items())
        raise InputError(
            f"step {n} of the schedule, {text!r}, is no action of this scenario"
            + (f" (did you mean {near!r}?)" if near else "")
            + f". An action id is <thread><rank>.<step>[.q<request>], e.g. 'S0.check.q0', with the threads "
            f"{threads}; {_span('rank', '', config.ranks)}; {_span('request', 'q', model.protocol.num_requests)}; "
            f"and the steps {', '.join(kinds)}"
        )


def _span(what: str, prefix: str, n: int) -> str:
    return f"{what} {prefix}0" if n == 1 else f"{what}s {prefix}0..{prefix}{n - 1}"


def print_steps(console, model, trace) -> None:
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
