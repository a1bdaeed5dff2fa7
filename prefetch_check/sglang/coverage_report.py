"""What a tree's code checks ran: per function of its prefetch path, and per changed statement.

Why: the code engine's verdicts are about the code it executed; a line no case ran is code
nobody checked. Every code check (each case of code_checks.py, and the conformance check's
replays) comes back with the raw lines of the tree it ran (coverage.py in the executor's child,
model/code/coverage_tracer.py). Here they are folded, per tree, into:

- per function of the prefetch path (path_code.prefetch_path; a class taken whole counts per
  method): its statements as coverage.py counts them (statements.py) and how many some check ran;
- per statement an edit changed against the nearest followed release (changed.py): the cases and
  the number of schedules (runs) that ran it. A changed statement no check ran makes the tree
  "not checked: FILE:LINE is never executed by the code engine (WHY)", with no verdict from either
  engine and exit status 3 (checks.exit_status), never the release's verdicts.

`python -m prefetch_check.sglang.coverage_report REPORT.json [RELEASE]` prints the per-function
table of a `prefetch-check sglang --json` report as Markdown (docs/coverage.md is made with it).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from prefetch_check.sglang.changed import ChangedStatement, Changes
from prefetch_check.sglang import left_out
from prefetch_check.sglang.checks import NOT_CHECKED
from prefetch_check.sglang.statements import DEFS, Statement, body_of, find, statements

CONFORMANCE = "the conformance check"  # how the conformance check's replays are named beside the cases
LOAD = "at load"


@dataclass(frozen=True)
class FunctionCoverage:
    """One function of the path: where it starts, its statements and how many some check ran."""

    ident: str
    file: str
    line: int
    statements: int
    executed: int
    left_out: tuple[tuple[str, int], ...] = ()  # (why, statements) of those no check ran (left_out.py)

    @property
    def name(self) -> str:
        return self.ident.partition(":")[2]

    @property
    def entered(self) -> bool:
        return self.executed > 0


@dataclass(frozen=True)
class ChangedRuns:
    """A changed statement and what ran it: (case, schedules) per check that did, whether the
    tree's load did (a module-level statement), and why nothing did."""

    changed: ChangedStatement
    cases: tuple[tuple[str, int], ...] = ()
    at_load: bool = False
    why: str = ""

    @property
    def executed(self) -> bool:
        return self.at_load or any(n for _, n in self.cases)

    @property
    def schedules(self) -> int:
        return sum(n for _, n in self.cases)


