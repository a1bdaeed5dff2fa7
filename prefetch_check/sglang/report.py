"""The verdicts of `prefetch-check sglang` as JSON and Markdown, and the texts the terminal report
(terminal.py) shares with them.

Per tree: the release, the file:Class.method of its predicate, its shape (family and protocol,
then each option the source settled with the features that settled it), per property the
verdict of the release's own predicate and of our transcription, and the verdicts of its code,
executed. A violation has the length of its shortest counterexample and the `prefetch-check
trace` command line that shows it. A tree without verdicts says why.
"""

from __future__ import annotations

import json
import shlex
from typing import Optional

from prefetch_check import __version__
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VIOLATED
from prefetch_check.sglang.families import UNKNOWN
from prefetch_check.sglang.checks import (
    ALL, CHECKED, DROPPED, TRANSCRIPTION, UPSTREAM, Finding, PropertyVerdict, ReleaseCheck,
)
from prefetch_check.sglang.code_checks import NOT_JUDGED
from prefetch_check.sglang.history import Change
from prefetch_check.sglang import coverage_report, known_findings, verdict_cache

COLUMNS = ("release", "predicate (file:Class.method)", "shape", "property", "model, all schedules",
           "only without an upstream assumption", f"ours ({TRANSCRIPTION})", "its code, executed")
FAILING = (VIOLATED, BOUNDED)


class Footnotes:
    """Numbered trace commands, in the order the table shows them: per violation the shortest case,
    then every other case that violates the property."""

    def __init__(self):
        self.notes: list[tuple] = []  # the Findings of each footnote, shortest first

    def add(self, verdict: PropertyVerdict) -> int:
        self.notes.append(verdict.cases)
        return len(self.notes)

    def lines(self, markdown: bool = False) -> list[str]:
        out = []
        for number, cases in enumerate(self.notes, start=1):
            first, rest = cases[0], cases[1:]
            out.append(f"{number}. {first.label()}: `{first.command}`" if markdown
                       else f"[{number}] {first.label()}: {first.command}")
            out.append(f"    consequence: {first.consequence}")
            if first.reproduction:
                out.append(f"    reproduced without prefetch-check: {first.reproduction}")
            if first.settings:
                out.append(f"    its case runs with settings that are not the release's defaults: {'; '.join(first.settings)}")
            if rest:
                also = ", ".join(f"{f.case} ({f.steps} steps)" for f in rest)
                out.append(f"    also violated in {also}; their commands are in the --json report")
        return out


def verdict_text(v: Optional[PropertyVerdict], notes: Footnotes, same_as: Optional[PropertyVerdict] = None) -> str:
    """The cell of a verdict; a violation's commands become a footnote, unless it shows the same
    as `same_as` (our transcription's counterexample next to the release's own: same length), and
    the number of other cases that violate it follows."""
    if v is None:
        return ""
    if v.verdict == VIOLATED:
        more = f" (+{len(v.cases) - 1} case{'s' if len(v.cases) > 2 else ''})" if len(v.cases) > 1 else ""
        needs = " (non-default settings)" if v.cases[0].settings else ""
        if same_as is not None and same_as.verdict == VIOLATED and same_as.steps == v.steps:
            return f"VIOLATED, {v.steps} steps{needs}{more}"
        return f"VIOLATED, {v.steps} steps [{notes.add(v)}]{needs}{more}"
    if v.verdict == NOT_APPLICABLE:
        return "n/a"
    return v.verdict


def without_text(v: PropertyVerdict, notes: Footnotes) -> str:
    """The cell of the findings only a scenario that drops an upstream assumption has: blank where none."""
    return verdict_text(v, notes) if v.verdict in FAILING else ""


def shape_lines(row: ReleaseCheck) -> list[str]:
    head = row.family or "-"
    if row.protocol and row.family != UNKNOWN:
        head += f" ({row.protocol})"
    lines = [head]
    if row.release and row.release.modelled:
        lines += [s.describe() for s in row.release.settings]
    return lines


def _short(predicate: str) -> str:
    """`unified_radix_cache.py:UnifiedRadixCache._can_terminate_prefetch` (the folder dropped)."""
    path, sep, qualname = predicate.partition(":")
    return f"{path.rsplit('/', 1)[-1]}{sep}{qualname}"


def _marked(text: str, mark: str) -> str:
    """A verdict cell with its mark against the baseline (baseline.py), if any."""
    return f"{text} ({mark})" if mark and text else text


