"""What the executor's tests share: a smaller set of a protocol's `prefetch-check sglang` code
cases or conformance budgets for one test (monkeypatch undoes it), through the registries the
commands read them from (the SGLang mapping, the world pack on the protocol's descriptor)."""

from __future__ import annotations

import dataclasses
import importlib

from prefetch_check.model.protocols.registry import descriptor
from prefetch_check.sglang import mappings


def use_cases(monkeypatch, protocol: str, cases) -> None:
    """The protocol's code cases are `cases` for this test."""
    found = mappings.mapping(protocol)
    monkeypatch.setitem(mappings._REGISTRY.table(), protocol, dataclasses.replace(found, cases=tuple(cases)))


def cases(protocol: str, *names: str) -> tuple:
    """The protocol's code cases of these names (every one must exist)."""
    chosen = tuple(case for case in mappings.mapping(protocol).cases if case.name in names)
    assert len(chosen) == len(names), names
    return chosen


def use_budgets(monkeypatch, protocol: str, budgets) -> None:
    """The protocol's conformance budget is `budgets` for this test (its world pack, replaced)."""
    module, _, attr = descriptor(protocol).world.partition(":")
    loaded = importlib.import_module(module)
    pack = getattr(loaded, attr)
    kit = dataclasses.replace(pack.conformance, budgets=tuple(budgets))
    monkeypatch.setattr(loaded, attr, dataclasses.replace(pack, conformance=kit))


def budgets(protocol: str) -> tuple:
    return descriptor(protocol).world_pack().conformance.budgets
