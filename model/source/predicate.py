"""The completion predicate as it is written in a codebase, read with `ast` and run on model states.

`load_source_predicate("path/hiradix_cache.py:HiRadixCache.can_terminate_prefetch")` parses
the file (nothing is imported: no torch, no sglang), finds the method, and compiles it
alone into a namespace of small stand-ins (an adapter) that supply exactly what the
upstream function reads:

- `self.prefetch_stop_policy`, `self.page_size` -> the model's policy and page size;
- `self.is_prefetch_timeout(op)` / `self._prefetch_timeout_check_linear_func(op)` -> the
  model's `timed_out` flag; a clock read inline (`time.monotonic() - op.start_time > ...`)
  sees 0 before the model's clock fired and a far-away time after;
- the operation: `hash_value` (a list of page hashes), `completed_tokens`,
  `is_terminated()`, `start_time`;
- the collective (`torch.tensor(...)` then `self._all_reduce_attn_groups(...)` or
  `torch.distributed.all_reduce(...)`): the run STOPS there and reads what this rank brings.

Why stopping at the collective gives the model's local predicate: upstream computes the
local `can_terminate`, then reduces `[1 - int(can_terminate), int(is_terminated())]` with
MAX over the ranks (the seed shape: `int(can_terminate)` with MIN) and decides on the
reduced values. The model's scheduler performs that very collective itself (see
`model/scheduler.py`, `termination_vote`), so the predicate it needs is exactly what a rank
brings into it: `not tensor[0]` for MAX, `tensor[0]` for MIN. The adapter reports
`tp_world_size = 2` so that a function guarded by `if self.tp_world_size > 1` takes the
path that reaches its collective. A function that returns before any collective (best
effort, or no collective at all) gives its return value.

Anything else the function reads is refused with the attribute (or name) and the source
line: when loading (a static pass over the function and a run on a grid of operation
states) and, as a safety net, on every evaluation. A refusal is a `PredicateError`, never
a guessed verdict. `getattr(obj, "name", default)` on something the adapter does not
supply yields the default, as it would on an object without that feature.
"""

from __future__ import annotations

import ast
import builtins
import copy
import difflib
import sys
import itertools
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prefetch_check.model.protocols.poll.config import POLICIES
from prefetch_check.model.protocols.poll.predicates import OperationView, PredicateError

WORLD_SIZE = 2  # what `self.tp_world_size` reads: the multi-rank path, which reaches the collective
LATE = 1.0e12  # the adapter's clock once the model's timeout fired (start_time is 0)
TIMEOUT_SETTINGS = {  # any finite positive timeout behaves alike under the two clock readings
    "prefetch_timeout": 1.0,
    "prefetch_timeout_base": 1.0,
    "prefetch_timeout_per_page": 0.1,
}

SELF_SUPPLIED = (
    "prefetch_stop_policy",
    "page_size",
    "tp_world_size",
    "tp_group",
    "_all_reduce_attn_groups",
    "is_prefetch_timeout",
    "_prefetch_timeout_check_linear_func",
    "prefetch_timeout_config",
) + tuple(TIMEOUT_SETTINGS)
OPERATION_SUPPLIED = ("hash_value", "completed_tokens", "is_terminated", "start_time", "_terminated_flag")
GLOBALS_SUPPLIED = ("torch", "logger", "time")
BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "len", "int", "bool", "float", "str", "min", "max", "abs", "sum", "any", "all", "getattr",
        "hasattr", "isinstance", "range", "list", "tuple", "dict", "set", "round",
        "Exception", "ValueError", "RuntimeError", "TypeError", "KeyError", "AttributeError",
        "NotImplementedError", "AssertionError",
    )
}


class SourcePredicateError(PredicateError):
    """A predicate from source that cannot be loaded or evaluated; names file and line."""

    def __init__(self, message: str, path: str = "", line: Optional[int] = None, text: str = ""):
        self.path, self.line = path, line
        where = path + (f", line {line}" if line else "")
        full = f"{where}: {message}" if where else message
        if text:
            full += f"\n    {line} | {text.strip()}"
        super().__init__(full)