def code_text(row: ReleaseCheck, prop: str, notes: Footnotes, mark: str = "") -> str:
    """The cell of the tree's code for `prop`: its verdict, a violation's footnote with the command
    that shows its steps, or why the executor gave none."""
    verdicts = row.code.verdicts()
    if prop not in verdicts:
        return ""
    v = verdicts[prop]
    if v.verdict == VIOLATED:
        return _marked(verdict_text(code_verdict(row, prop, v), notes), mark)
    if v.verdict == NOT_JUDGED:
        return "not judged"
    return _marked(v.verdict, mark)


def code_verdict(row: ReleaseCheck, prop: str, v) -> PropertyVerdict:
    """A code violation as a verdict of the table's kind, so it shares the footnotes."""
    command = f"prefetch-check sglang {shlex.quote(str(row.srt))} --engine code --code-trace {prop}"
    known = known_findings.reproduction(row.label, bool(row.path_differs), prop, v.case)
    finding = Finding(f"its code, {v.case}", v.steps, command, f"{v.reason} (at {v.site})",
                      consequence=v.consequence, reproduction=known.text() if known else "")
    return PropertyVerdict(VIOLATED, v.steps, finding.case, command, finding.reason, cases=(finding,))


def code_note(row: ReleaseCheck) -> str:
    """Why a tree's code has no verdicts, or what it called that the executor does not model."""
    if not row.code.ran:
        return f"its code: {row.code.note}" if row.code.note else ""
    missing = row.code.not_modelled()
    return ("its code: not modelled: " + "; ".join(m.removeprefix("not modelled: ") for m in missing[:3])) if missing else ""


def rows_of(row: ReleaseCheck, notes: Footnotes, base=None) -> list[tuple[str, ...]]:
    """The table lines of one tree: per property the release's verdict under upstream's assumptions,
    what only the scenarios that drop one find, ours under upstream's assumptions, and the verdict
    of the tree's own code executed; with a `base`line, a failing verdict marked against it where
    it shows. A tree the model does not answer for shows why, and its code's verdicts."""
    shape = shape_lines(row)
    code_marks = base.code_marks(row) if base is not None else {}
    conformance = conformance_text(row)
    if row.status != CHECKED or row.withheld:
        why = f"{row.status}: {row.note}" if row.note else row.status
        if row.withheld:
            why = "the model's verdicts are withheld: its code diverges from the model (conformance, above)"
        code = row.code.verdicts()
        out = [(row.label, _short(row.predicate), "\n".join(shape), "conformance", conformance, "", "", "")] \
            if conformance else []
        out.append(("" if out else row.label, "" if out else _short(row.predicate), "" if out else "\n".join(shape),
                    "-", why, "", "", code_note(row)))
        for prop in code:
            out.append(("", "", "", prop, "", "", "", code_text(row, prop, notes, code_marks.get(prop, ""))))
        return out + coverage_report.table_rows(row)  # coverage: what its code checks ran
    own, dropped = row.verdicts("own", UPSTREAM), row.verdicts("own", DROPPED)
    ours = row.verdicts("ours", UPSTREAM)
    marks = base.marks(row) if base is not None else {}
    props = list(own)
    note = code_note(row)
    out = [] if not conformance else [(row.label, _short(row.predicate), shape[0], "conformance", conformance,
                                       "", "", note)]
    if out:
        shape, note = shape[1:], ""
        label_done = True
    else:
        label_done = False
    for i in range(max(len(props), len(shape))):
        prop = props[i] if i < len(props) else ""
        mark = marks.get(prop, "")
        in_dropped = bool(prop) and own[prop].verdict not in FAILING and dropped[prop].verdict in FAILING
        code = code_text(row, prop, notes, code_marks.get(prop, "")) if prop else ""
        first = i == 0 and not label_done
        out.append((
            row.label if first else "",
            _short(row.predicate) if first else "",
            shape[i] if i < len(shape) else "",
            prop,
            _marked(verdict_text(own.get(prop), notes), "" if in_dropped else mark),
            _marked(without_text(dropped[prop], notes), mark if in_dropped else "") if prop else "",
            verdict_text(ours.get(prop), notes, same_as=own.get(prop)),
            code or (note if i == 0 else ""),
        ))
    return out + coverage_report.table_rows(row)  # coverage: what its code checks ran


