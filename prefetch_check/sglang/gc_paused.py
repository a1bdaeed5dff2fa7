"""The cyclic garbage collector paused while a tree's prefetch path is computed.

Why: parsing some 300 files of sglang/srt builds a million syntax-tree objects, and each of
Python's full collections meanwhile walks all of them again: with the collector running,
parsing alone takes three times as long. Reading a tree makes no reference cycles worth
collecting before it ends (syntax trees hold no parent links); the collector's previous state
is restored on the way out, exceptions included.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
