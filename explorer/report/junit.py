"""Results as JUnit XML, so CI systems list each expectation as a test.

One testsuite per subject, one testcase per (variant, property). A stated expectation
that holds passes, one that does not is a failure; a property without expectation
is `skipped` with its verdict as the message (reported, not judged).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import OrderedDict

from prefetch_check.explorer.report.cells import failure_line
from prefetch_check.explorer.report.records import Labels


def to_junit(entries, labels: Labels = Labels()) -> str:
    suites: "OrderedDict[str, list]" = OrderedDict()
    for e in entries:
        suites.setdefault(e.subject, []).append(e)
    root = ET.Element("testsuites", name=labels.title)
    total = failures = skipped = 0
    for subject, group in suites.items():
        suite = ET.SubElement(root, "testsuite", name=subject)
        s_tests = s_fail = s_skip = 0
        s_time = 0.0
        for e in group:
            t = e.result.stats.total_seconds
            s_time += t
            for name, r in e.result.results.items():
                case = ET.SubElement(suite, "testcase", classname=f"{subject}.{e.variant}", name=name, time="0")
                x = e.expectation(name)
                s_tests += 1
                if x is None:
                    ET.SubElement(case, "skipped", message=f"{r.verdict} (no expectation stated)")
                    s_skip += 1
                elif not x.holds:
                    failure = ET.SubElement(case, "failure", message=f"expected {x.expected}, got {x.actual}")
                    detail = failure_line(e, x)
                    if r.trace is not None:
                        detail += f"\nschedule: {r.trace.schedule}"
                    failure.text = detail
                    s_fail += 1
        suite.set("tests", str(s_tests))
        suite.set("failures", str(s_fail))
        suite.set("skipped", str(s_skip))
        suite.set("errors", "0")
        suite.set("time", f"{s_time:.3f}")
        total, failures, skipped = total + s_tests, failures + s_fail, skipped + s_skip
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
