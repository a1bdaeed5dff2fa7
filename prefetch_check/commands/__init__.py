"""The subcommands of `prefetch-check`, one module each.

A command module defines `HELP` (one line, taken from COMMANDS), `add_arguments(parser)` and
`execute(args) -> int` (the exit status). To add a subcommand, write
`prefetch_check/commands/<name>.py` and add its name and one-line help to COMMANDS.

The help lines live here, not only in the modules, so that `prefetch-check --help` and
`prefetch-check --version` import no command module, and a command imports its own module
alone (issue 23: start-up).
"""

COMMANDS = {
    "run": "check scenario files (buggy vs fixed by default) and judge their expectations",
    "trace": "show the counterexample of a scenario for one predicate and property",
    "replay": "re-run a schedule string through a scenario step by step",
    "simulate": "sample schedules (seeded random walk or PCT) where exhaustive search cannot reach; never VERIFIED",
    "census": "what fraction of schedules (uniform random scheduler) hits each violation: exact, or sampled with an interval",
    "mutants": "check every protocol mutant with the fixed predicate: which property in which scenario catches it",
    "bench": "benchmark the search: states, transitions, time, memory, with and without reductions, growth with ranks",
    "sglang": "check the prefetch protocol of SGLang releases, checkouts or the installed one (verdicts per release)",
}
