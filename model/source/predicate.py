"""The completion predicate as it is written in a codebase, read with `ast` and run on model states.

`load_source_predicate("path/hiradix_cache.py:HiRadixCache.can_terminate_prefetch")` parses
the file (nothing is imported: no torch, no sglang), finds the method, and runs it with our
own small interpreter (`model/source/interpreter.py`: nothing of the file is ever compiled or
executed by Python; `model/source/sandbox.py` refuses what it does not run before anything
runs) on small stand-ins (an adapter, `model/source/adapter.py`) that supply exactly what
the upstream function reads:

- `self.prefetch_stop_policy`, `self.page_size` -> the model's policy and page size;
  `self.pp_rank` -> 0 (PP rank 0 decides; the model has one pipeline stage);
- `self.is_prefetch_timeout(op)` / `self._prefetch_timeout_check_linear_func(op)` /
  `self._prefetch_deadline_expired(op)` (0.5.23) -> the model's `timed_out` flag (the
  model's clock implements when it may fire: from issue, or under the admission deadline
  from the first waiting check and never once the pages have landed); a clock read inline
  (`time.monotonic() - op.start_time > ...`) sees 0 before the model's clock fired and a
  far-away time after;
- the operation: `hash_value` (a list of page hashes), `completed_tokens`,
  `is_terminated()`, `start_time`;
- the collective (`torch.tensor(...)` then `self._all_reduce_attn_groups(...)`,
  `self._all_reduce(...)` or `torch.distributed.all_reduce(...)`): the run STOPS there and
  reads what this rank brings.

Why stopping at the collective gives the model's local predicate: the model's scheduler
performs that very collective itself, so the predicate it needs is exactly what a rank brings
into it. Which reading is right depends on the protocol the function belongs to:

| the function | protocol (shape) | local answer |
|---|---|---|
| reduces `[1 - int(can_terminate), int(is_terminated())]` with MAX (0.5.2-0.5.18) | predicate-poll (late2025) | `tensor[0] == 0` |
| reduces `int(can_terminate)` with MIN (0.5.1.x) | predicate-poll (seed) | `tensor[0] == 1` |
| reduces `[1 - int(can_terminate)]` with MAX and reads `tensor[0] == 0` | predicate-poll (seed) | `tensor[0] == 0` |
| reduces `int(should_terminate)` with MAX and reads `tensor[0] == 1`, only under timeout (UnifiedRadixCache 0.5.19+) | ack-drain (unified) | `tensor[0] == 1` |
| reaches no collective and never accepts under wait_complete (HiRadixCache 0.5.19-0.5.20: the check around it votes) | ack-drain (hiradix) | its return value |
| reaches no collective and can accept under wait_complete | either (the model votes) | its return value |

How a one-element MAX is read is learnt from the function itself: the loader runs it once
more with the collective passing the tensor through (a reduction over one rank) and compares
what it returns with what it brought. Whether wait_complete can ever accept is read off the
probe grid. The file name never decides. `SourcePredicate.protocol` and `.shape` hold the
result, `.membership` says what settled it, and `protocol_mismatch` is the refusal every
command applies before pairing a function with a scenario of another protocol: a
wait_complete that never accepts means completion comes through the ACK drain, which the
predicate-poll protocol does not have, so judging it there would report a false progress
violation.

The adapter reports `tp_world_size = 2` so that a function guarded by `if self.tp_world_size
> 1` takes the path that reaches its collective. A function that returns before any
collective (best effort, or no collective at all) gives its return value.

Decorators: `@staticmethod`, and `@rank_consensus(...)` (utils/rank_consensus_checker.py,
0.5.19+): it is an assertion that compares the ranks' results when an environment variable
switches it on and is the identity otherwise, not a step of the protocol. Any other
decorator is refused, since what it does cannot be known without running it.

Anything else the function reads is refused with the attribute (or name) and the source
line: when loading (a static pass over the function and a run on a grid of operation
states) and, as a safety net, on every evaluation. A refusal is a `PredicateError`, never
a guessed verdict. `getattr(obj, "name", default)` on something the adapter does not
supply yields the default, as it would on an object without that feature.
"""