class _Unsupplied(AttributeError):
    """Raised by the adapter for an attribute it does not supply (getattr with a default swallows it)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


# ---------------------------------------------------------------- locating the function


def is_source_spec(spec: str) -> bool:
    """Whether a predicate spec names a source file (`PATH.py:Class.method`), not a module (`pkg.mod:fn`)."""
    path_text, sep, _ = spec.rpartition(":")
    return bool(sep) and path_text.endswith(".py")


def parse_spec(spec: str) -> tuple[Path, list[str]]:
    path_text, sep, qualname = spec.rpartition(":")
    if not sep or not path_text or not qualname:
        raise SourcePredicateError(
            f"predicate source {spec!r}: expected PATH.py:Class.method, e.g. "
            "python/sglang/srt/mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"
        )
    parts = qualname.split(".")
    if not all(p.isidentifier() for p in parts):
        raise SourcePredicateError(f"predicate source {spec!r}: {qualname!r} is not a dotted Python name (Class.method)")
    return Path(path_text), parts


def _read_tree(path: Path) -> tuple[ast.Module, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourcePredicateError(f"{path}: no such file (the predicate source must be a Python file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourcePredicateError(f"{path}: cannot read the file: {exc}") from None
    try:
        return ast.parse(text, filename=str(path)), text.splitlines()
    except SyntaxError as exc:
        raise SourcePredicateError(f"not valid Python: {exc.msg}", str(path), exc.lineno) from None


def _suggest(word: str, names: list[str], kind: str) -> str:
    near = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if near:
        return f"; did you mean {near[0]!r}?"
    return f"; {kind} found: {', '.join(names)}" if names else f"; the file defines no {kind}"


def find_function(tree: ast.Module, parts: list[str], path: Path):
    """The FunctionDef named by `parts` and the ClassDef holding it (None for a module function)."""
    scope, owner = tree.body, None
    for name in parts[:-1]:
        classes = [n for n in scope if isinstance(n, ast.ClassDef)]
        found = [c for c in classes if c.name == name]
        if not found:
            raise SourcePredicateError(f"no class {name!r}" + _suggest(name, [c.name for c in classes], "classes"), str(path))
        owner = found[-1]
        scope = owner.body
    name = parts[-1]
    defs = [n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = [d for d in defs if d.name == name]
    where = f"class {owner.name}" if owner else "the module"
    if not found:
        raise SourcePredicateError(f"{where} has no method {name!r}" + _suggest(name, [d.name for d in defs], "methods"), str(path))
    fn = found[-1]
    if isinstance(fn, ast.AsyncFunctionDef):
        raise SourcePredicateError(f"{name} is `async def`; the predicate must be a plain function", str(path), fn.lineno)
    return fn, owner


# ---------------------------------------------------------------- static checks


def _params(fn: ast.FunctionDef, in_class: bool, path: Path) -> tuple[Optional[str], str]:
    """(self parameter or None, operation parameter)."""
    args = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    has_self = (in_class and not static) or (not in_class and len(args) >= 2)
    need = 2 if has_self else 1
    required_kwonly = any(d is None for d in fn.args.kw_defaults)
    if len(args) < need or len(args) - len(fn.args.defaults) > need or required_kwonly:
        shape = "(self, operation)" if has_self else "(operation)"
        raise SourcePredicateError(
            f"{fn.name} takes ({', '.join(args)}); a completion predicate takes {shape}", str(path), fn.lineno
        )
    return (args[0] if has_self else None), args[need - 1]


def _stored_names(fn: ast.AST) -> set[str]:
    """Names the function binds itself (parameters, assignments, loop and comprehension targets)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef) and node is not fn:
            out.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def _static_check(fn: ast.FunctionDef, self_name, op_name, helpers: set[str], path: Path, lines: list[str]) -> set[str]:
    """Refuse reads the adapter cannot supply; returns the helper methods of the class the function calls."""
    local = _stored_names(fn)
    used_helpers = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in (self_name, op_name):
            owner, reads = node.value.id, isinstance(node.ctx, ast.Load)
            if not reads:
                _refuse_write(f"{owner}.{node.attr}", node.lineno, path, lines)
            if owner == self_name and node.attr not in SELF_SUPPLIED:
                if node.attr not in helpers:
                    _refuse(f"`{owner}.{node.attr}`", SELF_SUPPLIED, owner, node.lineno, path, lines)
                used_helpers.add(node.attr)
            elif owner == op_name and node.attr not in OPERATION_SUPPLIED:
                _refuse(f"`{owner}.{node.attr}`", OPERATION_SUPPLIED, owner, node.lineno, path, lines)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in local or node.id in GLOBALS_SUPPLIED or node.id in BUILTINS:
                continue
            raise SourcePredicateError(
                f"uses the name `{node.id}`, which the checker's adapter does not supply "
                f"(it supplies {', '.join(GLOBALS_SUPPLIED)} and the common builtins)",
                str(path),
                node.lineno,
                _line(lines, node.lineno),
            )
    return used_helpers


