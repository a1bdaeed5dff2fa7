"""What every protocol's configuration must satisfy, checked the same way for each: a clear
ValueError naming the field, which the scenario loader turns into a one-paragraph error."""

from __future__ import annotations


def check_common(config, choices: dict) -> None:
    """At least one rank and one request, sane sizes, each option in `choices` (field ->
    allowed values) one of its values, every request's hits naming every rank."""
    if config.ranks < 1:
        raise ValueError("ranks must be at least 1")
    if not config.requests:
        raise ValueError("at least one request")
    if config.page_size < 1 or config.storage_batch_size < 1 or config.prefetch_threshold < 0:
        raise ValueError("page_size and storage_batch_size >= 1, prefetch_threshold >= 0")
    for name, allowed in choices.items():
        if getattr(config, name) not in allowed:
            raise ValueError(f"{name} must be one of {allowed}")
    for q in config.requests:
        if len(q.hits) != config.ranks:
            raise ValueError(f"hits name {len(q.hits)} ranks, config has {config.ranks}")


def per_rank(config, name: str, default) -> None:
    """A per-rank field left empty means `default` on every rank; otherwise it names every rank."""
    if not getattr(config, name):
        object.__setattr__(config, name, (default,) * config.ranks)
    if len(getattr(config, name)) != config.ranks:
        raise ValueError(f"{name} names every rank")


def check_request_pages(request) -> None:
    """Every rank's hits and failing pages lie within the request's pages."""
    for h in request.hits:
        if not 0 <= h <= request.pages:
            raise ValueError(f"hits {h} outside 0..{request.pages}")
    for f in request.failing:
        if any(not 0 <= p < request.pages for p in f):
            raise ValueError(f"failing pages {sorted(f)} outside 0..{request.pages - 1}")