from __future__ import annotations

import ast
import copy
import difflib
import functools
import hashlib
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prefetch_check.model.protocols import builtin_ancestor, load_protocol, protocol_label
from prefetch_check.model.protocols.registry import descriptor, descriptors
from prefetch_check.model.protocols.poll.config import POLICIES
from prefetch_check.model.protocols.poll.predicates import OperationView, PredicateError
from prefetch_check.model.source.adapter import (
    GLOBALS_SUPPLIED, OPERATION_SUPPLIED, SELF_SUPPLIED, CollectiveReached, FakeTensor, PassThrough, stand_ins,
    stop_at_collective, supplied_globals,
)
from prefetch_check.model.source.files import FileProblem, read_regular_file
from prefetch_check.model.source.interpreter import BUILTINS, Function, Interpreter, Refused, Unsupplied
from prefetch_check.model.source.sandbox import check_syntax

MAX_SOURCE_BYTES = 16 * 1024 * 1024  # hiradix_cache.py is about 60 KB; anything near this is not a source file


class SourcePredicateError(PredicateError):
    """A predicate from source that cannot be loaded or evaluated; names file and line."""

    def __init__(self, message: str, path: str = "", line: Optional[int] = None, text: str = ""):
        self.path, self.line = path, line
        where = path + (f", line {line}" if line else "")
        full = f"{where}: {message}" if where else message
        if text:
            full += f"\n    {line} | {text.strip()}"
        super().__init__(full)


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
        raw = read_regular_file(path, MAX_SOURCE_BYTES, "a predicate source")
    except FileProblem as exc:
        if str(exc) == "no such file":
            raise SourcePredicateError(f"{path}: no such file (the predicate source must be a Python file)") from None
        raise SourcePredicateError(f"{path}: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourcePredicateError(f"{path}: cannot read the file: {exc}") from None
    try:
        return ast.parse(text, filename=str(path)), text.splitlines()
    except SyntaxError as exc:
        raise SourcePredicateError(f"not valid Python: {exc.msg}", str(path), exc.lineno) from None
    except ValueError as exc:  # e.g. null bytes
        raise SourcePredicateError(f"not valid Python: {exc}", str(path)) from None
    except (RecursionError, MemoryError):
        raise SourcePredicateError("nests too deeply for Python's parser", str(path)) from None


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


ASSERTION_DECORATORS = ("rank_consensus",)  # compare the ranks' results when switched on; the identity otherwise


def _decorator_name(d: ast.expr) -> str:
    """`staticmethod`, `rank_consensus` for `@rank_consensus(...)` or `@checker.rank_consensus`, else ''."""
    target = d.func if isinstance(d, ast.Call) else d
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else ""


def _check_decorators(fn: ast.FunctionDef, path: Path, lines: list[str]) -> None:
    """@staticmethod and the assertion @rank_consensus(...) only: what another decorator does
    cannot be known without running it."""
    for d in fn.decorator_list:
        name = _decorator_name(d)
        if isinstance(d, ast.Name) and name == "staticmethod":
            continue
        if name in ASSERTION_DECORATORS:
            continue  # an assertion about the ranks' results, not a step: the function runs as written
        raise SourcePredicateError(
            f"{fn.name} is decorated with @{ast.unparse(d)}: the checker cannot know what a decorator does "
            "without running it, so it checks only undecorated functions (and @staticmethod, and the "
            "assertion @rank_consensus(...))",
            str(path), d.lineno, _line(lines, d.lineno),
        )


def _check_sandbox(fn: ast.FunctionDef, path: Path, lines: list[str]) -> None:
    """The sandbox's syntax check, as a SourcePredicateError with file and line."""
    try:
        check_syntax(fn)
    except Refused as r:
        raise SourcePredicateError(
            f"{r.message}; see docs/source-predicates.md for what a source predicate may contain",
            str(path), r.line, _line(lines, r.line),
        ) from None


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



# ---------------------------------------------------------------- evaluation

VOTE, NEGATED = "vote", "negated"  # a one-element MAX read back as tensor[0] == 1, or as tensor[0] == 0


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
        self.main = Function(fn_node)
        self.helpers = {key: Function(node) for key, node in sorted(helpers.items())}
        for fn in [self.main, *self.helpers.values()]:  # default values, evaluated once as Python does
            interpreter = Interpreter(supplied_globals(False))
            self._guarded(interpreter, lambda fn=fn: interpreter.prepare(fn), None)
        self.first_line = fn_node.lineno
        # set by `classify` (load_source_predicate): see the module doc's table
        self.protocol: Optional[str] = None  # a registered protocol's name, or None: a local predicate that fits any
        self.shape: Optional[str] = None  # predicate-poll: "late2025" | "seed"; ack-drain: "unified" | "hiradix"
        self.membership = ""  # what the function does that settled protocol and shape, in words
        self.max_reading: Optional[str] = None  # how a one-element MAX is read back: VOTE or NEGATED

    def __call__(self, view: OperationView) -> bool:
        return self.evaluate(view).answer

    def explain(self, view: OperationView, answer: bool) -> str:
        e = self.evaluate(view)
        inputs = (
            f"len(hash_value)={len(view.hash_value)}, completed_tokens={view.completed_tokens}, "
            f"terminated={view.terminated}" + (f", timed_out={view.timed_out}" if view.policy == "timeout" else "")
        )
        return f"{self.__name__}({inputs}) {e.how} -> {'accept' if e.answer else 'wait'}"

    def evaluate(self, view: OperationView) -> Evaluation:
        outcome = self._run(view)
        if isinstance(outcome, CollectiveReached):
            return self._at_collective(outcome, view)
        return Evaluation(bool(outcome), f"returns {bool(outcome)}")

    def _run(self, view: OperationView, reduce=stop_at_collective):
        """What the function returns (a bool or int), or the `CollectiveReached` where it stopped."""
        interpreter = Interpreter(supplied_globals(view.timed_out, reduce))
        cache, operation = stand_ins(view, self.helpers, reduce)
        args = (cache, operation) if self.self_name else (operation,)
        try:
            value = self._guarded(interpreter, lambda: interpreter.run(self.main, args, {}), view)
        except CollectiveReached as reached:
            return reached
        if isinstance(value, FakeTensor) or value is None or not isinstance(value, (bool, int)):
            raise SourcePredicateError(
                f"{self.__name__} returned {value!r} for {_inputs(view)}; a completion predicate returns True or False",
                str(self.path),
                self.first_line,
            )
        return value

    def _guarded(self, interpreter: Interpreter, run, view: Optional[OperationView]):
        """run(), with what the interpreter refuses or the function raises as a SourcePredicateError."""
        try:
            return run()
        except Refused as r:
            line = r.line or interpreter.line
            on = f" (on {_inputs(view)})" if view is not None and "steps" in r.message else ""
            raise SourcePredicateError(
                f"{r.message}{on}; see docs/source-predicates.md for what a source predicate may contain",
                str(self.path), line, _line(self.lines, line),
            ) from None
        except MemoryError:
            raise  # the machine ran out, not the predicate: the search reports it (BOUNDED)
        except RecursionError:
            line = interpreter.line
            raise SourcePredicateError(
                "nests too deeply for the checker's sandbox", str(self.path), line, _line(self.lines, line)
            ) from None
        except Exception as exc:
            raise self._failure(exc, interpreter.fail_line if exc is interpreter.failed else interpreter.line) from None

    def _at_collective(self, reached: CollectiveReached, view: OperationView) -> Evaluation:
        t, op, line = reached.tensor, reached.op, reached.line
        bad = None
        if not isinstance(t, FakeTensor):
            bad = f"reduces {t!r}, not a torch.tensor of the local decision"
        elif op == "MAX" and len(t) == 2:
            if bool(t.values[1]) != view.terminated:
                bad = f"brings {t.tolist()} to all_reduce(MAX), whose second element is not is_terminated()"
            else:
                return Evaluation(t.values[0] == 0, f"brings {t.tolist()} to all_reduce(MAX) at line {line}", (op, 2))
        elif op == "MAX" and len(t) == 1:
            vote = self.max_reading == VOTE
            answer = t.values[0] == 1 if vote else t.values[0] == 0
            read = ", read back as tensor[0] == 1" if vote else ""
            return Evaluation(answer, f"brings {t.tolist()} to all_reduce(MAX) at line {line}{read}", (op, 1))
        elif op == "MIN" and len(t) == 1:
            return Evaluation(bool(t.values[0]), f"brings {t.tolist()} to all_reduce(MIN) at line {line}", (op, 1))
        else:
            bad = f"reduces {t.tolist()} with {op}"
        raise SourcePredicateError(
            f"the collective {bad}; the checker understands [1 - int(can_terminate), int(operation.is_terminated())] "
            "or [1 - int(can_terminate)] with MAX, int(should_terminate) with MAX read back as tensor[0] == 1, "
            "and int(can_terminate) with MIN",
            str(self.path),
            line,
            _line(self.lines, line),
        )

    def _failure(self, exc: Exception, line: Optional[int]) -> SourcePredicateError:
        if isinstance(exc, Unsupplied):
            message = (
                f"reads `{exc.what}`, which the checker's adapter does not supply; see "
                "docs/source-predicates.md for what it supplies"
            )
        elif isinstance(exc, NameError):
            message = f"uses the name `{exc.name}`, which the checker's adapter does not supply"
        else:
            message = f"fails on the checker's adapter: {type(exc).__name__}: {exc}"
        return SourcePredicateError(message, str(self.path), line, _line(self.lines, line))

    # ---- which protocol the function belongs to (set once, when loading)

    def classify(self) -> None:
        """Run the probe grid, learn how a one-element MAX is read back, and settle protocol and shape."""
        views = list(probe_views())
        outcomes = [self._run(view) for view in views]
        single_max = [
            view for view, o in zip(views, outcomes)
            if isinstance(o, CollectiveReached) and isinstance(o.tensor, FakeTensor) and o.op == "MAX" and len(o.tensor) == 1
        ]
        if single_max:
            self.max_reading = self._learn_max_reading(single_max)
        evaluations = [self.evaluate(view) for view in views]  # every reading checked (e.g. MAX's second element)
        kinds = {e.collective for e in evaluations if e.collective}
        wait_accepts = any(e.answer for view, e in zip(views, evaluations) if view.policy == "wait_complete")
        self.protocol, self.shape, self.membership = _membership(kinds, self.max_reading, wait_accepts)

    def _learn_max_reading(self, views: list) -> str:
        """VOTE or NEGATED: what the function returns after a one-rank all_reduce, against what it brought."""
        readings = {}
        for view in views:
            passing = PassThrough()
            returned = bool(self._run(view, passing))
            brought = passing.seen[0][0][0] if passing.seen and passing.seen[0][0] else None
            if brought not in (0, 1):
                raise SourcePredicateError(
                    f"brings {brought!r} to a one-element all_reduce(MAX) on {_inputs(view)}; the checker understands "
                    "0 or 1 there", str(self.path), self.first_line)
            readings.setdefault(VOTE if returned == (brought == 1) else NEGATED, view)
        if len(readings) > 1:
            raise SourcePredicateError(
                f"reads the result of its one-element all_reduce(MAX) as tensor[0] == 1 on "
                f"{_inputs(readings[VOTE])} but as tensor[0] == 0 on {_inputs(readings[NEGATED])}; the checker "
                "understands a vote (== 1) or a negated can_terminate (== 0), one of them",
                str(self.path), self.first_line)
        return next(iter(readings))


def _membership(kinds: set, max_reading: Optional[str], wait_accepts: bool) -> tuple:
    """(protocol, shape, why) from the collectives a function reaches and whether wait_complete
    accepts: the first registered protocol whose source rules claim it (its descriptor's)."""
    for d in descriptors():
        found = d.source_membership(kinds, max_reading, wait_accepts)
        if found is not None:
            return (d.name, *found)
    return None, None, "reaches no collective and can accept under wait_complete: the model performs the vote"


def builtin_protocol(spec) -> Optional[str]:
    """The built-in protocol a protocol spec is or derives from (None: the default), by name."""
    cls = load_protocol(spec)
    base = builtin_ancestor(cls)
    return protocol_label(base) if base is not None else None


def protocol_mismatch(name: str, predicate, protocol_spec) -> Optional[str]:
    """Why a predicate must not be judged on a scenario of this protocol (a built-in name, a
    variant's `package.module:Class`, or None for the default), or None when it may.

    Only a predicate that knows its protocol (a source predicate, see the module doc) can be
    refused; a plain function or a local predicate without a collective fits either."""
    own = getattr(predicate, "protocol", None)
    if own is None:
        return None
    protocol = builtin_protocol(protocol_spec)
    theirs, ours = descriptor(protocol or ""), descriptor(own)
    if own == protocol or theirs is None or ours is None:
        return None
    where = f"{predicate.path}, line {predicate.first_line}" if isinstance(predicate, SourcePredicate) else name
    fix = ours.scenario_key
    return (
        f"{name} ({where}) belongs to the {own} protocol ({ours.covers}): it {predicate.membership}. "
        f"It is not judged on a {protocol} scenario ({theirs.covers}): the verdicts would be about steps the "
        f"function was not written for (e.g. a false progress violation). Check it on scenarios with {fix}, "
        "or check the whole release with `prefetch-check sglang`."
    )


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
    function cannot be found or reads something the adapter does not supply. Loaded once per
    process for the same spec and the same file bytes (a run asks for it from its argument
    check, its protocol checks and every case it builds): the load reads and probes the function.
    """
    path, _ = parse_spec(spec)
    try:
        raw = read_regular_file(path, MAX_SOURCE_BYTES, "a predicate source")
    except FileProblem:
        return _load(spec)  # says what is wrong with the file
    return _loaded(spec, str(path.resolve()), hashlib.sha256(raw).digest())


@functools.lru_cache(maxsize=64)
def _loaded(spec: str, resolved: str, digest: bytes) -> tuple[str, SourcePredicate]:
    """The load of `spec`, keyed by the file's path and bytes (a changed file is loaded again).
    A load that raises is not cached: it raises again, with the same file and line."""
    return _load(spec)


def _load(spec: str) -> tuple[str, SourcePredicate]:
    path, parts = parse_spec(spec)
    tree, lines = _read_tree(path)
    fn, owner = find_function(tree, parts, path)
    _check_sandbox(fn, path, lines)  # before anything of the function is evaluated
    _check_decorators(fn, path, lines)
    self_name, op_name = _params(fn, owner is not None, path)
    methods = {}
    if owner is not None:
        methods = {n.name: n for n in owner.body if isinstance(n, ast.FunctionDef) and not n.decorator_list}
    helpers, todo = {}, [fn]
    while todo:  # the class's own helper methods the function calls, transitively
        node = todo.pop()
        own_self = self_name if node is fn else (node.args.args[0].arg if node.args.args else None)
        own_op = op_name if node is fn else None  # a helper's parameters are checked when it runs
        if node is not fn:
            _check_sandbox(node, path, lines)
        for name in sorted(_static_check(_bare(node), own_self, own_op, set(methods), path, lines)):
            if name not in helpers and methods[name] is not fn:
                helpers[name] = methods[name]
                todo.append(methods[name])
    name = f"{path.name}:{'.'.join(parts)}"
    predicate = SourcePredicate(name, path, fn, helpers, self_name, lines)
    predicate.classify()
    return name, predicate