def _refuse(what: str, supplied, owner: str, line: int, path: Path, lines: list[str]):
    names = ", ".join(f"{owner}.{s}" for s in supplied)
    raise SourcePredicateError(
        f"reads {what}, which the checker's adapter does not supply (it supplies {names}); "
        "see docs/source-predicates.md for the shapes that are understood",
        str(path),
        line,
        _line(lines, line),
    )


def _refuse_write(what: str, line: int, path: Path, lines: list[str]):
    raise SourcePredicateError(
        f"assigns `{what}`: a completion predicate must only read the operation and the cache",
        str(path),
        line,
        _line(lines, line),
    )


def _line(lines: list[str], n: Optional[int]) -> str:
    return lines[n - 1] if n and 0 < n <= len(lines) else ""


def _bare(fn: ast.FunctionDef) -> ast.FunctionDef:
    """A copy without decorators and annotations (their names would need the real imports)."""
    fn = copy.deepcopy(fn)
    fn.decorator_list = []
    fn.returns = None
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs + [fn.args.vararg, fn.args.kwarg]:
        if a is not None:
            a.annotation = None
    for node in ast.walk(fn):
        if isinstance(node, ast.AnnAssign):
            node.annotation = ast.copy_location(ast.Constant(None), node.annotation)
    return fn



# ---------------------------------------------------------------- the adapter


class _CollectiveReached(BaseException):  # not an Exception: a bare `except Exception` must not swallow it
    def __init__(self, tensor, op, line: int):
        self.tensor, self.op, self.line = tensor, op, line


class FakeTensor:
    """`torch.tensor` of a few ints: enough for the termination vector and its reading."""

    def __init__(self, data, dtype=None, device=None):
        self.scalar = not isinstance(data, (list, tuple))
        values = [data] if self.scalar else list(data)
        self.values = [v.item() if isinstance(v, FakeTensor) else v for v in values]

    def item(self):
        if len(self.values) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.values[0]

    def tolist(self):
        return self.values[0] if self.scalar else list(self.values)

    def __getitem__(self, i):
        return FakeTensor(self.values[i])

    def __len__(self):
        return len(self.values)

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        return bool(self.item())

    def __eq__(self, other):
        return self.item() == (other.item() if isinstance(other, FakeTensor) else other)

    def __repr__(self):
        return f"tensor({self.tolist()})"


class _ReduceOp:
    SUM, MIN, MAX, PRODUCT = "SUM", "MIN", "MAX", "PRODUCT"


def _collective(tensor, op="SUM", *args, **kwargs):
    """Any all_reduce: stop the run and hand over what this rank brings (see the module doc)."""
    op = kwargs.get("op", op)
    raise _CollectiveReached(tensor, op, sys._getframe(1).f_lineno)


class _Distributed:
    ReduceOp = _ReduceOp
    all_reduce = staticmethod(_collective)

    def __getattr__(self, name):
        raise _Unsupplied(f"torch.distributed.{name}")


class _Torch:
    int = int32 = int64 = "int"
    bool = "bool"
    distributed = _Distributed()
    tensor = staticmethod(FakeTensor)

    def __getattr__(self, name):
        raise _Unsupplied(f"torch.{name}")


class _Logger:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _Clock:
    def __init__(self, now: float):
        self.now = now

    def monotonic(self):
        return self.now

    def time(self):
        return self.now

    def perf_counter(self):
        return self.now

    def __getattr__(self, name):
        raise _Unsupplied(f"time.{name}")


