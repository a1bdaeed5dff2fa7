"""What a release's detected shape settles in a protocol: its options, each with its evidence.

Why a value of its own: a verdict on a real release is only worth something when every step
the model has a choice for is the release's own, so each option carries the detection that
settled it (shown in the row), and anything the model cannot represent stops the row with
"not modelled: <what>" instead of a verdict on another release's steps. The protocols'
mappings (mappings/<protocol>/options.py) fill it from a `Shape` (shape.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from prefetch_check.sglang.shape import Evidence, Shape


@dataclass(frozen=True)
class Setting:
    """One configuration option the source settles: `name = value`, read off `features`."""

    name: str
    value: object
    features: tuple[str, ...]  # the detector features that settled it
    evidence: tuple[Evidence, ...]
    why: str = ""

    def assignment(self) -> str:
        """`name=value`, as `--set` takes it."""
        return f"{self.name}={_text(self.value)}"

    def describe(self) -> str:
        """`name=value (the features that settled it)`."""
        return f"{self.assignment()} ({', '.join(self.features)})"


@dataclass(frozen=True)
class ReleaseOptions:
    """A release shape in one protocol: its settings, or why it cannot be checked there.

    protocol      the protocol whose steps the release runs, None when no protocol fits
    settings      the options the source settles (empty when anything is not modelled)
    not_modelled  "<feature>=<value>: <why>" for what the model cannot represent; any entry means
                  no verdict ("not modelled yet" when `yet`: the protocol lacks an option it needs)
    left_out      what the release does that the model leaves out on purpose (stated, not judged)
    """

    protocol: Optional[str]
    settings: tuple[Setting, ...] = ()
    not_modelled: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    yet: bool = False

    @property
    def modelled(self) -> bool:
        return self.protocol is not None and not self.not_modelled

    @property
    def options(self) -> dict:
        """The configuration options to apply on top of a scenario: {} unless modelled."""
        return {s.name: s.value for s in self.settings} if self.modelled else {}

    @property
    def status(self) -> str:
        """'modelled', 'not modelled yet' or 'not modelled'."""
        if self.modelled:
            return "modelled"
        return "not modelled yet" if self.yet and self.protocol is not None else "not modelled"


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class Reading:
    """Collects settings and problems while a protocol's mapping reads one shape."""

    def __init__(self, shape: Shape):
        self.shape = shape
        self.settings: list[Setting] = []
        self.problems: list[str] = []
        self.missing_options: list[str] = []
        self.left_out: list[str] = []

    def value(self, feature: str) -> Optional[str]:
        return getattr(self.shape, feature).value

    def evidence(self, features: Iterable[str]) -> tuple[Evidence, ...]:
        return tuple(e for f in features for e in getattr(self.shape, f).evidence)

    def set(self, name: str, value, features: tuple[str, ...], why: str = "") -> None:
        self.settings.append(Setting(name, value, features, self.evidence(features), why))

    def require(self, feature: str, allowed: dict[str, str], protocol: str) -> Optional[str]:
        """The feature's value if `allowed` has it (value -> what it means); else a problem is noted."""
        value = self.value(feature)
        if value is None:
            self.problems.append(f"{feature}: not recognised ({getattr(self.shape, feature).note})")
            return None
        if value not in allowed:
            has = " or ".join(f"{v} ({what})" for v, what in allowed.items())
            self.problems.append(f"{feature}={value}: the {protocol} protocol has {has}")
            return None
        return value

    def needs_option(self, feature: str, option: str, protocol: str) -> None:
        """The release needs an option this checker's protocol does not have yet."""
        self.missing_options.append(f"{feature}={self.value(feature)}: needs the {protocol} option `{option}` (not in this checker yet)")

    def unrecognised(self) -> None:
        """Every feature the detector did not recognise is a problem (never a guess)."""
        for name, feat in self.shape.features().items():
            if not feat.recognised:
                self.problems.append(f"{name}: not recognised ({feat.note})")

    def result(self, protocol: str) -> ReleaseOptions:
        problems = tuple(dict.fromkeys(self.problems + self.missing_options))
        return ReleaseOptions(
            protocol=protocol,
            settings=tuple(self.settings) if not problems else (),
            not_modelled=problems,
            left_out=tuple(self.left_out),
            yet=bool(self.missing_options) and not self.problems,
        )
