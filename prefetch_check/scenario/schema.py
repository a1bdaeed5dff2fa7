"""What a scenario file may say: every key, its type, its allowed range, its default.

Defaults of the protocol parameters come from `model.config.Config` itself, so a
scenario that leaves a key out means exactly what the Python API means.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

from prefetch_check.model.protocols.poll.config import ALLOC_AT, COMPLETED_MIN, POLICIES, SHAPES, THRESHOLD_TESTS, Config
from prefetch_check.model.protocols.poll.releases import FAMILIES


@dataclass(frozen=True)
class Param:
    """One scenario parameter. kind: int | bool | choice | per_rank_int | per_rank_bool | per_rank_pages."""

    name: str
    kind: str
    doc: str
    low: int = 0
    high: int = 0
    choices: tuple = ()
    default: object = None

    def allowed(self) -> str:
        """The allowed values in words, for error messages and the README."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        if self.kind == "int":
            return f"an integer in {self.low}..{self.high}"
        if self.kind == "per_rank_int":
            return f"an integer in {self.low}..pages (same on every rank), or a table keyed by rank, e.g. {{ 1 = 0 }}"
        if self.kind == "per_rank_bool":
            return "true or false (every rank), or a table keyed by rank, e.g. { 1 = true }"
        if self.kind == "per_rank_count":
            return f"an integer in {self.low}..{self.high} (same on every rank), or a table keyed by rank, e.g. {{ 1 = 1 }}"
        if self.kind == "per_rank_batches":
            return "a table keyed by rank of batch-index lists, e.g. { 1 = [0] } (the read of batch 0 raises on rank 1)"
        return "a table keyed by rank of page-index lists, e.g. { 1 = [0] } (page 0 fails on rank 1)"