@dataclass
class TreeCoverage:
    """The coverage of one tree's prefetch path by its code checks."""

    functions: list[FunctionCoverage]
    checks: list[str]  # the checks whose lines are counted (case names, the conformance check)
    changes: Optional[Changes] = None
    changed: list[ChangedRuns] = field(default_factory=list)
    off_path: list[FunctionCoverage] = field(default_factory=list)  # ran, but no piece of the path (off_path())

    @property
    def statements(self) -> int:
        return sum(f.statements for f in self.functions)

    @property
    def executed(self) -> int:
        return sum(f.executed for f in self.functions)

    def never_entered(self) -> list[FunctionCoverage]:
        return [f for f in self.functions if not f.entered]

    def unexecuted(self) -> list[ChangedRuns]:
        return [c for c in self.changed if not c.executed]

    def summary(self) -> str:
        """One line: 'its code ran 375 of 1,973 statements (19%) of 154 prefetch-path functions; 103 never entered'."""
        share = f" ({100 * self.executed // self.statements}%)" if self.statements else ""
        text = (f"its code ran {self.executed:,} of {self.statements:,} statements{share} of {len(self.functions):,} "
                f"prefetch-path functions; {len(self.never_entered()):,} never entered")
        if self.off_path:
            first = self.off_path[0]
            text += (f"; {len(self.off_path):,} function(s) ran off the fingerprinted path (an edit there is not "
                     f"refused): {first.name} at {first.file}:{first.line}" + (" ..." if len(self.off_path) > 1 else ""))
        return text

    def refusal(self) -> str:
        """'FILE:LINE is never executed by the code engine (WHY)' for the first changed statement
        no check ran, and how many more there are ('' when every one ran)."""
        missing = self.unexecuted()
        if not missing:
            return ""
        first = missing[0]
        text = f"{first.changed.where()} is never executed by the code engine ({first.why})"
        if len(missing) > 1:
            text += f"; {len(missing) - 1} more changed statement(s) never executed: " + ", ".join(
                m.changed.where() for m in missing[1:4]) + (" ..." if len(missing) > 4 else "")
        return text

    def to_json(self) -> dict:
        out = {
            "checks": self.checks,
            "statements": self.statements,
            "executed": self.executed,
            "functions": len(self.functions),
            "never_entered": len(self.never_entered()),
            "summary": self.summary(),
            "per_function": [{"function": f.name, "file": f.file, "line": f.line, "statements": f.statements,
                              "executed": f.executed, **({"left_out": dict(f.left_out)} if f.left_out else {})}
                             for f in self.functions],
        }
        out["left_out"] = [{"why": why, "statements": n, "functions": k}
                           for why, n, k in left_out.tally(out["per_function"])]
        out["ran_off_path"] = [{"function": f.name, "file": f.file, "line": f.line, "statements": f.statements,
                                "executed": f.executed} for f in self.off_path]
        if self.changes is not None:
            out["changed"] = {
                "against": self.changes.against,
                "note": self.changes.note,
                "statements": [{"file": c.changed.file, "line": c.changed.line, "piece": c.changed.piece.partition(":")[2],
                                "kind": c.changed.kind, "schedules": c.schedules, "at_load": c.at_load,
                                "cases": [{"case": name, "schedules": n} for name, n in c.cases if n],
                                **({"why": c.why} if not c.executed else {})} for c in self.changed],
                "never_executed": self.refusal(),
            }
        return out


# ---------------------------------------------------------------- folding the checks' lines


def _check_coverage(row) -> list[tuple[str, dict]]:
    """(name, the child's coverage answer) of every check of the row that came back with one."""
    out = []
    for run in row.code.runs:
        cov = (run.result or {}).get("coverage")
        if cov:
            out.append((run.case, cov))
    conformance = getattr(row.conformance, "coverage", None)
    if conformance:
        out.append((CONFORMANCE, conformance))
    return out


def functions_of(path: Mapping) -> list[tuple[str, str, ast.AST]]:
    """(ident, file, definition) of every function of the path: its functions and methods, and the
    methods of a class it takes whole (a class whose methods are pieces of their own is skipped,
    like module bindings: what they hold runs at load)."""
    return [item for item, _ in _functions_with_modules(path, {})]


def _functions_with_modules(path: Mapping, modules: dict) -> list:
    # the idents with pieces of their own inside them (every proper dotted prefix of an ident)
    split = {ident.rsplit(".", k)[0] for ident in path for k in range(1, ident.count(".") + 1)}
    out = []
    for ident, piece in path.items():
        module = modules.get(piece.file)
        if module is None:
            continue
        name = piece.name
        if name.startswith("<module>."):
            continue
        node = find(module, piece.line, name.rpartition(".")[2])
        if isinstance(node, DEFS):
            out.append(((ident, piece.file, node), module))
        elif isinstance(node, ast.ClassDef) and ident not in split:
            for stmt in body_of(node):
                if isinstance(stmt, DEFS):
                    out.append(((f"{ident}.{stmt.name}", piece.file, stmt), module))
    return out


