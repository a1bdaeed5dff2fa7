"""A small interpreter for source predicates: it walks the function's syntax tree itself.

Why not Python's `exec` with restricted builtins: from any object an attribute chain
reaches the real builtins (`len.__self__.__import__`), every class
(`().__class__.__base__.__subclasses__()`) or a frame and its globals (`gen.gi_frame`).
Here no code object of the file is ever made, and a value is read only through
`attribute()`, which serves exactly:

- on an adapter object (a `Supplied`: self, the operation, torch, time, logger, a tensor):
  the names it supplies; anything else is `Unsupplied` (an AttributeError, so
  `getattr(x, "name", default)` gives the default, as on an object without that feature);
- on a str, list or dict: the few methods in `METHODS`; anything else is refused.

Names are the function's own locals, the globals the caller supplies and the builtins in
`BUILTINS` (our own `getattr`, `hasattr`, `isinstance` and `range`, the plain types and
exception classes). Only those and the adapter's methods can be called.

Bounded by construction, so no input hangs or fills memory: every node evaluated is one
step of a budget (STEP_BUDGET a call, so `while True: pass` is refused, not hung), helper
calls nest at most MAX_CALLS deep, and values stay small (at most MAX_ITEMS items,
MAX_CHARS characters, MAX_INT_BITS bits; a container never holds a container, so no
printing or comparing can blow up).

A refusal is `Refused` (message, line): a BaseException, so the predicate's own
`except Exception` never swallows it.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Optional

STEP_BUDGET = 10_000  # nodes evaluated per call from outside; upstream's predicate takes about 60
MAX_CALLS = 16  # helper methods calling helper methods
MAX_ITEMS = 1_000  # items in a list, tuple, set, dict or range
MAX_CHARS = 10_000  # characters in a string
MAX_INT_BITS = 4_096

CONTAINERS = (list, tuple, set, frozenset, dict)


class Refused(BaseException):
    """Something the sandbox does not run, at a line (None when not tied to one)."""

    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.message, self.line = message, line


class Unsupplied(AttributeError):
    """An attribute an adapter object does not supply (`what` is e.g. "self.cache_controller")."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


class Stop(BaseException):
    """Raised by an adapter method to end the run early (e.g. at the collective); `line` is the call's."""

    line: Optional[int] = None


class Supplied:
    """Base of the adapter's stand-ins: `SUPPLIED` names what the predicate may read, `LABEL` how to name it."""

    SUPPLIED: frozenset = frozenset()
    LABEL = "object"

    def supplies(self, name: str) -> bool:
        return name in self.SUPPLIED


class Native:
    """A Python callable the sandbox may call: one of its builtins or an adapter's method."""

    __slots__ = ("fn", "name")

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def __call__(self, *args, **kwargs):  # so that e.g. max(..., key=len) works
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Function:
    """A function read from source, checked by `sandbox.check_syntax`; defaults are set by `prepare`."""

    def __init__(self, node: ast.FunctionDef):
        self.node = node
        self.name = node.name
        self.defaults: list = []
        self.kw_defaults: dict = {}

    def __repr__(self) -> str:
        return f"<function {self.name}>"


class Bound:
    """A source function with its first argument (self) bound."""

    __slots__ = ("function", "owner")

    def __init__(self, function: Function, owner):
        self.function, self.owner = function, owner

    def __repr__(self) -> str:
        return f"<method {self.function.name}>"


# ---------------------------------------------------------------- values and their size


def small(value, line=None):
    """The value, if within the size limits; refused otherwise."""
    kind = type(value)
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:
            raise Refused(f"makes an integer of more than {MAX_INT_BITS} bits, beyond the sandbox's limits", line)
    elif kind is str or kind is bytes:
        if len(value) > MAX_CHARS:
            raise Refused(f"makes a string of more than {MAX_CHARS:,} characters, beyond the sandbox's limits", line)
    elif kind in CONTAINERS or kind is range:
        if len(value) > MAX_ITEMS:
            raise Refused(f"makes a {kind.__name__} of more than {MAX_ITEMS:,} items, beyond the sandbox's limits", line)
    return value


