"""What several subcommands share: the search-limit flags, picking one scenario case, consoles."""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
import sys
from pathlib import Path
from typing import Optional

from rich.console import Console

from prefetch_check.explorer.limits import DEFAULT_MEMORY_SHARE, default_memory_mb
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.protocols import ProtocolError, family, load_protocol, protocol_label
from prefetch_check.model.protocols.registry import names
from prefetch_check.scenario import InputError
from prefetch_check.scenario.errors import did_you_mean

REPORT_WIDTH = 200  # wide enough for the verdict table when stdout is not a terminal


class _TrimmedLines:
    """A text file that drops the spaces a fixed-width console pads each line with: a saved report
    shown in a narrower terminal would wrap them into blank runs. Only line ends are trimmed."""

    def __init__(self, file):
        self.file, self.pending = file, ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.file.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        if self.pending:  # a line not ended yet goes out as it is
            self.file.write(self.pending)
            self.pending = ""
        self.file.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name):  # encoding, fileno, ...: the file's own
        return getattr(self.file, name)


def output_console(file=None) -> Console:
    """Results go to stdout; off a terminal use a fixed width (unless COLUMNS says otherwise),
    without the spaces that pad each line to it."""
    console = Console(file=file, markup=False)
    if file is not None or not console.is_terminal:
        width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else REPORT_WIDTH
        console = Console(file=_TrimmedLines(file if file is not None else sys.stdout), width=width, markup=False)
    return console


def _number(text: str, convert, what: str):
    """`text` as a number (int or float), or the argparse error that names what was expected."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number of seconds")
    if not (value > 0 and math.isfinite(value)):  # nan and inf would mean "no limit"
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text}")
    return value


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("search limits (override the scenario's [limits]; a cut search is BOUNDED)")
    g.add_argument("--max-states", type=positive_int, metavar="N", help="stop after N distinct states")
    g.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore beyond N steps")
    g.add_argument("--no-reductions", action="store_true",
                   help="search the plain state graph: no rank symmetry, no partial-order reduction (slower)")
    g.add_argument("--time-limit", type=positive_float, metavar="SECONDS", help="stop a search after this many seconds")
    g.add_argument("--max-memory", type=positive_int, metavar="MB",
                   help=f"stop a search when its process has used this much memory (default: "
                        f"{int(DEFAULT_MEMORY_SHARE * 100)}%% of the machine's, shared among --jobs)")


def search_workers(n: int) -> int:
    """--workers N: processes for one search (0: one per core)."""
    if n < 0:
        raise InputError(f"--workers must be 0 (one per core) or more, got {n}")
    return n or os.cpu_count() or 1


def limit_overrides(args) -> dict:
    """The limit flags, as `explorer.limits.Limits` fields (None: not given)."""
    return {"max_states": args.max_states, "max_depth": args.max_depth, "time_limit": args.time_limit,
            "max_memory_mb": args.max_memory}


def limit_defaults(searches: int = 1) -> dict:
    """What applies when neither a flag nor the scenario's [limits] says: the machine's memory
    default, shared among `searches` running at once."""
    memory = default_memory_mb(searches)
    return {} if memory is None else {"max_memory_mb": memory}


def check_output_path(flag: str, path: str) -> None:
    """Refuse, before any search runs, a report path that cannot be written: a folder, a read-only
    place, a full device. The path is opened for appending (nothing is truncated) and a zero-length
    write is tried (a full device such as /dev/full refuses even that); for a regular file the free
    space of its file system is looked at. A file this check created is removed again."""
    if Path(path).is_dir():
        raise InputError(f"{flag} {path}: is a folder; give the name of a file to write")
    existed = os.path.lexists(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write the report there: {exc.strerror}") from None
    try:
        os.write(fd, b"")
        if stat.S_ISREG(os.fstat(fd).st_mode) and os.fstatvfs(fd).f_bavail == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write the report there: {exc.strerror}") from None
    finally:
        os.close(fd)
        if not existed:
            os.unlink(path)


def add_protocol_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol", metavar="NAME|package.module:Class",
        help=f"the protocol to check: a built-in name ({', '.join(names())}) or a variant of yours, a subclass "
             "of a built-in protocol that overrides a step or hook (replaces the scenario's protocol key)",
    )


def check_protocol(spec, scenarios=()):
    """The --protocol value, loaded once so a bad one is reported before any search. It replaces
    the protocol key of each of `scenarios`, so it must fit them: the same built-in protocol or a
    variant of it (the scenario's parameters are that protocol's), with every property the
    scenario's expectations name."""
    if spec is None:
        return None
    try:
        cls = load_protocol(spec)
    except ProtocolError as exc:
        raise InputError(f"--protocol: {exc}") from None
    ours = family(cls)
    for scenario in scenarios:
        theirs = load_protocol(scenario.protocol)
        if family(theirs) != ours:
            other = family(theirs)
            raise InputError(
                f"--protocol {spec}: {scenario.path} is a scenario of the {other} protocol (its parameters are that "
                f"protocol's), so a {ours} protocol cannot replace its protocol key: give {other} or a variant of it, "
                "or leave that scenario out"
            )
        missing = [p for e in scenario.expect.values() for p, _ in e.verdicts if p not in cls.property_names]
        if missing:
            raise InputError(
                f"--protocol {spec}: {scenario.path} expects a verdict of {missing[0]!r}, a property "
                f"{protocol_label(cls)} does not have (the scenario's protocol, {protocol_label(theirs)}, adds it)"
            )
    return spec


def add_case_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", type=positive_int, metavar="K",
                        help="which case of a scenario with a [matrix] (1-based; listed when missing)")


def check_predicate(spec: str) -> str:
    try:
        load_predicate(spec)
    except PredicateError as exc:
        raise InputError(f"--predicate: {exc}") from None
    return spec


def check_property(name: str, protocol=None) -> str:
    """A property of the protocol (a built-in name, a variant, or None for the default)."""
    names = load_protocol(protocol).property_names
    if name not in names:
        raise InputError(f"--property: unknown property {name!r}" + did_you_mean(name, names))
    return name


def reductions_note(protocol, result) -> Optional[str]:
    """For a protocol variant (`--protocol`, a scenario's `protocol` key): its reductions are
    vouched for at run time or left off, and a user should know which (run and trace print it
    on stderr); None for a built-in protocol or a variant vouched for like one."""
    if protocol is None or result.stats.reductions_settled:
        return None
    return f"prefetch-check: reductions for {protocol}: {result.stats.reductions}"