def tree_coverage(row, read=None) -> Optional[TreeCoverage]:
    """The coverage of a row whose code checks ran (None when none came back with coverage).
    `read(rel)`: the text of a file of the tree (default: read below row.srt)."""
    checks = _check_coverage(row)
    if not checks or not row.path or row.srt is None:
        return None
    read = read or (lambda rel: (row.srt / rel).read_text(encoding="utf-8", errors="replace"))
    modules: dict[str, ast.Module] = {}
    for piece in row.path.values():
        if piece.file not in modules:
            try:
                modules[piece.file] = ast.parse(read(piece.file))
            except (OSError, SyntaxError):
                continue
    raw: dict[str, set[int]] = {}
    for _, cov in checks:
        for rel, lines in cov.get("lines", {}).items():
            raw.setdefault(rel, set()).update(lines)
    functions = []
    for (ident, rel, node), _ in _functions_with_modules(row.path, modules):
        own = list(statements(body_of(node)))
        ran = raw.get(rel, set())
        executed = sum(1 for s in own if s.covers(ran))
        functions.append(FunctionCoverage(ident, rel, node.lineno, len(own), executed,
                                          _left_out(ident, rel, own, ran, executed)))
    functions = _overridden(functions, modules)
    functions.sort(key=lambda f: (f.file, f.line))
    result = TreeCoverage(functions, [name for name, _ in checks], row.changed,
                          off_path=off_path(row.path, {f.ident for f in functions}, raw, read, modules))
    if row.changed is not None:
        files = {c.file for c in row.changed.statements if c.file in modules}  # only where a statement changed
        covered = {rel: {s.line for s in statements(body_of(modules[rel])) if s.covers(raw.get(rel, set()))}
                   for rel in files}
        by_block = {rel: _statements_by_block(modules[rel]) for rel in files}
        for c in row.changed.statements:
            cases, at_load = [], False
            for name, cov in checks:
                for entry in cov.get("counted", {}).get(c.file, []):
                    if tuple(entry["span"]) == c.span:
                        cases.append((name, entry["runs"]))
                        at_load = at_load or entry["load"]
            runs = ChangedRuns(c, tuple(cases), at_load)
            if not runs.executed:
                runs = ChangedRuns(c, tuple(cases), at_load,
                                   why_never(c, covered.get(c.file, set()), bool(raw.get(c.file)), by_block.get(c.file, {})))
            result.changed.append(runs)
    return result


def _overridden(functions: list[FunctionCoverage], modules: Mapping[str, ast.Module]) -> list[FunctionCoverage]:
    """A never-entered method whose class a subclass the cases run overrides it in is named so
    (left_out.overridden), not "no case calls it"."""
    bases = {node.name: tuple(b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                              if isinstance(b, (ast.Name, ast.Attribute)))
             for module in modules.values() for node in ast.walk(module) if isinstance(node, ast.ClassDef)}
    entered = {f.name for f in functions if f.entered}
    out = []
    for f in functions:
        if f.left_out == ((left_out.NO_CALLER, f.statements),):
            why = left_out.overridden(f.name, bases, entered)
            if why:
                f = dataclasses.replace(f, left_out=((why, f.statements),))
        out.append(f)
    return out


def off_path(path: Mapping, on_path: set[str], raw: Mapping[str, set[int]], read,
             parsed: Optional[Mapping[str, ast.Module]] = None) -> list[FunctionCoverage]:
    """The functions and methods (not nested in a function: those are their parent's code) that
    some check ran but that no piece of the path holds: code the checks' verdicts rest on whose
    edit the floor would not see. Kept empty by the path's entry points (path_code.py); a
    function listed here is a gap in them."""
    whole = {piece.file for piece in path.values() if piece.whole}
    out = []
    for rel in sorted(raw):
        if rel in whole or not rel.endswith(".py") or not raw[rel]:
            continue
        module = (parsed or {}).get(rel)  # the path's files, parsed once by tree_coverage
        if module is None:
            try:
                module = ast.parse(read(rel))
            except (OSError, SyntaxError, UnicodeDecodeError):
                continue
        for qual, node in _definitions(module.body, ""):
            ident = f"{rel}:{qual}"
            if ident in on_path:
                continue
            own = list(statements(body_of(node)))
            executed = sum(1 for st in own if st.covers(raw[rel]))
            if executed:
                out.append(FunctionCoverage(ident, rel, node.lineno, len(own), executed))
    return out


def _definitions(body: list, prefix: str):
    """(qualified name, node) of every function and method of a module, classes nested included."""
    for stmt in body:
        if isinstance(stmt, DEFS):
            yield prefix + stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            yield from _definitions(stmt.body, f"{prefix}{stmt.name}.")


def _left_out(ident: str, rel: str, own: list[Statement], ran: set[int], executed: int) -> tuple:
    """(why, statements) for the statements of one function no check ran (left_out.py)."""
    if executed == len(own):
        return ()
    if not ran:
        return ((left_out.file_reason(rel), len(own)),)
    if not executed:
        return ((left_out.function_reason(known_why(ident.partition(":")[2])), len(own)),)
    return tuple(sorted(left_out.statement_reasons(own, ran).items()))


