"""Bad input never hurts: files that are not regular files, deep nesting, values that were
accepted and should not be, expectations nobody judges, report paths that cannot be written.
Each is one clear paragraph (file, line, key where there is one) and exit status 2, before
any search runs."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run
from prefetch_check.scenario import InputError, load_scenario

SEED = 'name = "seed"\npages = 1\n'
CLI = [sys.executable, "-c", "import sys; from prefetch_check.cli import main; sys.exit(main())"]
SUBPROCESS_MEMORY = 2 * 1024**3  # address space of the CLI subprocesses: what eats memory fails early


def run_subprocess(*argv, cwd=None) -> subprocess.CompletedProcess:
    """The CLI in a subprocess (what could hang is cut by the timeout, what could eat memory by the cap)."""

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (SUBPROCESS_MEMORY, SUBPROCESS_MEMORY))

    return subprocess.run(CLI + [str(a) for a in argv], capture_output=True, text=True, timeout=60, cwd=cwd,
                          preexec_fn=cap)


def one_paragraph(err: str, *needles: str) -> None:
    assert err.startswith("prefetch-check: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


# ---- only regular files are read ----


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")

    def make(path: Path) -> Path:
        os.mkfifo(path)
        return path

    return make


def test_a_fifo_named_toml_in_a_scenario_folder_is_refused(tmp_path, fifo):
    (tmp_path / "a.toml").write_text(SEED)
    fifo(tmp_path / "x.toml")
    done = run_subprocess("run", tmp_path, "-q")
    assert done.returncode == 2
    one_paragraph(done.stderr, "x.toml", "FIFO", "regular file")


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "folder"])
def test_replay_reads_a_schedule_only_from_a_regular_file(tmp_path, fifo, target):
    (tmp_path / "a.toml").write_text(SEED)
    path = {"fifo": lambda: fifo(tmp_path / "s"), "/dev/zero": lambda: Path("/dev/zero"), "folder": lambda: tmp_path}[target]()
    if not path.exists():
        pytest.skip(f"no {path} here")
    done = run_subprocess("replay", tmp_path / "a.toml", f"@{path}")
    assert done.returncode == 2
    one_paragraph(done.stderr, str(path), "not a regular file")


def test_a_predicate_source_that_is_a_fifo_is_refused(tmp_path, fifo):
    (tmp_path / "a.toml").write_text(SEED)
    fifo(tmp_path / "cache.py")
    done = run_subprocess("run", tmp_path / "a.toml", "--predicate-source", f"{tmp_path / 'cache.py'}:C.f", "-q")
    assert done.returncode == 2
    one_paragraph(done.stderr, "cache.py", "FIFO")


def test_an_oversized_scenario_file_is_refused(tmp_path, capsys):
    (tmp_path / "big.toml").write_text("# " + "x" * (2 * 1024 * 1024) + "\npages = 1\n")
    code, _, err = run(capsys, "run", tmp_path / "big.toml", "-q")
    assert code == 2
    one_paragraph(err, "big.toml", "larger than")


# ---- deep nesting ----


@pytest.mark.parametrize("value", ["[" * 5000 + "]" * 5000, "{ a = " * 5000 + "1" + " }" * 5000])
def test_deeply_nested_toml_names_the_file(tmp_path, capsys, value):
    (tmp_path / "deep.toml").write_text(f"hits = {value}\n")
    code, _, err = run(capsys, "run", tmp_path / "deep.toml", "-q")
    assert code == 2
    one_paragraph(err, "deep.toml", "nested too deeply")


# ---- accepted when they should not be ----


def test_more_request_tables_than_requests_allows_are_refused_at_the_first_too_many(tmp_path, capsys):
    text = "".join(f"[[request]]\npages = 64\n" for _ in range(24))
    (tmp_path / "many.toml").write_text(text)
    code, _, err = run(capsys, "run", tmp_path / "many.toml", "-q")
    assert code == 2
    one_paragraph(err, "many.toml, line 17:", "24 [[request]] tables; at most 8")  # the 9th table starts on line 17


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("-1.5", "-1.5"), ("0.0", "0.0")])
def test_time_limit_must_be_finite_and_positive(tmp_path, capsys, value, shown):
    (tmp_path / "t.toml").write_text(f"pages = 1\n\n[limits]\ntime_limit = {value}\n")
    code, _, err = run(capsys, "run", tmp_path / "t.toml", "-q")
    assert code == 2
    one_paragraph(err, "t.toml, line 4:", "time_limit must be a finite number of seconds > 0", f"got {shown}")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_the_time_limit_flag_must_be_finite_and_positive(tmp_path, capsys, value):
    (tmp_path / "t.toml").write_text(SEED)
    code, _, err = run(capsys, "run", tmp_path / "t.toml", "-q", f"--time-limit={value}")
    assert code == 2 and "--time-limit" in err


def test_max_memory_in_limits_is_checked(tmp_path, capsys):
    (tmp_path / "m.toml").write_text("pages = 1\n[limits.buggy]\nmax_memory = 0\n")
    code, _, err = run(capsys, "run", tmp_path / "m.toml", "-q")
    assert code == 2
    one_paragraph(err, "m.toml, line 3:", "max_memory must be an integer >= 1 (MB)")


# ---- expectations nobody judges ----

EXPECT_OTHER = 'pages = 1\n\n[expect."test_bad_input:patient"]\nverifies = "all"\n'


def patient(op):  # a predicate the scenarios below name in [expect."..."]
    return len(op.hash_value) > 0 and op.completed_tokens == len(op.hash_value) * op.page_size


def test_an_expectation_for_a_predicate_not_in_the_run_is_a_warning(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(EXPECT_OTHER)
    (tmp_path / "b.toml").write_text('name = "b"\npages = 1\n[expect.fixed]\nverifies = "all"\n')
    code, out, err = run(capsys, "run", tmp_path, "-q")
    assert code == 0
    assert "warning:" in err and 'a.toml: [expect."test_bad_input:patient"] is not judged' in err
    assert "--predicate test_bad_input:patient" in err
    assert "Expectations: 7 hold, 0 fail." in out  # b's expectations are judged


def test_nothing_judged_at_all_is_an_error(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(EXPECT_OTHER)
    code, out, err = run(capsys, "run", tmp_path / "a.toml", "-q")
    assert code == 2 and out == ""
    one_paragraph(err, "nothing would be judged", "test_bad_input:patient", "--predicate test_bad_input:patient")


def test_choosing_the_predicates_judges_only_theirs_without_a_word(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(EXPECT_OTHER)
    code, out, err = run(capsys, "run", tmp_path / "a.toml", "-q", "--predicate", "test_bad_input:patient")
    assert code == 0 and "expect" not in err and "Expectations: 7 hold, 0 fail." in out
    code, out, err = run(capsys, "run", tmp_path / "a.toml", "-q", "--predicate", "fixed")
    assert code == 0 and "expect" not in err and "nothing judged" in out


# ---- report paths are checked before any search ----


def unwritable_place(tmp_path: Path) -> Path:
    """A path in a place nobody may write, or skip."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "r.json"
    if Path("/sys").is_dir():  # root may write anywhere but into sysfs
        return Path("/sys/prefetch-check-report.json")
    pytest.skip("no place that even root cannot write")


