"""The GitHub workflow: valid against the GitHub workflow schema (SchemaStore's, as vendored by
check-jsonschema, so no network), read-only permissions, one run per pull request, the pip
cache keyed on pyproject.toml, and a `prefetch-check run` command our own parser accepts whose
counterexample pages are uploaded with the reports."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from prefetch_check.cli import build_parser

ROOT = Path(__file__).parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "prove-fix.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml (with the check-jsonschema test extra) is not installed")
    return yaml.YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))  # YAML 1.2: `on` stays a string


def test_the_workflow_is_valid_against_the_github_workflow_schema():
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (a test extra) is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_is_read_only_and_runs_once_per_pull_request(workflow):
    assert workflow["permissions"] == {"contents": "read"}
    triggers = workflow["on"]
    assert triggers["push"] == {"branches": ["main"]} and "pull_request" in triggers


def steps(workflow) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_pip_is_cached_on_the_dependency_file(workflow):
    (setup,) = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup["with"]["cache"] == "pip"
    assert (ROOT / setup["with"]["cache-dependency-path"]).is_file()


def test_the_check_uses_real_options_and_its_counterexample_pages_are_uploaded(workflow):
    (check,) = [s for s in steps(workflow) if s.get("run", "").startswith("prefetch-check run")]
    argv = shlex.split(check["run"])[1:]
    args = build_parser().parse_args(argv)  # an option the command does not know fails here
    assert args.paths == ["scenarios/"] and args.json and args.junit and args.traces_dir
    (upload,) = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["if"] == "always()"  # a failing check is exactly when the pages matter
    uploaded = upload["with"]["path"].split()
    assert {args.json, args.junit} <= set(uploaded)
    assert args.traces_dir.rstrip("/") in {p.rstrip("/") for p in uploaded}
