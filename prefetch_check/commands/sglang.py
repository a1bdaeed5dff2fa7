"""`prefetch-check sglang SPEC...`: the protocol shape of real SGLang releases (detection only).

A thin front: it resolves the SPECs, fetches releases into the cache and prints one row per
tree (family, predicate location, features not recognised). Verdicts are NOT wired yet: the
protocols of 0.5.16+ are still being modelled, so no property is judged here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from prefetch_check.commands.common import output_console
from prefetch_check.model.source.detect import classify, detect_shape
from prefetch_check.sglang.cache import CACHE_ENV, cache_root
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.git import commits_touching, files_at
from prefetch_check.sglang.index import list_releases
from prefetch_check.sglang.spec import PathSpec, expand, parse_spec
from prefetch_check.sglang.table import Row, detect_rows

HELP = "detect the prefetch protocol shape of SGLang releases, checkouts or the installed one (no verdicts yet)"
NOT_WIRED = "verdicts are not yet wired: this table shows the shape read from each release's own source only"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", metavar="SPEC",
                        help="a release (0.5.20), a range (0.5.1..0.5.22), a path (checkout, site-packages, "
                             "unpacked wheel) or 'installed'")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help=f"where fetched releases are kept (default ${CACHE_ENV} or ~/.cache/prefetch-check/sglang)")
    parser.add_argument("--commits", metavar="A..B",
                        help="with one checkout PATH: every commit of the range that touched the protocol files")
    parser.add_argument("--offline", action="store_true",
                        help="do not ask the package index for the release list; use the cached one")


def execute(args) -> int:
    cache = cache_root(args.cache_dir)
    console = output_console()
    if args.commits:
        rows = _commit_rows(args.specs, args.commits)
    else:
        notes = []

        def releases():
            listing = list_releases(cache, refresh=not args.offline)
            if listing.stale:
                notes.append(listing.stale)
            return listing.versions

        rows = detect_rows(expand(args.specs, _once(releases)), cache)
        for note in notes:
            console.print(f"note: {note}")
    table = Table(title=NOT_WIRED)
    for column in ("tree", "family", "predicate (file:Class.method)", "not recognised / not read"):
        table.add_column(column)
    for row in rows:
        missing = row.error or ("; ".join(row.shape.unrecognised()) if row.shape else "")
        table.add_row(row.label, row.family, row.predicate, missing or "-")
    console.print(table)
    return 0


def _once(fn):
    cached = []

    def call():
        if not cached:
            cached.append(fn())
        return cached[0]
    return call


def _commit_rows(specs: list[str], revision_range: str) -> list[Row]:
    if len(specs) != 1 or not isinstance(parse_spec(specs[0]), PathSpec):
        raise SglangSourceError("--commits takes exactly one SPEC, the path of a git checkout of SGLang")
    checkout = Path(specs[0])
    rows = []
    for sha, subject in commits_touching(checkout, revision_range):
        shape = detect_shape(files_at(checkout, sha))
        rows.append(Row(f"{sha[:10]} {subject[:40]}", classify(shape), shape))
    return rows
