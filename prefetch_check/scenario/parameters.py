"""Turn a scenario's parameter values into a `model.config.Config`, checking each one.

Two kinds of value never look alike, so nobody confuses them:
- per-rank values are TABLES keyed by rank (`hits = { 1 = 0 }`: rank 1 has no page);
- a LIST of alternatives belongs in the `[matrix]` table (one run per value), never here.
"""

from __future__ import annotations

from typing import Callable

from prefetch_check.model.protocols.poll.config import Config, RequestSpec, ShapeError
from prefetch_check.model.protocols.poll.releases import options as release_options
from prefetch_check.scenario.schema import GLOBAL, PARAMETERS, RELEASE, REQUEST_KEYS, SHORTHAND, Param, type_name
from prefetch_check.scenario.errors import closest, did_you_mean

# where(key) -> the key path in the file, so errors point at the line that set the value
Where = Callable[[str], tuple]


class ValueProblem(Exception):
    """A bad value, with the key path it came from (the loader adds file and line)."""

    def __init__(self, keypath: tuple, message: str):
        super().__init__(message)
        self.keypath, self.message = keypath, message


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _label(keypath: tuple) -> str:
    """("request", 1, "failing", "0") -> `request[1].failing[rank 0]`."""
    out = ""
    for k in keypath:
        if isinstance(k, int):
            out += f"[{k}]"
        elif k.isdigit():
            out += f"[rank {k}]"
        else:
            out += ("." if out else "") + k
    return out


def _shown(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float, str)):
        return repr(value)
    return type_name(value)


def _bad(keypath: tuple, param: Param, value, extra: str = "") -> ValueProblem:
    hint = ""
    if isinstance(value, list) and param.kind in ("int", "bool", "choice"):
        hint = f"; to run several values, put `{param.name} = [...]` in a [matrix] table instead"
    elif isinstance(value, list) and param.kind.startswith("per_rank"):
        hint = "; per-rank values are tables keyed by rank (a list belongs in [matrix])"
    return ValueProblem(keypath, f"{_label(keypath)} must be {param.allowed()}, got {_shown(value)}{hint}{extra}")


def scalar(param: Param, value, keypath: tuple):
    """Check an int / bool / choice value against its allowed range."""
    if param.kind == "int":
        if not _is_int(value) or not param.low <= value <= param.high:
            raise _bad(keypath, param, value)
    elif param.kind in ("bool", "per_rank_bool"):
        if not isinstance(value, bool):
            raise _bad(keypath, param, value)
    elif param.kind == "choice":
        if value not in param.choices:
            near = closest(value, param.choices) if isinstance(value, str) else None
            raise _bad(keypath, param, value, f"; did you mean {near!r}?" if near else "")
    return value


def per_rank(param: Param, value, keypath: tuple, ranks: int, check_one: Callable, default) -> tuple:
    """A value for every rank: one value for all ranks, or a table keyed by rank (others get `default`)."""
    if not isinstance(value, dict):
        if param.kind in ("per_rank_pages", "per_rank_batches"):
            raise _bad(keypath, param, value)
        return (check_one(value, keypath),) * ranks
    out = [default] * ranks
    for key, item in value.items():
        if not key.isdigit():
            raise ValueProblem(keypath + (key,), f"{_label(keypath)} is keyed by rank number (0..{ranks - 1}), got key {key!r}")
        r = int(key)
        if r >= ranks:
            raise ValueProblem(
                keypath + (key,), f"{_label(keypath)} names rank {r}, but ranks = {ranks} (ranks are numbered 0..{ranks - 1})"
            )
        out[r] = check_one(item, keypath + (key,))
    return tuple(out)


