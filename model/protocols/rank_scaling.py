"""A configuration whose ranks are all alike, at another TP size: simulation reaches sizes (TP=32)
that scenario files do not allow. Generic over the protocols: each configuration class and each
request class names its per-rank fields in `PER_RANK`, so a field added to one protocol is
rescaled (or refused) without a second list to keep in step."""

from __future__ import annotations

from dataclasses import replace


def differing(config) -> list[str]:
    """The per-rank values that are not the same on every rank ("request 0 hits", "host_pages")."""
    out = [name for name in config.PER_RANK if len(set(getattr(config, name))) > 1]
    for q, spec in enumerate(config.requests):
        out += [f"request {q} {name}" for name in spec.PER_RANK if len(set(getattr(spec, name))) > 1]
    return out


def rescale(config, ranks: int):
    """`config` at `ranks` ranks, every per-rank value repeated; ValueError naming the values that
    differ between ranks (they have no one value to repeat)."""
    if ranks == config.ranks:
        return config
    problems = differing(config)
    if problems:
        raise ValueError(", ".join(problems))

    def spread(value, names):
        return {name: getattr(value, name)[:1] * ranks for name in names}

    requests = tuple(replace(spec, **spread(spec, spec.PER_RANK)) for spec in config.requests)
    return replace(config, ranks=ranks, requests=requests, **spread(config, config.PER_RANK))
