"""A scenario file's text, kept so that every error can name the line it is about."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from prefetch_check.scenario.errors import InputError, ScenarioError, locate


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


def read_source(path: Path) -> Source:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the scenario file: {exc.strerror}") from None
    try:
        return Source(str(path), raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError("not valid TOML: the file is not UTF-8 text", str(path)) from None
