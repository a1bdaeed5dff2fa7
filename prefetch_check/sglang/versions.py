"""Release versions as the package index spells them (`0.5.15.post1`, `0.5.0rc2`), ordered and compared.

Pre-releases (`rcN`, `aN`, `bN`, `.devN`) order before their release, as pip orders them; a range
holds them only when asked (pip's `--pre`), a single pre-release SPEC always.
"""

from __future__ import annotations

import re
from typing import Optional

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")
_STAGES = {"a": 1, "b": 2, "rc": 3}
_FINAL = 4  # after every pre-release stage
_NO_DEV = 1 << 30  # a version without .devN orders after its .dev releases

Key = tuple[int, int, int, int, int, int, int]


def version_key(text: str) -> Optional[Key]:
    """(major, minor, patch, stage, stage number, post, dev) or None for a form the checker does not
    order. `stage` is 0 for a bare .devN release, 1-3 for a/b/rc, 4 for a release; post and dev are -1
    where absent, except a release's dev is the largest (x.devN comes before x)."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    major, minor, patch, stage, number, post, dev = m.groups()
    if stage is None:
        stage_key, number_key = (0, 0) if dev is not None and post is None else (_FINAL, 0)
    else:
        stage_key, number_key = _STAGES[stage], int(number)
    return (int(major), int(minor), int(patch), stage_key, number_key, int(post) if post is not None else -1,
            int(dev) if dev is not None else _NO_DEV)


def is_version(text: str) -> bool:
    return version_key(text) is not None


def is_prerelease(text: str) -> bool:
    """rc, alpha, beta or dev: what pip leaves out of a range without --pre."""
    key = version_key(text)
    return key is not None and (key[3] != _FINAL or key[6] != _NO_DEV)


def sort_versions(versions) -> list[str]:
    """Oldest first; forms without a key are dropped."""
    return sorted((v for v in versions if is_version(v)), key=version_key)


def in_range(version: str, low: str, high: str, pre: bool = False) -> bool:
    """low <= version <= high, post releases of `high` included (0.5.1..0.5.22 holds 0.5.22.post1);
    pre-releases only with `pre` (pip's --pre), or where a bound is one itself (as pip does)."""
    key = version_key(version)
    lo, hi = version_key(low), version_key(high)
    if key is None or lo is None or hi is None:
        return False
    if is_prerelease(version) and not (pre or is_prerelease(low) or is_prerelease(high)):
        return False
    if not lo <= key:
        return False
    if hi[3:] == (_FINAL, 0, -1, _NO_DEV):  # a plain release as the upper bound: its post releases too
        return key[:3] <= hi[:3]
    return key <= hi
