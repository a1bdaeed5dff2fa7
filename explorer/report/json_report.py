"""Results as JSON: every verdict, its reason, the replayable schedule, the expectation."""

from __future__ import annotations

import json

from prefetch_check.explorer.report.records import Labels, summary


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
                    "seconds": round(st.seconds + st.progress_seconds, 3),
                    "complete": st.complete,
                    "stop_reason": st.stop_reason,
                },
                "properties": props,
            }
        )
    return {"title": labels.title, "summary": {"expectations": hold + fail, "hold": hold, "fail": fail}, "runs": runs}


def to_json_text(entries, labels: Labels = Labels()) -> str:
    return json.dumps(to_json(entries, labels), indent=2) + "\n"
