"""`run` interrupted for real: SIGINT to the parent alone, or SIGTERM, while checks still run.

Every worker must end, the checks that finished are reported, and the exit status is 130
(SIGINT) or 143 (SIGTERM). The run is a real subprocess: a tiny scenario that finishes at
once and a big one (TP=8, 2 requests of 2 pages under the timeout policy), which runs for minutes, so
both workers are busy when the signal arrives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "import sys; from prefetch_check.cli import main; sys.exit(main())"]
WAIT_FOR_START = 300  # seconds to wait for the small checks to finish (a guard against hanging, not a timing)
EXIT_WITHIN = 5  # the requirement: the run is over this many seconds after the signal


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (from /proc, no psutil)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[0] != "Z"  # a zombie has ended; only its exit status is left


def start_run(tmp_path: Path, jobs: int) -> tuple[subprocess.Popen, Path]:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to find the worker processes")
    (tmp_path / "a.toml").write_text('name = "a-small"\npages = 1\n')
    (tmp_path / "b.toml").write_text('name = "b-big"\nranks = 8\nrequests = 2\npages = 2\npolicy = "timeout"\n')
    err = tmp_path / "stderr.txt"
    proc = subprocess.Popen(
        CLI + ["run", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"), "--jobs", str(jobs)],
        stdout=subprocess.PIPE, stderr=err.open("w"), text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background shell may ignore it
    )
    return proc, err


def wait_until_small_checks_finished(proc: subprocess.Popen, err: Path) -> None:
    deadline = time.monotonic() + WAIT_FOR_START
    while err.read_text().count("a-small") < 2:
        if proc.poll() is not None:
            pytest.fail(f"the run ended early ({proc.returncode}): {err.read_text()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the small checks did not finish")
        time.sleep(0.1)
    time.sleep(1.0)  # the big checks are now starting in both workers


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("jobs", [2, 1])
def test_a_signal_ends_every_worker_and_reports_what_finished(tmp_path, signum, status, jobs):
    proc, err = start_run(tmp_path, jobs)
    try:
        wait_until_small_checks_finished(proc, err)
        workers = children_of(proc.pid)
        if jobs > 1:
            assert len(workers) >= 2, "both workers should be running"
        os.kill(proc.pid, signum)  # the parent alone, as `kill -INT <pid>` or `timeout -s INT` do
        out, _ = proc.communicate(timeout=EXIT_WITHIN)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.read_text()
    assert proc.returncode == status, text
    assert "Traceback" not in text
    assert "interrupted" in text and "2 of 4 checks finished" in text
    assert "a-small" in out and "b-big" not in out  # the partial report: what finished, nothing else
    for _ in range(50):  # the kernel reaps them right after the parent is gone
        if not any(alive(w) for w in workers):
            break
        time.sleep(0.1)
    assert not [w for w in workers if alive(w)], "a worker outlived the run"
