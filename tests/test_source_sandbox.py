"""Escape attempts against the source-predicate sandbox: each is refused with the file and the
line, and nothing of it runs (every attempt would create a marker file; it never exists).

The attempts are the known ways out of a Python `exec` with restricted builtins: the real
builtins through `__self__`, every class through `__class__`/`__subclasses__`, a function's
`__globals__`, `__builtins__`, `getattr` with a dunder name (constant or built at run time),
str.format's attribute access, frames from generators, lambdas, comprehensions and tracebacks,
decorators, default arguments, nested functions, imports, the dangerous builtin names and
star imports. Also here: what must not hang or crash (loops, huge values, recursion, defaults
calling builtins).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.source.predicate import load_source_predicate, probe_views

MARK = "pwned"  # the file every escape attempt would create


def source(tmp_path: Path, body: str, header: str = "", signature: str = "self, operation", decorators: str = "") -> Path:
    """A file with class C whose can_terminate_prefetch has `body` (the marker path filled in)."""
    mark = tmp_path / MARK
    method = textwrap.indent(textwrap.dedent(body).strip().replace("MARK", str(mark)), " " * 8)
    decorated = textwrap.indent(textwrap.dedent(decorators).strip(), " " * 4) + "\n" if decorators else ""
    text = f"{header}\n\nclass C:\n{decorated}    def can_terminate_prefetch({signature}):\n{method}\n        return True\n"
    path = tmp_path / "cache.py"
    path.write_text(text)
    return path


def line_of(path: Path, snippet: str) -> int:
    """The last line holding `snippet` (the method comes after the file's header)."""
    found = [n for n, line in enumerate(path.read_text().splitlines(), start=1) if snippet in line]
    assert found, f"{snippet!r} not in {path}"
    return found[-1]


def refused(path: Path, snippet: str, *words: str) -> str:
    """Load the predicate, expect a refusal naming the file and the line of `snippet`, and no marker."""
    with pytest.raises(PredicateError) as err:
        _, predicate = load_source_predicate(f"{path}:C.can_terminate_prefetch")
        for view in probe_views():  # had the load let it through, the evaluations must refuse it
            predicate(view)
    text = str(err.value)
    assert f"{path}, line {line_of(path, snippet)}:" in text, text
    for w in words:
        assert w in text, text
    assert not (path.parent / MARK).exists(), "the escape attempt ran"
    return text


# name -> (method body, text of the line the refusal must name, words the message must hold)
ESCAPES = {
    "builtins via __self__": ("len.__self__.__import__('os').system('touch MARK')", "len.__self__", "__"),
    "__class__ and __subclasses__": (
        "k = ().__class__.__base__.__subclasses__()\nk[-1](['touch', 'MARK'])", "().__class__", "__"),
    "a method's __globals__": ("self.is_prefetch_timeout.__globals__['os'].system('touch MARK')", "__globals__", "__globals__"),
    "a method's __closure__": ("c = self.is_prefetch_timeout.__closure__[0]", "__closure__", "__closure__"),
    "__builtins__": ("__builtins__['open']('MARK', 'w')", "__builtins__", "__builtins__"),
    "getattr with a dunder name": ("getattr(len, '__self__').__import__('os').system('touch MARK')", "getattr", "__"),
    "getattr with a dunder name built at run time": (
        "b = getattr(len, '_' + '_self__')\ngetattr(b, '_' + '_import__')('os').system('touch MARK')", "b = getattr",
        "__self__"),
    "hasattr with a dunder name": ("h = hasattr(self, '__dict__')", "hasattr", "__dict__"),
    "format-string attribute access": ("x = '{0.__class__.__init__.__globals__}'.format(self)", ".format(", ".format"),
    "format through getattr": ("x = getattr('{0.__class__}', 'format')(self)", "getattr(", ".format"),
    "a lambda": ("f = (lambda: open('MARK', 'w'))\nf()", "lambda", "a lambda"),
    "a generator's frame": ("g = (x for x in [1])\ng.gi_frame.f_back.f_globals['os'].system('touch MARK')",
                            "for x in", "a generator expression"),
    "a list comprehension": ("x = [open('MARK', 'w') for _ in [1]]", "for _ in", "a comprehension"),
    "a dict comprehension": ("x = {k: open('MARK', 'w') for k in [1]}", "for k in", "a comprehension"),
    "a traceback's frame": (
        "try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_globals['os'].system('touch MARK')",
        "e.__traceback__", "__traceback__"),
    "an exception's methods": (
        "try:\n    1 / 0\nexcept Exception as e:\n    t = e.with_traceback(None)", "e.with_traceback", ".with_traceback"),
    "a type's methods": ("t = str.maketrans('a', 'b')", "str.maketrans", ".maketrans"),
    "a nested function": ("def inner():\n    open('MARK', 'w')\ninner()", "def inner", "a nested function"),
    "a nested class": ("class D:\n    x = open('MARK', 'w')", "class D", "a class definition"),
    "an import": ("import os\nos.system('touch MARK')", "import os", "an import"),
    "a from-import": ("from os import system\nsystem('touch MARK')", "from os import", "an import"),
    "a star import in the body": ("from os import *\nsystem('touch MARK')", "from os import", "an import"),
    "exec": ("exec(\"open('MARK', 'w')\")", "exec(", "`exec`"),
    "eval": ("eval(\"open('MARK', 'w')\")", "eval(", "`eval`"),
    "open": ("open('MARK', 'w')", "open(", "`open`"),
    "compile": ("compile('1', 'x', 'eval')", "compile(", "`compile`"),
    "__import__": ("__import__('os').system('touch MARK')", "__import__", "__import__"),
    "type": ("t = type(self)", "type(", "`type`"),
    "globals": ("g = globals()['os']", "globals(", "`globals`"),
    "a global statement": ("global os\nos.system('touch MARK')", "global os", "a global statement"),
    "a with statement": ("with open('MARK', 'w'):\n    pass", "with open", "a with statement"),
    "an assignment expression": ("(x := open('MARK', 'w'))", ":=", ":="),
    "del": ("x = 1\ndel x", "del x", "del"),
    "swallowed by except Exception": (
        "try:\n    x = getattr(len, '_' + '_self__')\nexcept Exception:\n    pass", "x = getattr", "__self__"),
    "swallowed by a bare except": ("try:\n    x = '{0}'.format(1)\nexcept:\n    pass", ".format(", ".format"),
    "an attribute of a number": ("x = (1).real", "(1).real", ".real"),
}


@pytest.mark.parametrize("name", ESCAPES)
def test_escape_attempts_are_refused_and_nothing_runs(tmp_path, name):
    body, snippet, word = ESCAPES[name]
    refused(source(tmp_path, body, header="import os"), snippet, word)


def test_a_star_import_at_module_level_supplies_nothing(tmp_path):
    path = source(tmp_path, "system('touch MARK')", header="from os import *")
    refused(path, "system(", "uses the name `system`")


@pytest.mark.parametrize("decorator", ["@(lambda f: open('MARK', 'w') or f)", "@os.system('touch MARK')", "@functools.cache"])
def test_decorators_are_refused_never_run(tmp_path, decorator):
    path = source(tmp_path, "pass", header="import os, functools", decorators=decorator.replace("MARK", str(tmp_path / MARK)))
    refused(path, decorator[:8])


@pytest.mark.parametrize(
    "default, word",
    [("open('MARK', 'w')", "`open`"), ("().__class__", "__class__"), ("(lambda: 0)", "a lambda"),
     ("getattr(len, '_' + '_self__')", "__self__")],
)
def test_default_arguments_are_checked_like_the_body(tmp_path, default, word):
    path = source(tmp_path, "pass", signature=f"self, operation, extra={default.replace('MARK', str(tmp_path / MARK))}")
    refused(path, "def can_terminate_prefetch", word)


def test_an_annotation_is_never_evaluated_but_checked(tmp_path):
    path = source(tmp_path, "pass", signature="self, operation: __import__('os').system('touch MARK')")
    refused(path, "def can_terminate_prefetch", "__import__")


def test_a_helper_method_is_checked_like_the_predicate(tmp_path):
    path = tmp_path / "cache.py"
    path.write_text(textwrap.dedent(f"""
        class C:
            def _helper(self, operation):
                return ().__class__.__base__.__subclasses__()

            def can_terminate_prefetch(self, operation):
                return bool(self._helper(operation))
        """))
    refused(path, "().__class__", "__class__")


# ---- nothing hangs, nothing crashes ----


@pytest.mark.parametrize(
    "body, snippet, word",
    [
        ("while True:\n    pass", "while True", "steps"),
        ("n = 0\nwhile n >= 0:\n    n += 1", "while n", "steps"),
        ("for i in range(10 ** 12):\n    pass", "range(", "items"),
        ("x = 2 ** 10 ** 9", "2 **", "bits"),
        ("x = 1 << 10 ** 9", "1 <<", "bits"),
        ("x = 'a' * 10 ** 10", "'a' *", "size limits"),
        ("x = [0] * 10 ** 10", "[0] *", "size limits"),
        ("s = 'ab'\nfor i in range(64):\n    s = s + s", "s = s + s", "characters"),
        ("x = [0]\nfor i in range(64):\n    x = [x, x]", "x = [x, x]", "inside another"),
        ("x = f'{1:>999999999}'", "f'{1", "width"),
        ("x = '%999999999d' % 1", "'%9", "%-formatting"),
        ("x = round(10 ** 30, -10 ** 9)", "round(", "digits"),
    ],
)
def test_what_would_hang_or_fill_memory_is_refused(tmp_path, body, snippet, word):
    refused(source(tmp_path, body), snippet, word)


def test_recursion_is_refused(tmp_path):
    path = tmp_path / "cache.py"
    path.write_text(textwrap.dedent("""
        class C:
            def _again(self, operation):
                return self._again(operation)  # for ever

            def can_terminate_prefetch(self, operation):
                return self._again(operation)
        """))
    refused(path, "# for ever", "deep")


def test_deeply_nested_source_is_refused(tmp_path):
    path = source(tmp_path, "x = " + "-" * 5000 + "1")
    with pytest.raises(PredicateError) as err:
        load_source_predicate(f"{path}:C.can_terminate_prefetch")
    assert str(path) in str(err.value)


def test_a_default_argument_may_call_a_builtin(tmp_path):
    path = source(tmp_path, "return len(operation.hash_value) >= limit", signature="self, operation, limit=max(1, 2)")
    _, predicate = load_source_predicate(f"{path}:C.can_terminate_prefetch")
    answers = {len(v.hash_value): predicate(v) for v in probe_views()}
    assert answers == {0: False, 1: False, 2: True}


def test_loops_within_the_budget_and_small_values_work(tmp_path):
    path = source(tmp_path, """
        counted = 0
        seen = []
        for h in operation.hash_value:
            seen.append(h)
            counted += 1
        while counted > 100:
            counted -= 1
        logger.debug(f"{counted} pages: {seen!r:>20}")
        done = {"pages": counted}.get("pages", 0) > 0 and operation.completed_tokens == counted * self.page_size
        return done
        """.replace("        return True", ""))
    _, predicate = load_source_predicate(f"{path}:C.can_terminate_prefetch")
    for view in probe_views():
        expect = len(view.hash_value) > 0 and view.completed_tokens == len(view.hash_value) * view.page_size
        assert predicate(view) == expect, view


def test_cli_refuses_an_escape_with_exit_2_and_no_traceback(tmp_path):
    path = source(tmp_path, "len.__self__.__import__('os').system('touch MARK')")
    scenario = tmp_path / "s.toml"
    scenario.write_text("pages = 1\n")
    cmd = [sys.executable, "-c", "import sys; from prefetch_check.cli import main; sys.exit(main())",
           "run", str(scenario), "--predicate-source", f"{path}:C.can_terminate_prefetch", "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and f"{path}, line" in done.stderr
    assert not (tmp_path / MARK).exists()


def test_cli_default_argument_calling_a_builtin_is_no_traceback(tmp_path):
    path = source(tmp_path, "return len(operation.hash_value) > 0 and operation.completed_tokens == "
                            "len(operation.hash_value) * self.page_size", signature="self, operation, limit=max(1, 2)")
    scenario = tmp_path / "s.toml"
    scenario.write_text("pages = 1\n")
    cmd = [sys.executable, "-c", "import sys; from prefetch_check.cli import main; sys.exit(main())",
           "run", str(scenario), "--predicate-source", f"{path}:C.can_terminate_prefetch", "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "VERIFIED" in done.stdout