def flat(items, line=None):
    """The items, if none is a container (a container holds no container: see the module doc)."""
    for item in items:
        if isinstance(item, CONTAINERS):
            raise Refused("puts a list, tuple, set or dict inside another one, which the sandbox does not allow", line)
    return items


def _scalar_args(args, line):
    for a in args:
        if not (a is None or isinstance(a, (bool, int, float, str))):
            raise Refused("raises an exception with an argument that is not a number or a string", line)


# ---------------------------------------------------------------- the builtins it offers


def _getattr(obj, name, *default):
    if not isinstance(name, str):
        raise TypeError("getattr(): attribute name must be string")
    try:
        return attribute(obj, name)
    except Unsupplied:
        if default:
            return default[0]
        raise


def _hasattr(obj, name):
    return _getattr(obj, name, _MISSING) is not _MISSING


_MISSING = object()


def _isinstance(obj, kinds):
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not all(k in TYPES for k in allowed):
        raise TypeError("isinstance() takes one of the builtin types the sandbox offers")
    return isinstance(obj, kinds)


def _range(*args):
    return small(range(*args))


def _round(number, ndigits=None):
    if ndigits is not None and _int(ndigits) and abs(ndigits) > MAX_CHARS:  # round(n, -10**9) computes 10**10**9
        raise Refused(f"rounds to more than {MAX_CHARS:,} digits, beyond the sandbox's limits")
    return round(number) if ndigits is None else round(number, ndigits)


EXCEPTIONS = (
    Exception, ValueError, RuntimeError, TypeError, KeyError, IndexError, AttributeError,
    NotImplementedError, AssertionError, ZeroDivisionError,
)
TYPES = (int, bool, float, str, list, tuple, dict, set) + EXCEPTIONS

BUILTINS = {
    **{kind.__name__: kind for kind in TYPES},
    **{fn.__name__: Native(fn, fn.__name__) for fn in (len, min, max, abs, sum, any, all)},
    "round": Native(_round, "round"),
    "getattr": Native(_getattr, "getattr"),
    "hasattr": Native(_hasattr, "hasattr"),
    "isinstance": Native(_isinstance, "isinstance"),
    "range": Native(_range, "range"),
}


def _append(items: list):
    def append(value):
        if len(items) >= MAX_ITEMS:
            small(items + [value])
        flat((value,))
        items.append(value)

    return append


# the methods of plain values the sandbox serves (each builds the callable for one value)
METHODS = {
    str: {name: (lambda s, name=name: getattr(s, name)) for name in ("startswith", "endswith", "lower", "upper", "strip")},
    list: {"append": _append, "count": lambda items: items.count, "index": lambda items: items.index},
    dict: {
        "get": lambda d: d.get,
        "keys": lambda d: lambda: list(d.keys()),
        "values": lambda d: lambda: list(d.values()),
    },
}


def attribute(value, name: str, line=None):
    """`value.name`, served only as the module doc says; the only way the sandbox reads an attribute."""
    if name.startswith("__") and name.endswith("__"):
        raise Refused(f"reads `{name}`: names spelled like `__this__` reach Python's internals and are refused", line)
    if isinstance(value, Supplied):
        if not value.supplies(name):
            raise Unsupplied(f"{value.LABEL}.{name}")
        found = getattr(value, name)
        if callable(found) and not isinstance(found, (Supplied, Bound, Native)):
            return Native(found, f"{value.LABEL}.{name}")
        return found
    make = METHODS.get(type(value), {}).get(name)
    if make is None:
        kind = type(value).__name__
        raise Refused(
            f"reads `.{name}` of a {kind} value; the sandbox reads attributes only of what the adapter supplies "
            "(self, the operation, torch, time, logger) and a few methods of str, list and dict",
            line,
        )
    return Native(make(value), f"{type(value).__name__}.{name}")


# ---------------------------------------------------------------- operators

BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
}
UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
SEQUENCES = (str, bytes, list, tuple)


def _int(v) -> bool:
    return type(v) is int or type(v) is bool