def _statements_by_block(module: ast.Module) -> dict[tuple, list[Statement]]:
    out: dict[tuple, list[Statement]] = {}
    for s in statements(body_of(module)):
        out.setdefault(s.enclosing, []).append(s)
    return out


BRANCH = {"If.body": "the branch at line {line} is never taken in any case",
          "If.orelse": "the else branch of the if at line {line} is never taken in any case",
          "For.body": "the loop at line {line} never runs its body in any case",
          "While.body": "the loop at line {line} never runs its body in any case",
          "For.orelse": "the loop at line {line} never ends without a break in any case",
          "While.orelse": "the loop at line {line} never ends without a break in any case",
          "except": "no case raises what the except at line {line} catches",
          "Try.orelse": "the try at line {line} never ends without an exception in any case",
          "case": "no case matches the case at line {line}",
          "With.body": "every case raises entering the with at line {line}"}
SCOPE_KINDS = ("FunctionDef.body", "AsyncFunctionDef.body", "ClassDef.body")


def why_never(c: ChangedStatement, covered: set[int], loaded: bool, by_block: Mapping[tuple, list[Statement]]) -> str:
    """Why no check ran a changed statement, from the statements around it that ran (`covered`:
    their first lines): its file is not run at all, its function is never entered, the branch
    holding it is never taken, or every case returns or raises before it."""
    if not loaded:
        return f"the code engine does not run {c.file}"
    chain = c.enclosing  # innermost first
    scope = next((k for k, e in enumerate(chain) if e[0] in SCOPE_KINDS[:2]), None)
    qualname = ".".join(e[2] for e in reversed(chain[scope:]) if e[0] in SCOPE_KINDS) if scope is not None else ""
    blocks = list(reversed(_blocks(chain, len(chain) if scope is None else scope)))  # outermost first
    for depth, block in enumerate(blocks):
        if any(s.line in covered for s in by_block.get(block, [])):
            continue
        if depth == 0 and qualname:
            return f"no case enters {qualname}"
        kind, line = (block[0][0], block[0][1]) if block else ("", c.line)
        if kind in ("except", "case") or line in covered:
            return BRANCH.get(kind, "the branch at line {line} is never taken in any case").format(line=line)
        return f"every case returns or raises before line {line}"
    return f"every case returns or raises before line {c.line}"


def _blocks(chain: tuple, last: int) -> list[tuple]:
    """The blocks (enclosing tuples) from the statement's own out to chain[last:], innermost first
    (an `except` or `case` clause and its statement are one step)."""
    out, k = [], 0
    while k <= last:
        out.append(chain[k:])
        if k == len(chain):
            break
        k += 2 if chain[k][0] in ("except", "case") else 1
    return out


# ---------------------------------------------------------------- settling the rows


def settle(rows: list) -> None:
    """After the code and conformance checks: each row's coverage, and a row with a changed
    statement no check ran becomes "not checked" with no verdict from either engine."""
    for row in rows:
        if not row.code.ran:
            continue
        row.coverage = tree_coverage(row)
        refusal = row.coverage.refusal() if row.coverage is not None else ""
        if refusal:
            earlier = f"{row.status}: {row.note}" if row.note else row.status
            row.status, row.note = NOT_CHECKED, f"{refusal}; before it ran: {earlier}"
            row.code.withheld = refusal


def table_rows(row) -> list[tuple[str, ...]]:
    """The coverage line under a tree's verdicts (the table's columns: property "coverage")."""
    if row.coverage is None:
        return []
    return [("", "", "", "coverage", row.coverage.summary(), "", "", "")]


def to_json(row) -> Optional[dict]:
    return row.coverage.to_json() if row.coverage is not None else None


# ---------------------------------------------------------------- the docs' table


PP_TICKETS = ("PP tickets (0.5.21+): only buffer_only with PP > 1 has them; the ticket cases (0.5.23's shape) run "
              "one request of one stored page or two, an abort in round 1 or as soon as issued (a cancelled decision), a "
              "stage's failed query: not a failed ticket allocation or a detach; 0.5.21-0.5.22's PP0-side query is not "
              "modelled")