def request_spec(values: dict, ranks: int, where: Where, q: int) -> RequestSpec:
    """One request: pages, hits per rank (<= pages), failing pages per rank (inside the request)."""
    pages = scalar(REQUEST_KEYS["pages"], values.get("pages", REQUEST_KEYS["pages"].default), where("pages"))
    hits_param = REQUEST_KEYS["hits"]

    def on_rank(keypath):
        return f" on rank {keypath[-1]}" if str(keypath[-1]).isdigit() else ""

    def one_hit(v, keypath):
        if not _is_int(v) or v < 0:
            raise _bad(keypath, hits_param, v)
        if v > pages:
            raise ValueProblem(
                keypath,
                f"request {q}: hits = {v}{on_rank(keypath)} is larger than pages = {pages} "
                f"(hits counts the leading pages present in storage: 0..{pages})",
            )
        return v

    def one_failing(v, keypath):
        if not isinstance(v, list) or not all(_is_int(p) for p in v):
            raise _bad(keypath, REQUEST_KEYS["failing"], v)
        for p in v:
            if not 0 <= p < pages:
                raise ValueProblem(
                    keypath, f"request {q}: failing page {p}{on_rank(keypath)} is outside the request (pages are 0..{pages - 1})"
                )
        return frozenset(v)

    def one_room(v, keypath):
        if not _is_int(v) or v < 0:
            raise _bad(keypath, REQUEST_KEYS["alloc_pages"], v)
        if v > pages:
            raise ValueProblem(
                keypath,
                f"request {q}: alloc_pages = {v}{on_rank(keypath)} is larger than pages = {pages} "
                f"(the host pages the hit-time allocation can get for it: 0..{pages})",
            )
        return v

    hits = per_rank(hits_param, values.get("hits", pages), where("hits"), ranks, one_hit, pages)
    failing = per_rank(REQUEST_KEYS["failing"], values.get("failing", {}), where("failing"), ranks, one_failing, frozenset())
    room = per_rank(REQUEST_KEYS["alloc_pages"], values.get("alloc_pages", pages), where("alloc_pages"), ranks, one_room, pages)
    return RequestSpec(pages=pages, hits=hits, failing=failing, alloc_pages=room)


def read_requests(values: dict, request_tables: list, ranks: int, where: Where, keys, build_one: Callable,
                  count: Param, shorthand_keys) -> tuple:
    """A scenario's requests, the same way for every protocol: one per [[request]] table (each
    key one of `keys`), or else `count` (the `requests` key) copies of the one the top-level
    shorthand keys describe; `build_one(values, ranks, where, q)` makes each."""
    if not request_tables:
        n = scalar(count, values.get("requests", count.default), where("requests"))
        shorthand = {k: values[k] for k in shorthand_keys if k in values}
        return (build_one(shorthand, ranks, where, 0),) * n
    specs = []
    for q, table in enumerate(request_tables):
        if not isinstance(table, dict):
            raise ValueProblem(("request",), "request must be written as [[request]] tables")
        for key in table:
            if key not in keys:
                raise ValueProblem(("request", q, key), f"unknown key {key!r} in the [[request]] table of request {q}" + did_you_mean(key, keys))
        specs.append(build_one(table, ranks, lambda k, q=q: ("request", q, k), q))
    return tuple(specs)


def build_config(values: dict, request_tables: list, where: Where) -> Config:
    """The Config for one combination of values (top level merged with one matrix choice)."""
    ranks = scalar(PARAMETERS["ranks"], values.get("ranks", PARAMETERS["ranks"].default), where("ranks"))
    kwargs = {"ranks": ranks}
    if RELEASE in values:  # the release family's shape first: keys set beside it override it
        kwargs.update(release_options(scalar(PARAMETERS[RELEASE], values[RELEASE], where(RELEASE))))
    for param in GLOBAL:
        if param.name in ("ranks", RELEASE) or param.name not in values:
            continue
        if param.kind == "per_rank_bool":
            one_bool = lambda v, keypath, param=param: scalar(param, v, keypath)  # noqa: E731
            kwargs[param.name] = per_rank(param, values[param.name], where(param.name), ranks, one_bool, False)
        else:
            kwargs[param.name] = scalar(param, values[param.name], where(param.name))
    requests = read_requests(values, request_tables, ranks, where, REQUEST_KEYS, request_spec, PARAMETERS["requests"], SHORTHAND)
    try:
        return Config(requests=requests, **kwargs)
    except ShapeError as exc:  # shape options no release combines: point at the key to change
        if exc.request is not None and request_tables:
            keypath = ("request", exc.request, exc.key)
        else:
            keypath = where(exc.key)
        raise ValueProblem(keypath, str(exc)) from None
    except ValueError as exc:  # the checks above should make this unreachable; say it plainly if not
        raise ValueProblem((), f"inconsistent parameters: {exc}") from None