def conformance_text(row: ReleaseCheck) -> str:
    """The conformance line of a tree (ack-drain or predicate-poll): conforms (with what the model's verdicts rest
    on), the first divergence, or why there is none."""
    c = row.conformance
    if not c.planned:
        return c.note
    if c.error:
        return c.error
    if c.answers is None:
        return "not run"
    f = c.figures()
    figures = (f"{f['schedules']:,} model schedules replayed on its code, {f['states']:,} model states compared "
               f"(budget: {c.budget_summary()})")
    d = c.divergence
    if d is not None:
        fields = "; ".join(f"{k}: model {v['model']}, code {v['code']}" for k, v in list(d["fields"].items())[:3])
        stack = " < ".join(d["stack"][:3]) or d["site"]
        return (f"DIVERGES ({d['case']}) at model step {d['step']} {d['action']} ({d['description']}): {fields}; "
                f"the code at {stack}; {d['why']} (after {figures})")
    missing = c.not_modelled()
    head = "conforms" if not missing else f"conforms as far as modelled ({'; '.join(missing)})"
    rests = row.sizes()
    return f"{head}: {figures}" + (f"; the verdicts below: {rests}" if rests else "")


def conformance_headlines(row: ReleaseCheck) -> list[str]:
    """The conformance of a tree in a few words, longest first (the terminal takes the longest that
    fits its line; conformance_text says all of it)."""
    c = row.conformance
    if not c.planned:
        return [c.note, "no conformance check"] if c.note else ["not checked"]
    if c.error:
        return ["could not run"]
    if c.answers is None:
        return ["not run"]
    d = c.divergence
    if d is not None:
        return [f"DIVERGES in {d['case']} at model step {d['step']} ({d['action']}): the model's verdicts withheld",
                f"DIVERGES at model step {d['step']} ({d['action']}): the model's verdicts withheld",
                f"DIVERGES at model step {d['step']}", "DIVERGES"]
    f = c.figures()
    head = "conforms" if not c.not_modelled() else "conforms as far as modelled"
    return [f"{head}: {f['schedules']:,} model schedules replayed on its code, {f['states']:,} states compared",
            f"{head}: {f['schedules']:,} schedules replayed, {f['states']:,} states compared", head]


def code_rests_on(code) -> str:
    """What a tree's code verdicts rest on: its cases, their ranks, how many were searched whole."""
    ranks = sorted({run.config.ranks for run in code.runs})
    span = f"{ranks[0]} rank{'s' if ranks[0] > 1 else ''}" if len(ranks) == 1 else f"{ranks[0]}-{ranks[-1]} ranks"
    whole = sum(1 for run in code.runs if run.result and run.result.get("exhaustive"))
    failed = sum(1 for run in code.runs if run.result is None)
    if failed == len(code.runs):
        return f"{len(code.runs)} case(s) of {span}: none could run"
    cut: dict[str, int] = {}
    for run in code.runs:
        if run.result and not run.result.get("exhaustive"):
            cut[run.result.get("bound") or "a limit"] = cut.get(run.result.get("bound") or "a limit", 0) + 1
    parts = [f"{whole} exhaustive"] + [f"{n} cut ({why})" for why, n in cut.items()]
    parts += [f"{failed} could not run"] if failed else []
    vacant = sum(1 for run in code.runs if run.result and run.result.get("unreached"))
    parts += [f"{vacant} whose scripted event no run reached (--json: unreached)"] if vacant else []
    return f"{len(code.runs)} case(s) of {span}: " + ", ".join(parts)


def baseline_line(base) -> str:
    """What the run is compared with: the baseline tree and what fails in it."""
    failing = [f"{p} {v}" for p, v in base.verdicts.items() if v in FAILING]
    return (f"baseline: {base.label}: {', '.join(failing) or 'every property holds'}; only a violation it does not "
            "have fails the run")


CHANGES_HEAD = "verdict changes (each commit compared with the last one judged):"


def change_lines(changes: list[Change]) -> list[str]:
    """`--commits`: one line per verdict transition or refused commit, under a heading."""
    return [CHANGES_HEAD] + [f"  {c.describe()}" for c in changes] + [""] if changes else []


def left_out(rows: list[ReleaseCheck]) -> list[str]:
    """What each protocol leaves out of the releases it checks, once per protocol."""
    seen: dict[str, tuple] = {}
    for row in rows:
        if row.release and row.release.modelled and row.protocol not in seen:
            seen[row.protocol] = row.release.left_out
    return [f"{protocol} leaves out: {'; '.join(items)}" for protocol, items in seen.items() if items]


# ---------------------------------------------------------------- JSON


