"""Results as JSON: every verdict, its reason, the replayable schedule, the expectation.

The document says its format (`FORMAT`) and is described by a JSON Schema shipped beside
this module (`schema()`, docs/report-schema.md): a key that changes meaning or goes away
bumps the number; a new key is added to the schema in the same change.
"""

from __future__ import annotations

import json
from importlib import resources

from prefetch_check.explorer.report.records import Labels, summary

FORMAT = "explorer-report/1"
SCHEMA_FILE = "report.schema.json"


def schema() -> dict:
    """The JSON Schema (draft 2020-12) of the documents `to_json` writes."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def to_json(entries, labels: Labels = Labels()) -> dict:
    hold, fail = summary(entries)
    runs = []
    for e in entries:
        st = e.result.stats
        props = []
        for name, r in e.result.results.items():
            x = e.expectation(name)
            props.append(
                {
                    "name": name,
                    "verdict": r.verdict,
                    "reason": r.reason,
                    "schedule": r.trace.schedule if r.trace is not None else None,
                    "expected": x.expected if x else None,
                    "holds": x.holds if x else None,
                    "why": x.why if x else None,
                }
            )
        runs.append(
            {
                labels.subject: e.subject,
                labels.variant: e.variant,
                "source": e.source,
                "parameters": e.parameters,
                "stats": {
                    "states": st.states,
                    "transitions": st.transitions,
                    "max_depth": st.max_depth,
                    "seconds": round(st.total_seconds, 3),
                    "complete": st.complete,
                    "stop_reason": st.stop_reason,
                    "reductions": st.reductions,
                },
                "properties": props,
            }
        )
    return {
        "format": FORMAT,
        "title": labels.title,
        "labels": {"subject": labels.subject, "variant": labels.variant},
        "summary": {"expectations": hold + fail, "hold": hold, "fail": fail},
        "runs": runs,
    }


def to_json_text(entries, labels: Labels = Labels()) -> str:
    return json.dumps(to_json(entries, labels), indent=2) + "\n"