def binary(op: ast.operator, left, right, line):
    """`left op right`, refusing before computing what would exceed the size limits."""
    kind = type(op)
    if kind is ast.Mod and isinstance(left, (str, bytes)):
        raise Refused("uses %-formatting of a string, which the sandbox does not run (use an f-string)", line)
    if kind is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, SEQUENCES) and _int(n) and len(seq) * max(n, 0) > max(MAX_ITEMS, MAX_CHARS):
                raise Refused("repeats a sequence beyond the sandbox's size limits", line)
    if kind is ast.Pow and _int(left) and _int(right) and right > 0 and abs(left) > 1:
        if left.bit_length() * right > MAX_INT_BITS:
            raise Refused(f"computes a power of more than {MAX_INT_BITS} bits, beyond the sandbox's limits", line)
    if kind is ast.LShift and _int(left) and _int(right) and left and left.bit_length() + right > MAX_INT_BITS:
        raise Refused(f"shifts to more than {MAX_INT_BITS} bits, beyond the sandbox's limits", line)
    return small(BINARY[kind](left, right), line)


_WIDTH = re.compile(r"\d+")


def formatted(value, spec: str, line):
    """format(value, spec) with widths and precisions within the size limits."""
    if any(int(n) > MAX_CHARS for n in _WIDTH.findall(spec)):
        raise Refused("formats with a width or precision beyond the sandbox's size limits", line)
    return small(format(value, spec), line)


# ---------------------------------------------------------------- the interpreter


class _Return:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


BREAK, CONTINUE = object(), object()