def _verdict_json(v: PropertyVerdict) -> dict:
    out = {"verdict": v.verdict}
    if v.verdict == VIOLATED:
        out.update(steps=v.steps, case=v.case, command=v.command, consequence=v.cases[0].consequence)
        if v.cases[0].settings:
            out["non_default_settings"] = list(v.cases[0].settings)
        if v.replaced:
            out["case_options_replaced"] = v.replaced
    if v.reason and v.verdict in (VIOLATED, BOUNDED):
        out["reason"] = v.reason
    return out


def _finding_json(f) -> dict:
    out = {"case": f.case, "steps": f.steps, "command": f.command, "reason": f.reason, "consequence": f.consequence}
    if f.replaced:
        out["case_options_replaced"] = f.replaced
    if f.drops_assumption:
        out["drops_assumption"] = f.drops_assumption
    if f.settings:
        out["non_default_settings"] = list(f.settings)
    return out


def _property_json(whole: PropertyVerdict, upstream: PropertyVerdict, dropped: PropertyVerdict) -> dict:
    """A property's verdict over every case (the shortest counterexample), then over the cases under
    upstream's stated assumptions and over those that drop one, and every violating case."""
    out = _verdict_json(whole)
    out["upstream_assumptions"] = _verdict_json(upstream)
    out["assumption_dropped"] = _verdict_json(dropped)
    if whole.cases:
        out["cases"] = [_finding_json(f) for f in whole.cases]
    return out


def _properties_json(row: ReleaseCheck) -> dict:
    parts = {which: [row.verdicts(which, part) for part in (ALL, UPSTREAM, DROPPED)] for which in ("own", "ours")}
    return {p: {"engine": "model", "release": _property_json(*(v[p] for v in parts["own"])),
                "transcription": _property_json(*(v[p] for v in parts["ours"]))} for p in row.properties()}


def _conformance_json(row: ReleaseCheck) -> dict:
    """Whether the tree's code conforms to the model, what was replayed, and the first divergence;
    `model_verdicts` says whether the model's verdicts are shown (only where it conforms)."""
    c = row.conformance
    out = {"checked": c.planned and c.answers is not None, "conforms": c.conforms, "note": c.note or c.error,
           "model_verdicts": "withheld: the code diverges" if row.withheld else
           ("shown" if row.properties() else
            f"withheld: {row.vouch.withheld}" if row.vouch is not None and row.vouch.withheld else "none"),
           "rests_on": row.sizes(), "budget": c.budget_text(),
           "summary": conformance_headlines(row)[0],
           "skipped": [{"case": n, "why": w} for n, w in c.skipped], "not_modelled": c.not_modelled(), "cached": c.cached}
    if c.answers is not None:
        out.update(c.figures())
        out["configurations"] = c.answers
        out["divergence"] = c.divergence
    return out


def code_trace_lines(rows: list[ReleaseCheck], prop: str) -> list[str]:
    """`--code-trace PROPERTY`: per tree, the steps of its code's shortest counterexample of it."""
    from prefetch_check.model.code import CodeResult, render

    out = []
    for row in rows:
        v = row.code.verdicts().get(prop)
        if v is None or v.verdict != VIOLATED:
            out.append(f"{row.label}: its code has no counterexample of {prop}"
                       + (f" ({v.verdict})" if v is not None else f" ({code_note(row) or 'not run'})"))
            continue
        run = next(r for r in row.code.runs if r.case == v.case and r.result)
        violation = CodeResult.from_json(run.result).violations[prop]
        out += [f"{row.label}: its code, {v.case}:", render(violation), ""]
    return out


def _code_steps(row: ReleaseCheck, prop: str, case: str) -> list[dict]:
    """The steps of the code's counterexample (the executor's Step as JSON): what
    `prefetch-check trace --code REPORT.json` draws with the model's viewers (model/code/trace.py)."""
    run = next(r for r in row.code.runs if r.case == case and r.result)
    return run.result["violations"][prop]["steps"]


