"""Whether a tree has a storage prefetch at all (SGLang 0.4.9.post2 and older have none).

Such a tree is not a protocol the model misreads but one with nothing to check: its row says
so plainly instead of listing the features the detector did not find.
"""

from __future__ import annotations

import ast
from typing import Mapping

# what every storage prefetch SGLang shipped defines: the cache's issue and the controller's thread
ENTRY_POINTS = ("prefetch_from_storage", "prefetch_thread_func")
NONE = (f"this release has no storage prefetch (none of its protocol files defines {' or '.join(ENTRY_POINTS)}): "
        "there is nothing to check")


def has_storage_prefetch(files: Mapping[str, str]) -> bool:
    """True where some protocol file defines one of the storage prefetch's entry points."""
    for text in files.values():
        if not any(name in text for name in ENTRY_POINTS):
            continue  # no definition of either without its name in the text: no parse needed
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return True  # not ours to judge here: the detector reports what it cannot read
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ENTRY_POINTS
               for n in ast.walk(tree)):
            return True
    return False