@pytest.mark.parametrize("flag", ["--json", "--junit", "--markdown"])
@pytest.mark.parametrize("where", ["folder", "read-only", "full device"])
def test_report_paths_that_cannot_be_written_are_refused_before_searching(tmp_path, capsys, flag, where):
    (tmp_path / "a.toml").write_text(SEED)
    path = {"folder": lambda: tmp_path, "read-only": lambda: unwritable_place(tmp_path),
            "full device": lambda: Path("/dev/full")}[where]()
    if where == "full device" and not path.exists():
        pytest.skip("no /dev/full here")
    code, out, err = run(capsys, "run", tmp_path / "a.toml", flag, path)  # not quiet: a search would show
    assert code == 2 and out == ""
    one_paragraph(err, flag, str(path))
    assert "states" not in err  # no search ran


def test_a_report_path_check_leaves_nothing_behind(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(SEED)
    keep = tmp_path / "summary.md"
    keep.write_text("earlier step\n")
    code, _, _ = run(capsys, "run", tmp_path / "a.toml", "-q", "--markdown", keep, "--json", tmp_path / "r.json",
                     "--predicate", "nonexistent.module:fn")
    assert code == 2  # the bad predicate stops the run after the paths were checked
    assert keep.read_text() == "earlier step\n" and not (tmp_path / "r.json").exists()


# ---- the error locator ----


def test_an_error_is_placed_on_its_line_not_on_the_same_text_in_a_string(tmp_path):
    text = 'description = """\nranks = 2\npages = 1\n"""\nranks = 0\n'
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path / "s.toml")
    assert "s.toml, line 5: ranks must be" in str(err.value)