def _code_json(row: ReleaseCheck, base=None) -> dict:
    """The executor's answer for the tree: engine "code", its cases and per property the verdict."""
    marks = base.code_marks(row) if base is not None else {}
    props = {}
    for prop, v in row.code.verdicts().items():
        entry = {"verdict": v.verdict}
        if v.verdict == VIOLATED:
            shown = code_verdict(row, prop, v)
            entry.update(case=v.case, steps=v.steps, site=v.site, reason=v.reason, consequence=v.consequence,
                         schedule=list(v.schedule), command=shown.command, trace=_code_steps(row, prop, v.case))
            if shown.cases[0].reproduction:
                entry["reproduction"] = shown.cases[0].reproduction
        elif v.verdict == BOUNDED:
            entry.update(case=v.case, reason=v.reason)
        if prop in marks:
            entry["against_baseline"] = marks[prop] or "unchanged"
        props[prop] = entry
    return {
        "engine": "code",  # the tree's own prefetch functions run under the executor (docs/executor.md)
        "ran": row.code.ran,
        "note": row.code.note,
        "not_modelled": row.code.not_modelled(),
        "rests_on": code_rests_on(row.code) if row.code.ran else "",
        "cases": [{"case": run.case, "config": run.config.to_json(), "judges": list(run.judges) or "all",
                   "cached": run.cached, "error": run.error,
                   **({k: run.result.get(k) for k in ("runs", "states", "seconds", "exhaustive", "bound", "limit",
                                                      "unreached")}
                      if run.result else {})} for run in row.code.runs],
        "properties": props,
    }


def row_json(row: ReleaseCheck, base=None) -> dict:
    out = {
        "release": row.label,
        "status": row.status,
        "note": row.note,
        "family": row.family,
        "protocol": row.protocol,
        "predicate": row.predicate,
        "predicate_source": row.predicate_spec,
    }
    if row.shape is not None:
        out["shape"] = {name: {"value": f.value, "evidence": [str(e) for e in f.evidence], "note": f.note}
                        for name, f in row.shape.features().items()}
    if row.release is not None:
        out["options"] = [{"name": s.name, "value": s.value, "features": list(s.features),
                           "evidence": [str(e) for e in s.evidence], "why": s.why} for s in row.release.settings]
        out["not_modelled"] = list(row.release.not_modelled)
        out["left_out"] = list(row.release.left_out)
    if row.path:
        out["path_code"] = {
            "pieces": len(row.path),  # functions, classes and module bindings of the prefetch path, fingerprinted
            "differing": [{"piece": p.name, "file": p.file, "line": p.line} for p in row.path_differs],
        }
    out["code"] = _code_json(row, base)
    if row.coverage is not None:  # coverage: per function of the path, per changed statement (coverage_report.py)
        out["coverage"] = coverage_report.to_json(row)
    out["conformance"] = _conformance_json(row)
    if row.vouch is not None:  # an edited tree: the model's verdicts only where its conforming code earns them
        out["model_rests_on"] = row.vouch.rests_on or {"configured_as": row.vouch.label,
                                                       "withheld": row.vouch.withheld}
    if row.status == CHECKED:
        out["properties"] = _properties_json(row)
        if base is not None:
            for p, mark in base.marks(row).items():
                out["properties"][p]["against_baseline"] = mark or "unchanged"
        out["runs"] = [{"case": run.case.name, "predicate": run.predicate, "cached": run.cached,
                        "states": run.summary["states"], "seconds": run.summary["seconds"]} for run in row.runs]
    return out


def to_json(rows: list[ReleaseCheck], changes: list[Change], status: int, searched: int, from_cache: int,
            base=None) -> str:
    doc = {
        "tool": "prefetch-check sglang",
        "version": __version__,
        "checker": verdict_cache.checker_fingerprint(),
        "exit_status": status,
        "searches": searched,  # checks searched in this run (each distinct check once)
        "from_cache": from_cache,  # checks answered from the verdict cache
        "releases": [row_json(r, base) for r in rows],
    }
    if base is not None:
        doc["baseline"] = base.as_json()
    if changes:
        doc["changes"] = [c.as_json() for c in changes]
    return json.dumps(doc, indent=1, default=str) + "\n"


# ---------------------------------------------------------------- Markdown


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def to_markdown(rows: list[ReleaseCheck], changes: list[Change], base=None) -> str:
    notes = Footnotes()
    lines = ["## prefetch-check sglang", ""] + ([baseline_line(base), ""] if base is not None else []) + ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        for cells in rows_of(row, notes, base):
            lines.append("| " + " | ".join(_cell(c) if c else " " for c in cells) + " |")
    lines.append("")
    lines += notes.lines(markdown=True)
    if changes:
        lines += ["", CHANGES_HEAD, ""] + [f"- {c.describe()}" for c in changes]
    for line in left_out(rows):
        lines += ["", line]
    return "\n".join(lines) + "\n\n"