def field_defaults(cls) -> dict:
    """The default of each field of the dataclass `cls` that has one: what a key left out means."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def field_param(cls, name: str, kind: str, doc: str, **kw) -> Param:
    """A parameter whose default is that of the field of `cls` with the same name (None if it has none)."""
    return Param(name, kind, doc, default=field_defaults(cls).get(name), **kw)


def sizing_params(cls, batch_doc: str, threshold_doc: str) -> tuple[Param, ...]:
    """The sizes every protocol's scenario sets, with the same ranges: ranks, page size, storage
    batch size and prefetch threshold (the last two documented in the protocol's own words)."""
    return (
        Param("ranks", "int", "tensor-parallel ranks R", 1, 16, default=1),
        field_param(cls, "page_size", "int", "tokens per page", low=1, high=4096),
        field_param(cls, "storage_batch_size", "int", batch_doc, low=1, high=4096),
        field_param(cls, "prefetch_threshold", "int", threshold_doc, low=0, high=1_000_000),
    )


_config = partial(field_param, Config)


# Protocol parameters that hold for the whole scenario (fields of Config).
GLOBAL = (
    *sizing_params(Config, "pages the IO thread loads per batch",
                   "tokens below which no prefetch is issued / a prefetch is revoked"),
    _config("clamp_threshold", "bool", "the prefetch thread compares hits against max(threshold, page_size)"),
    _config("policy", "choice", "completion policy of the scheduler", choices=POLICIES),
    _config("timeout_clock", "bool", "under policy timeout: the clock may fire (false: it never does)"),
    Param("alloc_may_fail", "per_rank_bool", "host allocation at issue may fail on these ranks", default=False),
)

# The predicate-poll protocol's release shapes (docs/model.md, "Release shapes"): one list, so
# that it can move to the protocol when the schema becomes per protocol. `release` sets the
# others from a release family (model/protocols/poll/releases.py); keys set beside it win.
RELEASE = "release"
POLL_SHAPE = (
    Param(RELEASE, "choice", "the release family whose steps to model: sets the shape keys below "
          "(a key set beside it wins)", choices=tuple(FAMILIES)),
    _config("shape", "choice", "termination shape: seed (MIN of can_terminate, a short batch just stops) or "
            "late2025 (MAX of [not can_terminate, terminated], mark_terminate after a short batch)", choices=SHAPES),
    _config("count_before_write", "bool", "the IO thread counts a page (increment) before writing its data (0.5.1.x)"),
    _config("count_whole_batch", "bool", "with count_before_write: one increment counts a whole storage batch, then "
            "its pages are written one by one (0.5.1-0.5.1.post2)"),
    _config("direct_release", "bool", "host slots are freed at once by the thread that gives them back, not queued "
            "for the scheduler's drain (0.5.1.x)"),
    _config("tail_releases", "int", "how often the IO thread gives back the tail [completed_tokens, hits) "
            "(2: 0.5.1.post3, 0.5.2-0.5.5)", low=1, high=2),
    _config("completed_min", "choice", "when the scheduler agrees on completed_tokens before insert "
            "(except_wait_complete: 0.5.1.x)", choices=COMPLETED_MIN),
    _config("queue_unallocated", "bool", "a failed host allocation at issue still queues the operation, without "
            "host slots; check then says ready without removing it (0.5.1.x)"),
    _config("alloc_at", "choice", "where host slots are reserved: at issue, or at hit time in the scheduler's "
            "drain (0.5.16+)", choices=ALLOC_AT),
    _config("threshold_test", "choice", "where hits below the threshold are revoked: by the prefetch thread "
            "(clamped threshold), or by the drain (raw threshold, 0.5.18)", choices=THRESHOLD_TESTS),
    _config("alloc_deterministic", "bool", "assumption (upstream's): the hit-time allocation has the same outcome "
            "on every rank, so alloc_pages must be equal on all ranks; false lets them differ"),
)
GLOBAL += POLL_SHAPE

# What storage holds for each request; top-level shorthand (every request alike) or [[request]] tables.
REQUEST = (
    Param("pages", "int", "pages per request", 1, 64, default=2),
    Param("hits", "per_rank_int", "leading pages present in storage, per rank (default: all pages)", 0, 64),
    Param("failing", "per_rank_pages", "page indices whose load fails, per rank (default: none)"),
    Param("alloc_pages", "per_rank_int", "alloc_at = \"hit\": host pages the drain's allocation can get for the "
          "request (after evict_host), per rank (default: all pages)", 0, 64),
)
REQUESTS = Param("requests", "int", "number of requests (all alike; use [[request]] tables to vary them)", 1, 8, default=1)

PARAMETERS = {p.name: p for p in GLOBAL + (REQUESTS,) + REQUEST}
SHORTHAND = ("requests",) + tuple(p.name for p in REQUEST)  # excluded when [[request]] tables are used
REQUEST_KEYS = {p.name: p for p in REQUEST}

META = {
    "name": "a short name shown in reports (default: the file name)",
    "description": "free text",
    "protocol": "the protocol to check: a built-in name or package.module:ClassName of a variant (default: predicate-poll)",
    "drops_assumption": "the assumption upstream states that this scenario gives up (e.g. that host allocation has "
                        "the same outcome on every rank); `prefetch-check sglang` reports its findings apart",
}
TABLES = {
    "request": "[[request]] tables, one per request (pages, hits, failing)",
    "matrix": "[matrix]: parameter -> list of values; one run per combination",
    "limits": "[limits]: max_states, max_depth, time_limit, max_memory (and [limits.<predicate>])",
    "expect": "[expect.<predicate>]: violates, verifies, not_applicable, why",
    "unreached": "the actions the scenario is not meant to reach (a list, or [unreached] keyed by matrix values): "
                 "`run` does not warn that they never fired, and warns if one does",
}
TOP_LEVEL = tuple(META) + tuple(PARAMETERS) + tuple(TABLES)

LIMIT_KEYS = {"max_states": (int, 1), "max_depth": (int, 1), "time_limit": (float, 0), "max_memory": (int, 1)}
LIMIT_FIELDS = {"max_memory": "max_memory_mb"}  # a key's field of explorer.limits.Limits, where the names differ
EXPECT_KEYS = ("violates", "verifies", "not_applicable", "why")
EXPECT_VERDICTS = {"violates": "VIOLATED", "verifies": "VERIFIED", "not_applicable": "NOT APPLICABLE"}
ALL = "all"

MAX_CASES = 256  # a matrix larger than this is almost certainly a mistake


# TOML's word for each parsed type (bool before int: a bool is an int to Python)
_TOML_WORDS = ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"), (list, "a list"), (dict, "a table"))


def type_name(value) -> str:
    """TOML's word for a parsed value, for error messages."""
    return next((word for kind, word in _TOML_WORDS if isinstance(value, kind)), type(value).__name__)

