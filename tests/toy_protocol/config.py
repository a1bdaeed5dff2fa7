"""The toy protocol's configuration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToyConfig:
    ranks: int = 1
    pages: int = 2
    requests: tuple = ()  # the toy has no per-request parameters (rank scaling reads this)
    PER_RANK = ()  # nor per-rank ones: every rank is alike


def uniform_toy_config(ranks: int = 1, requests: int = 1, pages: int = 2, policy: str = "", **options) -> ToyConfig:
    return ToyConfig(ranks=ranks, pages=pages)
