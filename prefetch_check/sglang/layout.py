"""Text fitted to a terminal's columns without breaking a name in the middle.

Why not rich's own wrapping: rich folds a word longer than its column anywhere, and when a table
is too wide it narrows the widest columns below their longest word. A property name
(`wait_complete_delivers`) broken over two lines reads as two words. Here a line breaks only at
a space, after a hyphen (`ack-alloc-` / `differs`: scenario names are hyphenated, property names
never are) or after a `/` of a path, and a table's widths are chosen so that no column is
narrower than its longest such piece; where that cannot fit, the caller stacks the cells instead. `unbroken` holds
words together (`VIOLATED, 33 steps`, `prefetch-check sglang`) with a no-break space and hyphen,
printed as a space and a hyphen.
"""

from __future__ import annotations

import re
import shlex
from typing import Optional

_BREAK = re.compile(r"(?:(?<=[A-Za-z]-)|(?<=/))(?=[A-Za-z0-9_.])")
NBSP, NBHY = "\u00a0", "\u2011"  # no-break space and hyphen: printed as " " and "-"


def unbroken(text: str) -> str:
    """`text` as one piece that never breaks over lines."""
    return text.replace(" ", NBSP).replace("-", NBHY)


def _words(line: str) -> list[str]:
    return [w for w in line.split(" ") if w]


def pieces(word: str) -> list[str]:
    """The parts a word may be broken into: after each hyphen that follows a letter, after a `/`."""
    return _BREAK.split(word)


def min_width(text: str) -> int:
    """The narrowest column `text` fits in unbroken: its longest piece."""
    return max((len(p) for line in text.splitlines() for word in _words(line) for p in pieces(word)), default=0)


def natural_width(text: str) -> int:
    """The width of `text` as written (its longest line)."""
    return max((len(line) for line in text.splitlines()), default=0)


def wrap(text: str, width: int, later: Optional[int] = None) -> list[str]:
    """`text` in lines of at most `width` columns (`later` for every line after the first; a piece
    longer than that stands alone), breaking at spaces and after hyphens only; its own line breaks
    are kept."""
    out: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in _words(paragraph):
            for i, part in enumerate(pieces(word)):
                joiner = "" if i else " "  # the pieces of one word join without a space
                limit = width if not out else (later or width)
                if not line:
                    line = part
                elif len(line) + len(joiner) + len(part) <= limit:
                    line += joiner + part
                else:
                    out.append(line)
                    line = part
        out.append(line)
    return [line.replace(NBSP, " ").replace(NBHY, "-") for line in out]


def wrap_hanging(text: str, width: int, indent: int) -> list[str]:
    """`text` wrapped at `width`, its continuation lines indented by `indent` spaces."""
    first, *rest = wrap(text, width, width - indent)
    return [first] + [" " * indent + line for line in rest]


def fit(natural: list[int], minimum: list[int], available: int, last: tuple[int, ...] = ()) -> Optional[list[int]]:
    """Column widths that add up to at most `available`: the natural widths, the widest narrowed
    first (one column at a time, the leftmost of equals; the columns in `last` only once no other
    can give), none below its minimum; None where even the minimums do not fit."""
    widths = [max(n, m) for n, m in zip(natural, minimum)]
    if sum(minimum) > available:
        return None
    while sum(widths) > available:
        room = [i for i, (w, m) in enumerate(zip(widths, minimum)) if w > m]
        room = [i for i in room if i not in last] or room
        index = max(room, key=lambda i: (widths[i], -i))
        widths[index] -= 1
    return widths


def command_lines(command: str, width: int, prefix: str = "", indent: int = 6) -> list[str]:
    """A shell command, after `prefix` on its first line, in lines of at most `width` columns that
    paste back as the same command: each line but the last ends in ` \\`, an option stays with its
    value, and an argument too long for a line is split after a `/` by a backslash-newline (the
    shell joins the two halves, so the rest of it starts at the left margin)."""
    groups: list[str] = []
    for word in shlex.split(command):
        if groups and groups[-1].startswith("--") and " " not in groups[-1] and not word.startswith("--"):
            groups[-1] += " " + shlex.quote(word)
        else:
            groups.append(shlex.quote(word))
    lines: list[str] = []
    line, empty = prefix, True
    for group in groups:
        if len(line) + (0 if empty else 1) + len(group) + 2 <= width:
            line += group if empty else " " + group
        elif empty:
            line += group
        else:
            lines.append(line + " \\")
            line = " " * indent + group
        empty = False
        if len(line) + 2 > width and "'" not in group:
            *done, line = _split_long(line, width)
            lines += done
    return lines + [line]


def _split_long(line: str, width: int) -> list[str]:
    """A line too long for `width` cut after a `/` (or at the margin, where there is none) with a
    backslash-newline: the shell joins the halves again."""
    out = []
    while len(line) + 2 > width:
        cut = line.rfind("/", 0, width - 1) + 1
        cut = cut if cut > len(line) - len(line.lstrip()) + 1 else width - 1
        out.append(line[:cut] + "\\")
        line = line[cut:]
    return out + [line]
