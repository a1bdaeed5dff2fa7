"""The server settings a case runs with that a release does not ship as its defaults.

Why: a maintainer reads "VIOLATED" as "my users hit this". Many findings come from cases run with
a setting an operator must choose: the `wait_complete` stop policy (never SGLang's default: `best_effort`
until 0.5.11, `timeout` from 0.5.12 on, upstream pull request #23309) or a `prefetch_threshold`
of 0 (set in `--hicache-storage-backend-extra-config`; the default is 256 tokens, at least one
page). The release table shows findings under the defaults first and labels the others with
the settings their case runs with (the finding may or may not need them: another case could show
it under the defaults; no shipped case does).

The model's own threshold of 1 token with pages of 1 token stands for "at least one page", the
regime of the default 256; only 0 (no threshold at all) is a different setting.
"""

from __future__ import annotations

from typing import Optional

from prefetch_check.sglang.versions import version_key

DEFAULT_THRESHOLD_TOKENS = 256
TIMEOUT_DEFAULT_SINCE = "0.5.12"  # the release the default stop policy became `timeout`


def default_policy(version: Optional[str]) -> Optional[str]:
    """The stop policy a release runs with when the operator sets none; None for a tree whose
    release is not known (a path, a commit)."""
    key = version_key(version) if version else None
    if key is None:
        return None
    return "timeout" if key >= version_key(TIMEOUT_DEFAULT_SINCE) else "best_effort"


def non_default_settings(config, version: Optional[str]) -> tuple[str, ...]:
    """What a case's configuration sets that the release (`version`, or None when unknown) does
    not have by default, each as `name=value (the default)`; empty when it runs as shipped."""
    out = []
    policy = getattr(config, "policy", None)
    default = default_policy(version)
    if policy == "wait_complete":
        out.append("policy=wait_complete (never the default: best_effort until 0.5.11, timeout since 0.5.12)")
    elif policy is not None and default is not None and policy != default:
        out.append(f"policy={policy} (this release's default: {default})")
    if getattr(config, "prefetch_threshold", None) == 0:
        out.append(f"prefetch_threshold=0 (default {DEFAULT_THRESHOLD_TOKENS} tokens, "
                   "set in --hicache-storage-backend-extra-config)")
    if getattr(config, "host_memory_mode", "cache") == "buffer_only":
        out.append("hicache_host_memory_mode=buffer_only (default: cache; --hicache-host-memory-mode)")
    return tuple(out)
