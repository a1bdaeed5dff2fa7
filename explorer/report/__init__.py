"""Reports of check results: the terminal table, JSON, JUnit XML and Markdown.

Generic: they render `Entry` records (a subject, a variant, a CheckResult and the
expectations judged against it) and never import a model.
"""

# Imported on first use (PEP 562): the terminal table needs neither JUnit nor JSON.
_LAZY = {
    "schema": "json_report", "to_json": "json_report", "to_json_text": "json_report", "to_junit": "junit",
    "to_markdown": "markdown", "Entry": "records", "Expectation": "records", "Labels": "records",
    "summary": "records", "exit_status": "records", "print_report": "table", "verdict_table": "table",
}

__all__ = [
    "Entry", "Expectation", "Labels", "exit_status", "print_report", "schema", "summary", "to_json", "to_json_text", "to_junit",
    "to_markdown", "verdict_table",
]


from prefetch_check.explorer.lazy import lazy_names  # noqa: E402 (after the names it serves)

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