class _Operation:
    def __init__(self, view: OperationView):
        self.hash_value = list(view.hash_value)
        self.completed_tokens = view.completed_tokens
        self.start_time = 0.0
        self._terminated_flag = view.terminated
        self._view = view

    def is_terminated(self):
        return self._view.terminated

    def __getattr__(self, name):
        raise _Unsupplied(f"operation.{name}")


class _TimeoutConfig:
    base, per_ki_token, max = 1.0, 0.1, 10.0


class _Cache:
    """`self` of the upstream method, for one operation view."""

    def __init__(self, view: OperationView, helpers: dict):
        self.prefetch_stop_policy = view.policy
        self.page_size = view.page_size
        self.tp_world_size = WORLD_SIZE
        self.tp_group = "tp_group"
        self.prefetch_timeout_config = _TimeoutConfig()
        for name, value in TIMEOUT_SETTINGS.items():
            setattr(self, name, value)
        timed_out = view.timed_out
        self.is_prefetch_timeout = lambda operation: timed_out
        self._prefetch_timeout_check_linear_func = lambda operation: timed_out
        self._all_reduce_attn_groups = _collective
        for name, fn in helpers.items():
            setattr(self, name, types.MethodType(fn, self))

    def __getattr__(self, name):
        raise _Unsupplied(f"self.{name}")


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Evaluation:
    answer: bool
    how: str  # e.g. "brings [1, 0] to all_reduce(MAX) at line 63" or "returns True"
    collective: tuple = ()  # (reduce op, elements) when the run reached the collective


class SourcePredicate:
    """A `Predicate` (OperationView -> bool) backed by a function read from a source file."""

    def __init__(self, name: str, path: Path, fn_node: ast.FunctionDef, helpers: dict, self_name, lines: list[str]):
        self.__name__ = name
        self.path, self.lines, self.self_name = path, lines, self_name
        self.codes = {}
        for key, node in [("", fn_node)] + sorted(helpers.items()):
            module = ast.Module(body=[_bare(node)], type_ignores=[])
            namespace: dict = {}
            exec(compile(module, str(path), "exec"), {"__builtins__": {}}, namespace)
            self.codes[key] = namespace[node.name]
        self.first_line = fn_node.lineno
        self.shape: Optional[str] = None  # set by load_source_predicate: "late2025", "seed" or None

    def __call__(self, view: OperationView) -> bool:
        return self.evaluate(view).answer

    def explain(self, view: OperationView, answer: bool) -> str:
        e = self.evaluate(view)
        inputs = (
            f"len(hash_value)={len(view.hash_value)}, completed_tokens={view.completed_tokens}, "
            f"terminated={view.terminated}" + (f", timed_out={view.timed_out}" if view.policy == "timeout" else "")
        )
        return f"{self.__name__}({inputs}) {e.how} -> {'accept' if e.answer else 'wait'}"

    def _bind(self, view: OperationView):
        g = {
            "__builtins__": BUILTINS,
            "torch": _Torch(),
            "logger": _Logger(),
            "time": _Clock(LATE if view.timed_out else 0.0),
        }
        fns = {}
        for key, f in self.codes.items():
            fns[key] = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__)
            fns[key].__kwdefaults__ = f.__kwdefaults__
        main = fns.pop("")
        return main, _Cache(view, fns)

    def evaluate(self, view: OperationView) -> Evaluation:
        main, cache = self._bind(view)
        args = (cache, _Operation(view)) if self.self_name else (_Operation(view),)
        try:
            value = main(*args)
        except _CollectiveReached as reached:
            return self._at_collective(reached, view)
        except SourcePredicateError:
            raise
        except Exception as exc:
            raise self._failure(exc) from None
        if isinstance(value, FakeTensor) or value is None or not isinstance(value, (bool, int)):
            raise SourcePredicateError(
                f"{self.__name__} returned {value!r} for {_inputs(view)}; a completion predicate returns True or False",
                str(self.path),
                self.first_line,
            )
        return Evaluation(bool(value), f"returns {bool(value)}")

    def _at_collective(self, reached: _CollectiveReached, view: OperationView) -> Evaluation:
        t, op, line = reached.tensor, reached.op, reached.line
        bad = None
        if not isinstance(t, FakeTensor):
            bad = f"reduces {t!r}, not a torch.tensor of the local decision"
        elif op == _ReduceOp.MAX and len(t) in (1, 2):
            if len(t) == 2 and bool(t.values[1]) != view.terminated:
                bad = f"brings {t.tolist()} to all_reduce(MAX), whose second element is not is_terminated()"
            else:
                return Evaluation(t.values[0] == 0, f"brings {t.tolist()} to all_reduce(MAX) at line {line}", (op, len(t)))
        elif op == _ReduceOp.MIN and len(t) == 1:
            return Evaluation(bool(t.values[0]), f"brings {t.tolist()} to all_reduce(MIN) at line {line}", (op, 1))
        else:
            bad = f"reduces {t.tolist()} with {op}"
        raise SourcePredicateError(
            f"the collective {bad}; the checker understands [1 - int(can_terminate), int(operation.is_terminated())] "
            "or [1 - int(can_terminate)] with MAX, and int(can_terminate) with MIN",
            str(self.path),
            line,
            _line(self.lines, line),
        )

    def _failure(self, exc: Exception) -> SourcePredicateError:
        line = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(self.path):
                line = tb.tb_lineno
            tb = tb.tb_next
        if isinstance(exc, _Unsupplied):
            message = (
                f"reads `{exc.what}`, which the checker's adapter does not supply; see "
                "docs/source-predicates.md for what it supplies"
            )
        elif isinstance(exc, NameError):
            message = f"uses the name `{exc.name}`, which the checker's adapter does not supply"
        else:
            message = f"fails on the checker's adapter: {type(exc).__name__}: {exc}"
        return SourcePredicateError(message, str(self.path), line, _line(self.lines, line))


