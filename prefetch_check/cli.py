"""The `prefetch-check` command: parse the command line, dispatch to one module per subcommand.

Exit status: 0 success (every expectation holds), 1 a check did not come out as
expected, 2 bad input or usage. Bad input is one paragraph on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from prefetch_check.commands import COMMANDS

EXIT_USAGE = 2

# The errors that are bad input (exit 2, one paragraph): (module, class). Looked up among the
# modules already imported, so that the CLI imports none of them itself: an error can only
# have been raised by a module that was imported.
USAGE_ERRORS = (
    ("prefetch_check.scenario.errors", "InputError"),
    ("prefetch_check.model.protocols.poll.predicates", "PredicateError"),
    ("prefetch_check.model.protocols", "ProtocolError"),
)


class _VersionAction(argparse.Action):
    """`--version`, with the version read only when asked for (it reads the package metadata)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        import prefetch_check

        parser._print_message(f"prefetch-check {prefetch_check.__version__}\n", sys.stdout)
        parser.exit()


def _chosen_command(argv: list[str] | None) -> str | None:
    """The subcommand the command line names (its first word that is not an option), if any."""
    words = sys.argv[1:] if argv is None else argv
    for word in words:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None, every: bool = True) -> argparse.ArgumentParser:
    """The argument parser. `every` (the default): every subcommand with its options. Otherwise
    (what `main` does) only the subcommand `argv` names gets its options, so only that
    command's module is imported; the others are listed with their help line, which is all
    that `prefetch-check --help` shows of them."""
    parser = argparse.ArgumentParser(
        prog="prefetch-check",
        description="Model-check the storage prefetch protocol of SGLang's hierarchical KV cache.",
        epilog="exit status: 0 every expectation holds, 1 one does not, 2 bad input or usage",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if every else _chosen_command(argv)
    for name, help_line in COMMANDS.items():
        p = sub.add_parser(name, help=help_line, description=help_line)
        if every or name == chosen:
            module = importlib.import_module(f"prefetch_check.commands.{name}")
            module.add_arguments(p)
            p.set_defaults(execute=module.execute)
    return parser


def _usage_error(exc: BaseException) -> bool:
    for module_name, name in USAGE_ERRORS:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(exc, getattr(module, name)):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    # a predicate given as module:function may live in the current folder
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    parser = build_parser(argv, every=False)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.execute(args)
    except KeyboardInterrupt:
        print("prefetch-check: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `prefetch-check run | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if not _usage_error(exc):
            raise
        print(f"prefetch-check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
