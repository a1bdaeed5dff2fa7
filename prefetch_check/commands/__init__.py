"""The subcommands of `prefetch-check`, one module each.

A command module defines `HELP` (one line), `add_arguments(parser)` and
`execute(args) -> int` (the exit status). To add a subcommand, write
`prefetch_check/commands/<name>.py` and add its name to COMMANDS.
"""

COMMANDS = ("run", "trace", "replay", "simulate", "census", "mutants", "bench", "sglang")