def _inputs(view: OperationView) -> str:
    return (
        f"policy={view.policy}, len(hash_value)={len(view.hash_value)}, completed_tokens={view.completed_tokens}, "
        f"terminated={view.terminated}, timed_out={view.timed_out}"
    )


def probe_views():
    """A grid of operation states covering every branch a completion predicate can take."""
    for policy, page_size, pages in itertools.product(POLICIES, (1, 2), (0, 1, 2)):
        for done, terminated, timed_out in itertools.product(range(pages + 1), (False, True), (False, True)):
            yield OperationView(
                hash_value=tuple(f"h{i}" for i in range(pages)),
                completed_tokens=done * page_size,
                page_size=page_size,
                terminated=terminated,
                policy=policy,
                timed_out=timed_out,
            )


def load_source_predicate(spec: str) -> tuple[str, SourcePredicate]:
    """`PATH.py:Class.method` -> (name, predicate), e.g. ("hiradix_cache.py:HiRadixCache.can_terminate_prefetch", fn).

    Raises `PredicateError` (a `SourcePredicateError`) naming the file and line when the
    function cannot be found or reads something the adapter does not supply.
    """
    path, parts = parse_spec(spec)
    tree, lines = _read_tree(path)
    fn, owner = find_function(tree, parts, path)
    self_name, op_name = _params(fn, owner is not None, path)
    methods = {}
    if owner is not None:
        methods = {n.name: n for n in owner.body if isinstance(n, ast.FunctionDef) and not n.decorator_list}
    helpers, todo = {}, [fn]
    while todo:  # the class's own helper methods the function calls, transitively
        node = todo.pop()
        own_self = self_name if node is fn else (node.args.args[0].arg if node.args.args else None)
        own_op = op_name if node is fn else None  # a helper's parameters are checked when it runs
        for name in sorted(_static_check(_bare(node), own_self, own_op, set(methods), path, lines)):
            if name not in helpers and methods[name] is not fn:
                helpers[name] = methods[name]
                todo.append(methods[name])
    name = f"{path.name}:{'.'.join(parts)}"
    predicate = SourcePredicate(name, path, fn, helpers, self_name, lines)
    reached = {predicate.evaluate(view).collective for view in probe_views()}
    predicate.shape = _shape(reached)
    return name, predicate


def _shape(reached: set) -> Optional[str]:
    """The protocol version (`Config.shape`) whose termination collective the function performs, if any."""
    if (_ReduceOp.MAX, 2) in reached:
        return "late2025"
    if (_ReduceOp.MIN, 1) in reached or (_ReduceOp.MAX, 1) in reached:
        return "seed"
    return None