@pytest.mark.parametrize(
    "keypath, line",
    [
        (("ranks",), 6),
        (("request", 0, "hits", "1"), 9),
        (("request", 1, "failing", "1"), 12),
        (("request", 1, "hits"), 10),  # not written: its table
        (("expect", "pkg.mod:fn", "violates"), 16),
        (("expect", "pkg.mod:fn", "why", "all"), 15),
        (("matrix", "ranks"), 18),
        (("limits", "buggy", "max_states"), 20),
        (("nothing",), None),
    ],
)
def test_the_locator_follows_toml(keypath, line):
    text = (
        "description = '''\n"  # 1
        "ranks = 2  # not this one\n"  # 2
        "'''\n"  # 3
        'name = "a \\" ranks = 3"\n'  # 4
        "# ranks = 4\n"  # 5
        "ranks = 0\n"  # 6
        "[[request]]\n"  # 7
        "pages = 1\n"  # 8
        'hits = { 0 = 1, "1" = 0 }\n'  # 9
        "[[request]] # q1\n"  # 10
        "pages = 2\n"  # 11
        "failing = { 1 = [0,\n"  # 12
        "  1] }\n"  # 13
        '[expect."pkg.mod:fn"]\n'  # 14
        "why.all = 'a \"b\" c'\n"  # 15
        'violates = ["x", """y"""]\n'  # 16
        "[matrix]\n"  # 17
        "ranks = [1, 2]\n"  # 18
        "[limits.buggy]\n"  # 19
        "max_states = 1_000\n"  # 20
    )
    import tomllib

    from prefetch_check.scenario.positions import locate

    tomllib.loads(text)  # the text is valid TOML
    assert locate(text, keypath) == line


# ---- `unreached`: actions a scenario is not meant to reach ----


@pytest.mark.parametrize("text, line, words", [
    ('pages = 1\nunreached = ["S.insrt"]\n', 2, ["unreached: unknown action 'S.insrt'", "did you mean 'S.insert'?"]),
    ('pages = 1\nunreached = "S.insert"\n', 2, ["unreached must be a list of action names"]),
    ('pages = 1\nunreached = [1]\n', 2, ["unreached must be a list of action names (strings)"]),
    ('pages = 1\n[unreached]\n"ranks=1" = ["S.insert"]\n', 3, ["this scenario has no [matrix]"]),
    ('pages = 1\n[matrix]\nranks = [1, 2]\n[unreached]\n"ranks=3" = ["S.insert"]\n', 5,
     ["ranks=3 is not a value of the matrix (it sweeps ranks over 1, 2)"]),
    ('pages = 1\n[matrix]\nranks = [1, 2]\n[unreached]\n"rank=1" = ["S.insert"]\n', 5,
     ["'rank' is not swept by this scenario's [matrix]", "did you mean 'ranks'?"]),
    ('pages = 1\n[matrix]\nranks = [1, 2]\n[unreached]\n"ranks=1" = ["Y.take"]\n', 5,
     ['unreached."ranks=1": unknown action \'Y.take\'']),
])
def test_an_unreached_key_that_cannot_be_used_names_file_line_and_key(tmp_path, capsys, text, line, words):
    (tmp_path / "u.toml").write_text(text)
    code, _, err = run(capsys, "run", tmp_path / "u.toml", "-q")
    assert code == 2
    one_paragraph(err, f"u.toml, line {line}:", *words)


def test_unreached_names_are_the_scenario_protocols_actions(tmp_path, capsys):
    """S.ready is an ack-drain step; predicate-poll has none of that name."""
    (tmp_path / "poll.toml").write_text('pages = 1\nunreached = ["Y.take"]\n')
    (tmp_path / "ack.toml").write_text('protocol = "ack-drain"\npages = 1\nunreached = ["Y.take"]\n')
    assert load_scenario(tmp_path / "ack.toml").cases[0].unreached == ("Y.take",)
    code, _, err = run(capsys, "run", tmp_path / "poll.toml", "-q")
    assert code == 2
    one_paragraph(err, "poll.toml, line 2:", "unknown action 'Y.take'")
