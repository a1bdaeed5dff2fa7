"""A change whose code conforms gets the model's verdicts, with what they rest on.

Why: the model reaches the sizes users deploy (TP=8, TP=16, two requests under `timeout`); the
code engine reaches one or two ranks. The honest floor refuses the model for any tree whose
prefetch path is not a followed release's, since the model has not read that code. The
conformance check can read it for the model: it replays model schedules on the tree's own code
and compares every state. So a tree the floor refuses, whose code conforms to the model
configured as the followed release nearest its path, gets that model's verdicts, labelled with
what they rest on, and only where the check vouches for what the verdicts use:

- every statement the change touched ran in some conformance replay (coverage.py counts it in
  the child); a changed statement no replay ran withholds the verdicts, named;
- every step kind the model's searches took was replayed on the code at least once; a kind
  never replayed withholds the verdicts, named (a proof uses every step it took; a
  counterexample may use any);
- an option the detector cannot read off the tree (an absence recorded only for the followed
  release) is the release's only where a replay entered a method where it is read.

checks.plan plans the model's runs of such a tree beside its code (checks.Vouch); `settle` decides
after the code, conformance and coverage passes.
"""

from __future__ import annotations

import ast

from prefetch_check.sglang.checks import CHECKED, NOT_CHECKED, ReleaseCheck
from prefetch_check.sglang.coverage_report import CONFORMANCE
from prefetch_check.sglang.path_code import WHOLE_FILE
from prefetch_check.sglang.release_record import DESCRIBED_BY
from prefetch_check.sglang.statements import body_of, find, statements


def settle(rows: list[ReleaseCheck]) -> None:
    """Show or withhold each pending vouch (after coverage_report.settle: a tree "not checked"
    there gets no verdict from either engine, vouched or not)."""
    for row in rows:
        v = row.vouch
        if v is None or v.withheld or row.status == NOT_CHECKED:
            if v is not None and row.status == NOT_CHECKED and not v.withheld:
                v.withheld = "a changed statement no check ran (coverage)"
            if v is not None:
                row.own, row.ours = [], []
            continue
        why = withheld(row)
        if why:
            v.withheld = why
            row.own, row.ours = [], []
            row.note = f"{row.note}; the model's verdicts as {v.label} are withheld: {why}"
            continue
        v.rests_on = rests_on(row)
        row.status, row.release = CHECKED, v.release
        row.note = (f"{row.note}; its code conforms to the model configured as {v.label}, which vouches for "
                    f"every changed statement and every step the searches took: the model's verdicts rest on it")


def withheld(row: ReleaseCheck) -> str:
    """Why the conformance check does not vouch for the model's verdicts of this tree ('' if it does)."""
    c = row.conformance
    if c.conforms is not True:
        if c.conforms is False:
            return "its code diverges from the model (conformance)"
        return "its code was not shown to conform (" + (c.error or "; ".join(c.not_modelled()) or "no answer") + ")"
    if any(run.summary is None for run in row.runs):
        return "a search of the model did not finish"
    unreplayed = sorted(fired(row) - replayed(row))
    if unreplayed:
        return (f"the model's searches take step(s) no conformance replay took on its code: {', '.join(unreplayed)}")
    unexercised = unexercised_options(row)
    if unexercised:
        return "; ".join(unexercised)
    missing = unvouched_statements(row)
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return (f"changed statement(s) no conformance replay ran: {', '.join(missing[:3])}{more}")
    return ""


def fired(row: ReleaseCheck) -> set[str]:
    """The step kinds the model's searches of the tree took."""
    return {kind for run in row.runs if run.summary for kind in run.summary.get("fired", ())}


def replayed(row: ReleaseCheck) -> set[str]:
    """The model's step kinds the conformance check replayed on the tree's code (matched)."""
    return {kind for answer in row.conformance.answers or [] for kind in answer.get("kinds", ())}


def unvouched_statements(row: ReleaseCheck) -> list[str]:
    """FILE:LINE (piece) of each changed statement no conformance replay ran (nor the tree's load).
    Without coverage there is nothing to vouch with: every changed statement counts."""
    changed = row.changed.statements if row.changed is not None else ()
    if row.coverage is None:
        return [f"{c.where()} ({c.piece.partition(':')[2]})" for c in changed]
    return [f"{c.changed.where()} ({c.changed.piece.partition(':')[2]})" for c in row.coverage.changed
            if not (c.at_load or dict(c.cases).get(CONFORMANCE, 0))]


def unexercised_options(row: ReleaseCheck) -> list[str]:
    """For each option the model takes from the nearest release because the detector cannot read
    it off the tree (an absence recorded for that release only): why it stands unvouched, when no
    conformance replay entered a method whose code has or lacks it (release_record.DESCRIBED_BY)."""
    ran = (row.conformance.coverage or {}).get("lines", {})
    out = []
    for option, value in sorted(row.vouch.borrowed.items()):
        names = DESCRIBED_BY.get(option, ())
        if not any(_entered(row, piece, ran) for piece in row.path.values()
                   if piece.name.rpartition(".")[2] in names):
            out.append(f"{option}={value} is known only for {row.vouch.label}'s code, and no conformance replay "
                       f"entered {' or '.join(names)} of this tree, where it is read")
    return out


def _entered(row: ReleaseCheck, piece, ran: dict) -> bool:
    """Whether a conformance replay ran a statement of this function of the tree's path."""
    lines = set(ran.get(piece.file, ()))
    if not lines or row.srt is None:
        return False
    try:
        module = ast.parse((row.srt / piece.file).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError):
        return False
    node = find(module, piece.line, piece.name.rpartition(".")[2])
    return node is not None and any(s.covers(lines) for s in statements(body_of(node)))


def rests_on(row: ReleaseCheck) -> dict:
    """What the model's verdicts of a conforming edited tree rest on, for --json and the footnote."""
    c = row.conformance
    figures = c.figures()
    functions = sorted({_piece_name(x.changed.piece) for x in (row.coverage.changed if row.coverage else [])})
    return {
        "configured_as": row.vouch.label,
        "options": dict(sorted(row.vouch.release.options.items())),
        "conformance": {"replayed": len(c.items), "schedules": figures["schedules"],  # budget configurations and cases
                        "states": figures["states"],
                        "steps": sum(a.get("code_steps", 0) for a in c.answers or []),
                        "budget": c.budget_summary()},
        "options_from_release": dict(sorted(row.vouch.borrowed.items())),  # each run by a replay (unexercised_options)
        "changed_functions_replayed": functions,
        "step_kinds_replayed": sorted(replayed(row)),
    }


def _piece_name(ident: str) -> str:
    """Class.method, or for a file the path takes whole, the file."""
    file, _, name = ident.partition(":")
    return f"{file} (taken whole)" if name == WHOLE_FILE else name


def text(row: ReleaseCheck) -> str:
    """The rests-on record in one sentence (the terminal's footnote)."""
    r = row.vouch.rests_on if row.vouch is not None else None
    if not r:
        return ""
    conf = r["conformance"]
    changed = ", ".join(r["changed_functions_replayed"]) or "none"
    return (f"the model's verdicts rest on its code conforming to the model configured as {r['configured_as']}: "
            f"{conf['schedules']:,} model schedules replayed, {conf['states']:,} states compared, "
            f"{conf['steps']:,} code steps ({conf['budget']}); every step kind "
            f"the searches took was replayed; the changed functions the replays ran: {changed}")