class Interpreter:
    """One evaluation: the globals it sees, its step budget, and where it failed."""

    def __init__(self, globals_: dict, budget: int = STEP_BUDGET):
        self.globals = globals_
        self.budget = budget
        self.steps = 0
        self.calls = 0
        self.line: Optional[int] = None  # the line being run
        self.loops: list[int] = []  # lines of the loops being run, innermost last
        self.failed = None  # the user-level exception escaping, and its line
        self.fail_line: Optional[int] = None
        self.handling: list = []  # exceptions being handled (for a bare `raise`)

    # ---- entry points ----

    def prepare(self, fn: Function) -> None:
        """Evaluate the function's default values once (they may call builtins: `limit=max(1, 2)`)."""
        args = fn.node.args
        fn.defaults = [self.expr(d, {}) for d in args.defaults]
        fn.kw_defaults = {a.arg: self.expr(d, {}) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}

    def call(self, callee, args: tuple, kwargs: dict, line=None):
        """Call a value of the sandbox: a source function (bound or not), a Native, an allowed type."""
        if isinstance(callee, Bound):
            return self.run(callee.function, (callee.owner,) + tuple(args), kwargs)
        if isinstance(callee, Function):
            return self.run(callee, tuple(args), kwargs)
        if isinstance(callee, Native):
            try:
                result = callee.fn(*args, **kwargs)
            except Stop as stop:
                stop.line = stop.line or line
                raise
            return small(result, line)
        if isinstance(callee, type) and callee in TYPES:
            if issubclass(callee, BaseException):
                _scalar_args(list(args) + list(kwargs.values()), line)
            result = callee(*args, **kwargs)
            if callee is dict:  # dict(a=[1]) would put a container inside one
                flat(result.values(), line)
            return small(result, line)
        raise Refused(f"calls {callee!r}, which is not a function the sandbox offers", line)

    def run(self, fn: Function, args: tuple, kwargs: dict):
        if self.calls >= MAX_CALLS:
            raise Refused(f"calls source functions more than {MAX_CALLS} deep (a recursion?)", self.line)
        frame = self.bind(fn, args, kwargs)
        self.calls += 1
        try:
            signal = self.block(fn.node.body, frame)
        except RecursionError:
            raise Refused("nests too deeply for the sandbox", self.line) from None
        finally:
            self.calls -= 1
        return signal.value if isinstance(signal, _Return) else None

    def bind(self, fn: Function, args: tuple, kwargs: dict) -> dict:
        """The parameters as Python binds them (a container default is copied: no state across calls)."""
        a = fn.node.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        by_keyword = [p.arg for p in a.args] + [p.arg for p in a.kwonlyargs]
        frame: dict = {}
        if len(args) > len(positional) and a.vararg is None:
            raise TypeError(f"{fn.name}() takes {len(positional)} positional arguments but {len(args)} were given")
        frame.update(zip(positional, args))
        if a.vararg is not None:
            frame[a.vararg.arg] = tuple(args[len(positional):])
        rest = {}
        for key, value in kwargs.items():
            if key in frame and key in by_keyword:
                raise TypeError(f"{fn.name}() got multiple values for argument {key!r}")
            if key in by_keyword:
                frame[key] = value
            elif a.kwarg is not None:
                rest[key] = value
            else:
                raise TypeError(f"{fn.name}() got an unexpected keyword argument {key!r}")
        first_default = len(positional) - len(fn.defaults)
        for i, name in enumerate(positional):
            if name not in frame:
                if i < first_default:
                    raise TypeError(f"{fn.name}() missing required argument {name!r}")
                frame[name] = _copy(fn.defaults[i - first_default])
        for p in a.kwonlyargs:
            if p.arg not in frame:
                if p.arg not in fn.kw_defaults:
                    raise TypeError(f"{fn.name}() missing required keyword argument {p.arg!r}")
                frame[p.arg] = _copy(fn.kw_defaults[p.arg])
        if a.kwarg is not None:
            frame[a.kwarg.arg] = rest
        return frame

    def tick(self, node) -> None:
        self.steps += 1
        if self.steps > self.budget:
            where = self.loops[-1] if self.loops else getattr(node, "lineno", self.line)
            raise Refused(
                f"runs more than {self.budget:,} steps on one operation state (a loop that never ends?); "
                "the checker's sandbox gives every evaluation this budget",
                where,
            )

    # ---- statements ----

    def block(self, body: list, frame: dict):
        for node in body:
            signal = self.stmt(node, frame)
            if signal is not None:
                return signal
        return None

    def stmt(self, node, frame: dict):
        self.tick(node)
        self.line = node.lineno
        try:
            return self._STATEMENTS[type(node)](self, node, frame)
        except Exception as exc:
            if exc is not self.failed:  # the innermost statement names the line
                self.failed, self.fail_line = exc, node.lineno
            raise

    def _expr_stmt(self, node, frame):
        self.expr(node.value, frame)

    def _return(self, node, frame):
        return _Return(None if node.value is None else self.expr(node.value, frame))

    def _assign(self, node, frame):
        value = self.expr(node.value, frame)
        for target in node.targets:
            self.assign(target, value, frame)

    def _ann_assign(self, node, frame):
        if node.value is not None:
            self.assign(node.target, self.expr(node.value, frame), frame)

    def _aug_assign(self, node, frame):
        target = node.target
        if isinstance(target, ast.Name):
            current = self.name(target, frame)
            frame[target.id] = binary(node.op, current, self.expr(node.value, frame), node.lineno)
        else:  # a subscript (attributes are refused by the syntax check)
            obj, key = self.expr(target.value, frame), self.expr(target.slice, frame)
            current = obj[key]
            self.store_item(obj, key, binary(node.op, current, self.expr(node.value, frame), node.lineno), node.lineno)

    def assign(self, target, value, frame):
        if isinstance(target, ast.Name):
            frame[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.items_of(value, target.lineno)
            if len(items) != len(target.elts):
                raise ValueError(f"expected {len(target.elts)} values to unpack, got {len(items)}")
            for t, v in zip(target.elts, items):
                self.assign(t, v, frame)
        elif isinstance(target, ast.Subscript):
            self.store_item(self.expr(target.value, frame), self.expr(target.slice, frame), value, target.lineno)
        else:
            raise Refused(f"assigns to {type(target).__name__}, which the sandbox does not run", target.lineno)

    def store_item(self, obj, key, value, line):
        if type(obj) not in (list, dict):
            raise Refused(f"assigns an item of a {type(obj).__name__}; the sandbox assigns items of lists and dicts only", line)
        flat((value,), line)
        obj[key] = value
        small(obj, line)

    def items_of(self, value, line) -> list:
        """The items of an iterable value (at most MAX_ITEMS)."""
        if isinstance(value, (list, tuple, str, bytes, dict, set, frozenset, range)):
            small(value, line)
        elif not (isinstance(value, Supplied) and hasattr(type(value), "__getitem__")):  # e.g. a tensor
            raise TypeError(f"{type(value).__name__!r} object is not iterable")
        return small(list(value), line)

    def _if(self, node, frame):
        return self.block(node.body if self.expr(node.test, frame) else node.orelse, frame)

    def _while(self, node, frame):
        def rounds():
            while self.expr(node.test, frame):
                yield

        return self._loop(node, frame, rounds())

    def _for(self, node, frame):
        def rounds():
            for item in self.items_of(self.expr(node.iter, frame), node.lineno):
                self.assign(node.target, item, frame)
                yield

        return self._loop(node, frame, rounds())

    def _loop(self, node, frame, rounds):
        """The body once a round (`while` and `for` differ only in what starts a round): `break`
        leaves without the `else`, `return` returns, every finished round counts a step."""
        self.loops.append(node.lineno)
        try:
            for _ in rounds:
                signal = self.block(node.body, frame)
                if signal is BREAK:
                    return None
                if isinstance(signal, _Return):
                    return signal
                self.tick(node)
        finally:
            self.loops.pop()
        return self.block(node.orelse, frame)

    def _break(self, node, frame):
        return BREAK

    def _continue(self, node, frame):
        return CONTINUE

    def _pass(self, node, frame):
        return None

    def _raise(self, node, frame):
        if node.exc is None:
            if not self.handling:
                raise RuntimeError("No active exception to reraise")
            raise self.handling[-1]
        exc = self.expr(node.exc, frame)
        if isinstance(exc, type) and exc in EXCEPTIONS:
            exc = exc()
        if not isinstance(exc, EXCEPTIONS):
            raise TypeError("exceptions must derive from Exception")
        raise exc

    def _assert(self, node, frame):
        if not self.expr(node.test, frame):
            message = () if node.msg is None else (self.expr(node.msg, frame),)
            _scalar_args(message, node.lineno)
            raise AssertionError(*message)

    def _try(self, node, frame):
        """try / except / else / finally. Only user-level exceptions (Exception) are handled: a
        refusal, the adapter's stop at the collective, or a budget overrun always goes through."""
        signal, pending, completed = None, None, False
        try:
            signal = self.block(node.body, frame)
            completed = True
        except MemoryError:
            raise  # the machine's, not the predicate's: never handled by the predicate
        except RecursionError:
            raise Refused("nests too deeply for the sandbox", self.line) from None
        except Exception as exc:
            handler = self.handler_for(node.handlers, exc, frame)
            if handler is None:
                pending = exc
            else:
                try:
                    signal = self.handle(handler, exc, frame)
                except Exception as again:
                    pending = again
        if completed and signal is None and node.orelse:
            try:
                signal = self.block(node.orelse, frame)
            except Exception as exc:
                pending = exc
        if node.finalbody:
            final = self.block(node.finalbody, frame)
            if final is not None:  # as in Python: return/break in finally discards the exception
                return final
        if pending is not None:
            raise pending
        return signal

    def handler_for(self, handlers, exc, frame):
        for h in handlers:
            if h.type is None:
                return h
            kinds = self.expr(h.type, frame)
            allowed = kinds if isinstance(kinds, tuple) else (kinds,)
            if not all(isinstance(k, type) and k in EXCEPTIONS for k in allowed):
                raise Refused("catches something that is not one of the sandbox's exception classes", h.lineno)
            if isinstance(exc, kinds):
                return h
        return None

    def handle(self, handler, exc, frame):
        if handler.name:
            frame[handler.name] = exc
        self.handling.append(exc)
        try:
            return self.block(handler.body, frame)
        finally:
            self.handling.pop()
            if handler.name:
                frame.pop(handler.name, None)

    _STATEMENTS = {
        ast.Expr: _expr_stmt, ast.Return: _return, ast.Assign: _assign, ast.AnnAssign: _ann_assign,
        ast.AugAssign: _aug_assign, ast.If: _if, ast.While: _while, ast.For: _for, ast.Break: _break,
        ast.Continue: _continue, ast.Pass: _pass, ast.Raise: _raise, ast.Assert: _assert, ast.Try: _try,
    }

    # ---- expressions ----

    def expr(self, node, frame: dict):
        self.tick(node)
        return self._EXPRESSIONS[type(node)](self, node, frame)

    def _constant(self, node, frame):
        return node.value

    def name(self, node, frame):
        name = node.id
        if name in frame:
            return frame[name]
        if name in self.globals:
            return self.globals[name]
        if name in BUILTINS:
            return BUILTINS[name]
        raise NameError(f"name {name!r} is not defined", name=name)

    def _attribute(self, node, frame):
        return attribute(self.expr(node.value, frame), node.attr, node.lineno)

    def _subscript(self, node, frame):
        value = self.expr(node.value, frame)
        if isinstance(value, type):
            raise Refused("subscripts a type, which the sandbox does not run", node.lineno)
        return small(value[self.expr(node.slice, frame)], node.lineno)

    def _slice(self, node, frame):
        part = lambda n: None if n is None else self.expr(n, frame)  # noqa: E731
        return slice(part(node.lower), part(node.upper), part(node.step))

    def _binop(self, node, frame):
        return binary(node.op, self.expr(node.left, frame), self.expr(node.right, frame), node.lineno)

    def _unaryop(self, node, frame):
        return small(UNARY[type(node.op)](self.expr(node.operand, frame)), node.lineno)

    def _boolop(self, node, frame):
        is_and = isinstance(node.op, ast.And)
        value = None
        for v in node.values:
            value = self.expr(v, frame)
            if bool(value) != is_and:
                return value
        return value

    def _compare(self, node, frame):
        left = self.expr(node.left, frame)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node, frame)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _ifexp(self, node, frame):
        return self.expr(node.body if self.expr(node.test, frame) else node.orelse, frame)

    def _elements(self, nodes, frame, line) -> list:
        out = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                out.extend(self.items_of(self.expr(n.value, frame), line))
            else:
                out.append(self.expr(n, frame))
        return flat(small(out, line), line)

    def _list(self, node, frame):
        return self._elements(node.elts, frame, node.lineno)

    def _tuple(self, node, frame):
        return tuple(self._elements(node.elts, frame, node.lineno))

    def _set(self, node, frame):
        return set(self._elements(node.elts, frame, node.lineno))

    def _dict(self, node, frame):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**other}
                other = self.expr(v, frame)
                if type(other) is not dict:
                    raise TypeError("only a dict can be unpacked with **")
                out.update(other)
            else:
                out[self.expr(k, frame)] = self.expr(v, frame)
        flat(out.values(), node.lineno)
        return small(out, node.lineno)

    def _call(self, node, frame):
        callee = self.expr(node.func, frame)
        args = self._elements(node.args, frame, node.lineno) if any(isinstance(a, ast.Starred) for a in node.args) \
            else [self.expr(a, frame) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            value = self.expr(kw.value, frame)
            if kw.arg is None:  # f(**mapping)
                if type(value) is not dict or not all(isinstance(k, str) for k in value):
                    raise TypeError("argument after ** must be a dict with string keys")
                kwargs.update(value)
            else:
                kwargs[kw.arg] = value
        self.line = node.lineno
        return self.call(callee, tuple(args), kwargs, node.lineno)

    def _joined(self, node, frame):
        return small("".join(self.expr(v, frame) for v in node.values), node.lineno)

    def _formatted(self, node, frame):
        value = self.expr(node.value, frame)
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("s"):
            value = str(value)
        elif node.conversion == ord("a"):
            value = ascii(value)
        spec = "" if node.format_spec is None else self.expr(node.format_spec, frame)
        return formatted(value, spec, node.lineno)

    _EXPRESSIONS = {
        ast.Constant: _constant, ast.Name: name, ast.Attribute: _attribute, ast.Subscript: _subscript,
        ast.Slice: _slice, ast.BinOp: _binop, ast.UnaryOp: _unaryop, ast.BoolOp: _boolop, ast.Compare: _compare,
        ast.IfExp: _ifexp, ast.List: _list, ast.Tuple: _tuple, ast.Set: _set, ast.Dict: _dict, ast.Call: _call,
        ast.JoinedStr: _joined, ast.FormattedValue: _formatted,
    }


def _copy(value):
    return value.copy() if type(value) in (list, dict, set) else value
