"""What the command-line tests share: run the CLI in-process, write a scenario file."""

from __future__ import annotations

import textwrap

from prefetch_check.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    """`prefetch-check ARGV...` in this process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_scenario(tmp_path, text: str, name: str = "seed.toml") -> str:
    """A scenario file from indented TOML text; its path as the command line takes it."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return str(path)
