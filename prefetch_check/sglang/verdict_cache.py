"""Verdicts kept between runs, so that a second run of the same release is fast.

A check's verdicts are a pure function of the checker's code, the protocol, the configuration
(a scenario case with the release's options applied), the limits and the predicate's code.
The key hashes exactly those: the checker by its version and the text of its model and
explorer sources (an edited checker never reads stale verdicts), the configuration by its
content (so cases that the release's options make alike are searched once), a predicate read
from source by the syntax trees of its function and the helpers it calls (so releases whose
predicate is the same code share their verdicts). Files are small JSON
documents in `<cache>/verdicts/`, written whole through a temporary file.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

import prefetch_check
import prefetch_check.explorer
import prefetch_check.model

FOLDER = "verdicts"
EXECUTOR = "code"  # model/code/: the executor, on which the model's verdicts do not depend


@lru_cache(maxsize=1)
def checker_fingerprint() -> str:
    """The version and a digest of every source file the verdicts depend on."""
    digest = hashlib.sha256(prefetch_check.__version__.encode())
    for package in (prefetch_check.model, prefetch_check.explorer):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            if path.relative_to(root).parts[0] == EXECUTOR:
                continue  # the executor's own results are keyed by its sources (code_checks.py)
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return f"{prefetch_check.__version__}+{digest.hexdigest()[:16]}"


def predicate_identity(spec: str, predicate) -> str:
    """A built-in's name, or the code of a source predicate (its function and helpers, without
    line numbers): two files holding the same function give the same identity."""
    main = getattr(predicate, "main", None)
    if main is None:
        return spec
    parts = [ast.dump(main.node)] + [ast.dump(fn.node) for _, fn in sorted(predicate.helpers.items())]
    return "source:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def config_text(config) -> str:
    """A configuration's content as canonical JSON (sets sorted)."""
    def plain(v):
        if isinstance(v, (set, frozenset)):
            return sorted(plain(x) for x in v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return json.dumps(plain(dataclasses.asdict(config)), sort_keys=True)


SUMMARY_FORMAT = "summary 2"  # what a stored summary holds (2: the step kinds fired): older ones are not read


def task_key(protocol: str, predicate_id: str, config, limits) -> str:
    """The key of one check. Of the limits only those that shape a finished search count: a
    search the machine's memory cut is BOUNDED, and BOUNDED results are never stored."""
    digest = hashlib.sha256()
    shaping = (limits.max_states, limits.max_depth)
    for part in (checker_fingerprint(), SUMMARY_FORMAT, protocol, predicate_id, config_text(config), repr(shaping)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def read(root: Path, key: str, folder: str = FOLDER) -> Optional[dict]:
    """A stored document of `<root>/<folder>/`, or None."""
    try:
        return json.loads((root / folder / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def write(root: Path, key: str, summary: dict) -> None:
    """Store a check's summary, unless a limit cut it (BOUNDED depends on the machine and the time)."""
    if any(p["verdict"] == "BOUNDED" for p in summary["properties"].values()):
        return
    store(root, key, summary)


def store(root: Path, key: str, doc: dict, folder: str = FOLDER) -> None:
    """Write a document whole (through a temporary file) into `<root>/<folder>/`."""
    target = root / folder
    try:
        target.mkdir(parents=True, exist_ok=True)
        tmp = target / f".{key}.{os.getpid()}.tmp"  # each writer its own: test workers share a cache
        tmp.write_text(json.dumps(doc))
        tmp.replace(target / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only makes the next run slower
