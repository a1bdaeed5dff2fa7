"""The scenarios shipped inside the package (the repository's scenarios/ folder, installed as
`prefetch_check.scenarios`), so an installed `prefetch-check run` has something to check
wherever it is started."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_scenarios() -> list[Path]:
    """The shipped scenario files, sorted by name; [] when this installation has none (or keeps
    them where they are not files, such as inside a zip file)."""
    try:
        root = resources.files("prefetch_check.scenarios")
    except ModuleNotFoundError:
        return []
    # an installed package gives a Path; an editable install or a checkout a namespace
    # package (MultiplexedPath), whose entries are Paths
    found = [Path(str(f)) for f in root.iterdir() if f.name.endswith(".toml") and isinstance(f, Path)]
    return sorted(found, key=lambda p: p.name)
