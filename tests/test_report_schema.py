"""The `run --json` report: it names its format, a real report validates against the JSON Schema
shipped in the package, and docs/report-schema.md describes every key of that schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.explorer.report import schema
from prefetch_check.explorer.report.json_report import FORMAT

ROOT = Path(__file__).parent.parent
# between them: VERIFIED, VIOLATED (with schedules), NOT APPLICABLE, a [matrix] scenario
SCENARIOS = ["seed-race.toml", "best-effort.toml", "tp-sweep.toml"]


def real_report(tmp_path, capsys, *extra) -> dict:
    out = tmp_path / "report.json"
    code = main(["run", *(str(ROOT / "scenarios" / s) for s in SCENARIOS), "-q", "--json", str(out), *extra])
    capsys.readouterr()
    assert code in (0, 1, 3)  # 3: a limit in `extra` cut a search
    return json.loads(out.read_text(encoding="utf-8"))


def validator():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (a test extra) is not installed")
    jsonschema.Draft202012Validator.check_schema(schema())
    return jsonschema.Draft202012Validator(schema())


def test_the_schema_is_valid_json_schema_and_names_the_format():
    validator()
    assert schema()["properties"]["format"]["const"] == FORMAT == "explorer-report/1"


def test_a_real_report_validates(tmp_path, capsys):
    data = real_report(tmp_path, capsys)
    verdicts = {p["verdict"] for run in data["runs"] for p in run["properties"]}
    assert {"VERIFIED", "VIOLATED", "NOT APPLICABLE"} <= verdicts
    assert data["format"] == FORMAT and data["labels"] == {"subject": "scenario", "variant": "predicate"}
    assert list(validator().iter_errors(data)) == []


def test_a_bounded_report_validates(tmp_path, capsys):
    data = real_report(tmp_path, capsys, "--max-states", "20")
    assert any(not run["stats"]["complete"] and run["stats"]["stop_reason"] for run in data["runs"])
    assert "BOUNDED" in {p["verdict"] for run in data["runs"] for p in run["properties"]}
    assert list(validator().iter_errors(data)) == []


def test_the_schema_catches_a_report_that_drifts(tmp_path, capsys):
    data = real_report(tmp_path, capsys)
    v = validator()
    run = data["runs"][0]
    run["stats"]["shortening_seconds"] = 1.0  # an undocumented key
    assert any("shortening_seconds" in e.message for e in v.iter_errors(data))
    del run["stats"]["shortening_seconds"]
    violated = next(p for r in data["runs"] for p in r["properties"] if p["verdict"] == "VIOLATED")
    violated["schedule"] = None  # a violation without its counterexample
    assert list(v.iter_errors(data))


def keys(node, found=None) -> set:
    """Every property name the schema defines, at any depth."""
    found = set() if found is None else found
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            found.add(name)
            keys(sub, found)
        subs = [node.get(k) for k in ("items", "additionalProperties", "if", "then", "else")]
        subs += [s for k in ("allOf", "anyOf", "oneOf") for s in node.get(k, [])] + list(node.get("$defs", {}).values())
        for sub in subs:
            keys(sub, found)
    return found


def test_the_documentation_names_every_key_and_the_format():
    doc = (ROOT / "docs" / "report-schema.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", doc))
    assert keys(schema()) - documented == set()
    assert FORMAT in doc and "report.schema.json" in doc
