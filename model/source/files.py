"""Reading a file a user named: only a regular file, and never more than a cap.

A FIFO would block the read until someone writes to it, `/dev/zero` would be read until
memory runs out, a folder cannot be read at all: each is refused with what it is. The
file is opened without blocking and checked on the open descriptor, so what is checked
is what is read.
"""

from __future__ import annotations

import os
import stat


class FileProblem(ValueError):
    """Why a file cannot be read (the text follows the path: "`x.toml`: <text>")."""


KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_mode(mode: int) -> str:
    return next((word for test, word in KINDS if test(mode)), "not a regular file")


def read_regular_file(path, limit: int, what: str) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; FileProblem otherwise.

    `what` names the file's role for the message, e.g. "a scenario file".
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise FileProblem("no such file") from None
    except OSError as exc:
        raise FileProblem(f"cannot open it: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileProblem(f"is {describe_mode(mode)}, not a regular file; {what} is read only from a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise FileProblem(f"is larger than {_size(limit)}, too large for {what}")
        return b"".join(chunks)
    except OSError as exc:
        raise FileProblem(f"cannot read it: {exc.strerror}") from None
    finally:
        os.close(fd)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n // 1024} KB"
