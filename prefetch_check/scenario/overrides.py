"""`--set KEY=VALUE`: replace one option of a scenario's configuration from the command line.

Why: `prefetch-check sglang` checks a release by applying the options its source settles
(e.g. `ack_match=rid`) on top of a scenario's own parameters; the `trace` command line it
prints for a violation must reproduce exactly that configuration, so `trace` takes the same
options. Only scalar options (text, whole numbers, true/false) can be set this way; each value
is read as the type the option already has, and the configuration checks it like any other.
"""

from __future__ import annotations

import dataclasses

from prefetch_check.scenario.errors import InputError, did_you_mean

SCALARS = (bool, int, str)


def settable(config) -> dict:
    """The options of a configuration that `--set` may replace, with their current values."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if type(getattr(config, f.name)) in SCALARS}


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """`["cache=unified", ...]` -> {"cache": "unified"}; the values are still text."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InputError(f"--set {item!r}: expected KEY=VALUE, e.g. --set ack_match=rid")
        if key in out:
            raise InputError(f"--set {key}: given twice")
        out[key] = value
    return out


def _typed(key: str, text: str, current):
    kind = type(current)
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise InputError(f"--set {key}={text}: {key} is true or false")
        return text.lower() == "true"
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"--set {key}={text}: {key} is a whole number") from None
    return text


def apply_options(config, options: dict, flag: str = "--set"):
    """The configuration with `options` (name -> value, or name -> text from `--set`) replaced;
    a name the configuration does not have, or a value it refuses, is bad input."""
    if not options:
        return config
    allowed = settable(config)
    changes = {}
    for key, value in options.items():
        if key not in allowed:
            raise InputError(f"{flag} {key}: not an option of this scenario's configuration"
                             + did_you_mean(key, list(allowed)))
        changes[key] = _typed(key, value, allowed[key]) if isinstance(value, str) else value
    try:
        return dataclasses.replace(config, **changes)
    except ValueError as exc:
        raise InputError(f"{flag} {', '.join(f'{k}={v}' for k, v in changes.items())}: {exc}") from None


def as_set_flags(options: dict) -> str:
    """The `--set` flags that give these options (lower-case true/false, as TOML spells them)."""
    def text(v):
        return str(v).lower() if isinstance(v, bool) else str(v)
    return " ".join(f"--set {k}={text(v)}" for k, v in options.items())
