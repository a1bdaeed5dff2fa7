"""A scenario file's text, kept so that every error can name the line it is about."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from prefetch_check.model.source.files import FileProblem, read_regular_file
from prefetch_check.scenario.errors import InputError, ScenarioError
from prefetch_check.scenario.positions import locate


@dataclass(frozen=True)
class Source:
    path: str
    text: str

    def error(self, keypath: tuple, message: str) -> ScenarioError:
        """An error about `keypath` (e.g. ("request", 0, "hits")), placed on its line when it can be found."""
        return ScenarioError(message, self.path, locate(self.text, keypath) if keypath else None)

    def parse(self) -> dict:
        """The TOML document; a syntax error names the file, line and column."""
        try:
            return tomllib.loads(self.text)
        except RecursionError:  # tomllib recurses once per level of nested arrays and inline tables
            raise ScenarioError(
                "arrays or inline tables are nested too deeply for the TOML reader "
                "(a scenario needs two levels at most)", self.path,
            ) from None
        except tomllib.TOMLDecodeError as exc:
            text = str(exc)
            line = None
            if "(at line " in text:  # tomllib: "Expected '=' ... (at line 3, column 7)"
                text, _, where = text.rpartition(" (at line ")
                line_text, _, column = where.rstrip(")").partition(", column ")
                line = int(line_text)
                text = f"{text[:1].lower()}{text[1:]} (column {column})"
            elif text.endswith(" (at end of document)"):
                text = text[: -len(" (at end of document)")].lower() + " at the end of the file"
                line = max(1, len(self.text.splitlines()))
            raise ScenarioError(f"not valid TOML: {text}", self.path, line) from None


MAX_SCENARIO_BYTES = 1024 * 1024  # the shipped scenarios are about 1 KB


def read_source(path: Path) -> Source:
    """The text of a scenario file: a regular file of at most MAX_SCENARIO_BYTES (a FIFO or a device
    named *.toml must not hang or fill memory)."""
    try:
        raw = read_regular_file(path, MAX_SCENARIO_BYTES, "a scenario file")
    except FileProblem as exc:
        raise InputError(f"{path}: cannot read the scenario file: {exc}") from None
    try:
        return Source(str(path), raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError("not valid TOML: the file is not UTF-8 text", str(path)) from None