WHY_NOT_RUN = {
    # substrings of a function's name -> why no case of the code engine enters it (docs/coverage.md)
    "_shared": ("the shared page-envelope host arena: its cases (sidecars with shared_arena) allocate and size a "
                "prefix; the reclaim through host_evict_fn, the compaction and the write-back side are not run"),
    "free_prefetch_host_buffers": "a hit's host bounce rolled back before IO owns it: PP tickets or the shared arena only",
    "trim_prefetch_full_head": "buffer_only with sidecar pools: the device-trimmed FULL head (no buffer_only case has them)",
    "pp_": PP_TICKETS,
    "_pp": PP_TICKETS,
    "ticket": PP_TICKETS,
    "deadline": "the timeout policy: a deadline path the timeout cases (one rank; PP=2 with no page stored) do not reach",
    "timeout": "the timeout policy: a deadline path the timeout cases (one rank; PP=2 with no page stored) do not reach",
    "retr": "retries: the retry cases (0.5.23 on) do not reach it (a third attempt, the immediate refetch of buffer mode)",
    "buffer": "buffer_only host memory mode: a path its cases do not reach (they run 0.5.22 on)",
    "sidecar": ("sidecar pools: the sidecar cases run the prefetch side (0.5.19 on); "
                "the write-back side and sidecars indexed from SWA/Mamba (draft pools) are not run"),
    "nonkv": ("sidecar pools: the sidecar cases run the prefetch side (0.5.19 on); "
              "the write-back side and sidecars indexed from SWA/Mamba (draft pools) are not run"),
    "mamba": "sidecar pools: a SWA/Mamba path the sidecar cases do not reach (device-side, write-back or buffer_only)",
    "swa": "sidecar pools: a SWA/Mamba path the sidecar cases do not reach (device-side, write-back or buffer_only)",
    "trailing": "sidecar pools: a trailing-window path the sidecar cases do not reach (write-back or buffer_only)",
    "evict": ("eviction: the write path's cases evict from the device through the cache's own walk (evict_for_alloc, "
              "_evict_components) and the host-pressure and write cases from host (evict_host); a Mamba or SWA "
              "state's eviction, buffer_only's and the poll world's are not run"),
    "replace_pending_write_through": ("cache mode's write path: its split cases (0.5.19 on) split a node of one "
                                      "page's prefix while its write-through is pending; other shapes are not run"),
    "write_back": ("the write_back policy: its cases (cache mode) write a leaf back as the device eviction takes it; "
                   "a sidecar state's write-back (Mamba, SWA) is not run"),
    "abort": ("aborts: an abort path the cases do not take (they abort by the client, as soon as issued or in a "
              "round, and by the scheduler for an arrival: the queue full, a priority)"),
    "__init__": "the executor builds the objects with __new__ and the attributes the path reads",
    "attach_storage_backend": "the executor builds the objects with __new__ and the attributes the path reads",
    "_start_storage_threads": "the executor starts the threads itself",
    "parse_storage_backend_extra_config": "the executor builds the objects with __new__ and the attributes the path reads",
    "mooncake": "another storage backend's transfer (the stand-in storage is generic)",
    "zerocopy": "another storage backend's transfer (the stand-in storage is generic)",
    "zero_copy": "another storage backend's transfer (the stand-in storage is generic)",
}


BUFFER_WHY = {
    # BufferModePipeline methods the buffer_only cases leave out (docs/executor.md, the buffer_only world)
    "_defer_prefetch_for_host_capacity": "buffer_only: a staging allocation failing (the cases park on the rate limit first)",
    "prefetch_prefix_key": "buffer_only: not called on the prefetch path the cases run",
    "_resolve_device_covered": "buffer_only: the device covering a staged span at admission (its case, two requests "
                              "of one prefix, runs 0.5.22 on)",
    "defer_staged_admission": "buffer_only: device capacity short at load-back (making room runs the cache's "
                              "evict_for_alloc walk, which the device tree stand-in does not model)",
    "_minimum_full_transfer_tokens": "buffer_only: the shared host arena or SWA windows (no case has them)",
    "_transfer_tokens": "buffer_only: sidecar pool transfers (no case has them)",
    "_shared_": "buffer_only: the shared host arena (no case has it)",
    "_host_staging_sizes": "buffer_only: the shared host arena (no case has it)",
}
BUFFER_WRITE_SIDE = ("buffer_only: a write-path method the write_through cases (0.5.22 on) do not reach: sidecar or "
                     "SWA pools, a split node")


