"""Turn a predicate spec from the command line, a scenario or the API into a function.

Each registered protocol names its built-in ones (`buggy`, `fixed`, in its descriptor's
`predicates` module); `package.module:function` is imported; `PATH.py:Class.method`
is read from source with `ast` and never imported (`model/source/predicate.py`).
"""

from __future__ import annotations

import importlib

from prefetch_check.model.protocols.poll.predicates import Predicate, PredicateError


def load_predicate(spec: str, builtin: dict | None = None) -> tuple[str, Predicate]:
    """Resolve `buggy`, `fixed`, `package.module:function` or `PATH.py:Class.method` (read from
    source with `ast`, never imported) to (name, function). `builtin` names a protocol's own
    predicates (default: every registered protocol's, the first registered one's function for a
    name several share: enough to tell a spec is valid before its protocol is known)."""
    builtin = every_builtin() if builtin is None else builtin
    if spec in builtin:
        return spec, builtin[spec]
    # the source reader (ast, the sandboxed interpreter) only for a predicate read from source
    from prefetch_check.model.source.predicate import is_source_spec, load_source_predicate

    if is_source_spec(spec):
        return load_source_predicate(spec)
    if ":" not in spec:
        raise PredicateError(
            f"unknown predicate {spec!r}: use {', '.join(map(repr, builtin))} or 'package.module:function'"
        )
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is the user's input, reported plainly
        raise PredicateError(f"predicate {spec!r}: cannot import module {module_name!r}: {exc}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise PredicateError(f"predicate {spec!r}: module {module_name!r} has no function {attr!r}")
    return spec, fn


def every_builtin() -> dict:
    """The built-in predicates of every registered protocol, by name."""
    from prefetch_check.model.protocols.registry import descriptors

    out: dict = {}
    for d in reversed(descriptors()):
        out.update(d.builtin_predicates())
    return dict(sorted(out.items()))
