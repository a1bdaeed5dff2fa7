"""The `prefetch-check` command: parse the command line, dispatch to one module per subcommand.

Exit status: 0 success (every expectation holds), 1 a check did not come out as
expected, 2 bad input or usage. Bad input is one paragraph on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from prefetch_check import __version__
from prefetch_check.model.protocols import ProtocolError
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.commands import COMMANDS
from prefetch_check.scenario import InputError

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prefetch-check",
        description="Model-check the storage prefetch protocol of SGLang's hierarchical KV cache.",
        epilog="exit status: 0 every expectation holds, 1 one does not, 2 bad input or usage",
    )
    parser.add_argument("--version", action="version", version=f"prefetch-check {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"prefetch_check.commands.{name}")
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(execute=module.execute)
    return parser


def main(argv: list[str] | None = None) -> int:
    # a predicate given as module:function may live in the current folder
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.execute(args)
    except (InputError, PredicateError, ProtocolError) as exc:
        print(f"prefetch-check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("prefetch-check: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `prefetch-check run | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
