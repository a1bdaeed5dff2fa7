"""Reports of check results: the terminal table, JSON, JUnit XML and Markdown.

Generic: they render `Entry` records (a subject, a variant, a CheckResult and the
expectations judged against it) and never import a model.
"""

from prefetch_check.explorer.report.json_report import schema, to_json, to_json_text
from prefetch_check.explorer.report.junit import to_junit
from prefetch_check.explorer.report.markdown import to_markdown
from prefetch_check.explorer.report.records import Entry, Expectation, Labels, summary
from prefetch_check.explorer.report.table import print_report, verdict_table

__all__ = [
    "Entry", "Expectation", "Labels", "print_report", "schema", "summary", "to_json", "to_json_text", "to_junit",
    "to_markdown", "verdict_table",
]
