"""The toy protocol's scenario parameters and how they become its configuration."""

from __future__ import annotations

from prefetch_check.scenario.parameters import scalar
from prefetch_check.scenario.schema import Param

from toy_protocol.config import ToyConfig

GLOBAL = (Param("ranks", "int", "ranks", 1, 4, default=1),)
REQUEST = (Param("pages", "int", "pages the writer writes", 1, 4, default=2),)
REQUESTS = Param("requests", "int", "requests (the toy has one)", 1, 1, default=1)


def build_config(values: dict, request_tables: list, where) -> ToyConfig:
    ranks = scalar(GLOBAL[0], values.get("ranks", 1), where("ranks"))
    pages = scalar(REQUEST[0], values.get("pages", 2), where("pages"))
    return ToyConfig(ranks=ranks, pages=pages)
