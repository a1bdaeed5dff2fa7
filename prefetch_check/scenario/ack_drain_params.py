"""The ack-drain protocol's scenario parameters, and how they become an `AckConfig`.

Defaults come from `AckConfig` and `Request` themselves, so a scenario that leaves a key out
means what the Python API means. The per-rank and range checks are the ones every protocol
shares (parameters.py).
"""

from __future__ import annotations

from functools import partial

from prefetch_check.model.protocols.ack_drain.config import (
    ACK_MATCHES, CACHES, DEADLINES, EXCEPTIONS, POLICIES, AckConfig, Request,
)
from prefetch_check.scenario.parameters import ValueProblem, _bad, _is_int, per_rank, read_requests, request_spec, scalar
from prefetch_check.scenario.schema import Param, field_defaults, field_param, sizing_params

_REQUEST_DEFAULTS = field_defaults(Request)
_config = partial(field_param, AckConfig)


GLOBAL = (
    *sizing_params(AckConfig, "pages the IO thread reads per storage batch (an ACK per batch)",
                   "tokens below which no prefetch is issued / a hit is revoked (raw, no clamp)"),
    _config("policy", "choice", "completion policy of the scheduler", choices=POLICIES),
    _config("timeout_clock", "bool", "under policy timeout: the clock may fire (false: it never does)"),
    _config("cache", "choice", "unified: UnifiedRadixCache (0.5.19+, what the server builds); hiradix: HiRadixCache 0.5.19-0.5.20", choices=CACHES),
    _config("ack_match", "choice", "an ACK applies to the request id (0.5.19) or to the very operation (0.5.20+ unified)", choices=ACK_MATCHES),
    _config("deadline", "choice", "the timeout clock starts at issue, or at the first waiting check (0.5.23 admission deadline)", choices=DEADLINES),
    _config("exceptions", "choice", "a storage exception ends its thread (0.5.19-0.5.21) or is caught (0.5.22+)", choices=EXCEPTIONS),
    _config("admission_limit", "int", "checks per scheduler round (0: every waiting request)", low=0, high=8),
    _config("alloc_deterministic", "bool", "host allocation gives every rank the same outcome (upstream's assumption)"),
    Param("host_pages", "per_rank_count", "pages the host pool can give one prefetch, per rank (default: enough)", 0, 64),
)

REQUEST = (
    Param("pages", "int", "pages per request", 1, 64, default=2),
    Param("hits", "per_rank_int", "leading pages present in storage, per rank (default: all pages)", 0, 64),
    Param("failing", "per_rank_pages", "page indices whose read comes back short, per rank (default: none)"),
    Param("query_raises", "per_rank_bool", "the storage query (batch_exists) raises on these ranks", default=False),
    Param("batch_raises", "per_rank_batches", "batch indices whose read raises, per rank (default: none)"),
    Param("readmits", "int", "times the request is preempted after its check and admitted again (same request id)", 0, 3,
          default=_REQUEST_DEFAULTS["readmits"]),
    Param("abort_round", "int", "the scheduler round (counted in drains) at whose start the request is aborted; -1: never",
          -1, 16, default=_REQUEST_DEFAULTS["abort_round"]),
)
REQUESTS = Param("requests", "int", "number of requests (all alike; use [[request]] tables to vary them)", 1, 8, default=1)
_REQUEST_KEYS = {p.name: p for p in REQUEST}


def _request(values: dict, ranks: int, where, q: int) -> Request:
    base = request_spec(values, ranks, where, q)  # pages, hits, failing: checked as every protocol checks them
    keys = _REQUEST_KEYS

    def one_bool(v, keypath):
        return scalar(keys["query_raises"], v, keypath)

    def one_batches(v, keypath):
        if not isinstance(v, list) or not all(_is_int(b) and b >= 0 for b in v):
            raise _bad(keypath, keys["batch_raises"], v)
        return frozenset(v)

    query = per_rank(keys["query_raises"], values.get("query_raises", False), where("query_raises"), ranks, one_bool, False)
    batches = per_rank(keys["batch_raises"], values.get("batch_raises", {}), where("batch_raises"), ranks, one_batches, frozenset())
    readmits = scalar(keys["readmits"], values.get("readmits", keys["readmits"].default), where("readmits"))
    abort = scalar(keys["abort_round"], values.get("abort_round", keys["abort_round"].default), where("abort_round"))
    return Request(pages=base.pages, hits=base.hits, failing=base.failing, query_raises=query, batch_raises=batches,
                   readmits=readmits, abort_round=abort)


def build_config(values: dict, request_tables: list, where) -> AckConfig:
    """The AckConfig for one combination of values (top level merged with one matrix choice)."""
    ranks = scalar(GLOBAL[0], values.get("ranks", GLOBAL[0].default), where("ranks"))
    kwargs = {"ranks": ranks}
    for param in GLOBAL[1:]:
        if param.name not in values:
            continue
        if param.kind == "per_rank_count":
            def one_count(v, keypath, param=param):
                if not _is_int(v) or not param.low <= v <= param.high:
                    raise _bad(keypath, param, v)
                return v
            kwargs[param.name] = per_rank(param, values[param.name], where(param.name), ranks, one_count, None)
        else:
            kwargs[param.name] = scalar(param, values[param.name], where(param.name))
    requests = read_requests(values, request_tables, ranks, where, _REQUEST_KEYS, _request, REQUESTS, [p.name for p in REQUEST])
    try:
        return AckConfig(requests=requests, **kwargs)
    except ValueError as exc:  # e.g. host_pages differing while alloc_deterministic holds
        keypath = where("host_pages") if "host_pages" in str(exc) else ()
        raise ValueProblem(keypath, f"inconsistent parameters: {exc}") from None