def known_why(name: str) -> str:
    if name.startswith("BufferModePipeline."):
        method = name.split(".", 1)[1]
        return next((why for key, why in BUFFER_WHY.items() if key in method), BUFFER_WRITE_SIDE)
    lowered = name.lower()
    return next((why for key, why in WHY_NOT_RUN.items() if key in lowered), "")


def markdown(release: dict) -> str:
    """The per-file table of one release of a --json report (docs/coverage.md): per file of the
    path, its functions, how many were entered, its statements and how many ran (the
    per-function figures are in --json: thousands of rows over the whole path)."""
    cov = release.get("coverage")
    if not cov:
        return f"{release['release']}: no coverage in this report (the code engine did not run it)\n"
    files: dict[str, list] = {}
    for f in cov["per_function"]:
        files.setdefault(f["file"], []).append(f)
    lines = [f"### {release['release']}", "", cov["summary"] + f" (checks: {', '.join(cov['checks'])})", "",
             "| file | functions | entered | statements | executed | why some are not entered (where known) |",
             "|---|---|---|---|---|---|"]
    ordered = sorted(files.items(), key=lambda kv: (-sum(f["executed"] for f in kv[1]), kv[0]))
    for rel, fs in ordered:
        if not any(f["executed"] for f in fs):
            continue
        whys = sorted({known_why(f["function"]) for f in fs if not f["executed"]} - {""})
        lines.append(f"| {rel} | {len(fs)} | {sum(1 for f in fs if f['executed'])} | "
                     f"{sum(f['statements'] for f in fs):,} | {sum(f['executed'] for f in fs):,} | {'; '.join(whys)} |")
    idle = sorted(((sum(f["statements"] for f in fs), rel, fs) for rel, fs in ordered
                   if not any(f["executed"] for f in fs)), reverse=True)
    if idle:
        largest = ", ".join(f"{rel} ({n:,})" for n, rel, _ in idle[:5])
        lines.append(f"| {len(idle)} other files: no case enters them | {sum(len(fs) for _, _, fs in idle):,} | 0 | "
                     f"{sum(n for n, _, _ in idle):,} | 0 | the largest: {largest} |")
    off = cov.get("ran_off_path") or []
    if off:
        lines += ["", f"Ran, but on no piece of the fingerprinted path ({len(off):,} functions: an edit there is not "
                      "refused by the floor):", "", "| function | file:line | executed |", "|---|---|---|"]
        lines += [f"| {f['function']} | {f['file']}:{f['line']} | {f['executed']} of {f['statements']} |" for f in off]
    reasons = left_out.tally(cov["per_function"])
    if reasons:
        lines += ["", f"Every statement no case ran, by why ({sum(n for _, n, _ in reasons):,} statements):", "",
                  "| why | statements | functions |", "|---|---|---|"]
        lines += [f"| {why} | {n:,} | {k:,} |" for why, n, k in reasons]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    usage = "usage: python -m prefetch_check.sglang.coverage_report REPORT.json [RELEASE ...]"
    if not argv or argv[0].startswith("-"):
        print(usage, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        doc = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        releases = doc["releases"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"no key {exc}" if isinstance(exc, KeyError) else (exc.strerror if isinstance(exc, OSError) else exc)
        print(f"coverage_report: {argv[0]}: not a `prefetch-check sglang --json` report ({why})", file=sys.stderr)
        return 2
    wanted = set(argv[1:])
    missing = wanted - {r.get("release") for r in releases}
    if missing:
        print(f"coverage_report: {argv[0]}: no release {', '.join(sorted(missing))} in the report", file=sys.stderr)
        return 2
    for release in releases:
        if not wanted or release["release"] in wanted:
            print(markdown(release))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
