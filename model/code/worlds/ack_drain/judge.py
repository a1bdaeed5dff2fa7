"""How an ack-drain run is judged: the prefetch path's properties (rt/verdicts.py), then what the
buffer_only world (buffer/judge.py), the retry world (retry_judge.py), the write path
(write_through/) and the client aborts (abort_judge.py) add at a run's end."""

from __future__ import annotations

from prefetch_check.model.code.rt import verdicts
from prefetch_check.model.code.rt.verdicts import Finding
from prefetch_check.model.code.worlds.ack_drain import abort_judge, occupancy, retry_judge, sidecars
from prefetch_check.model.code.worlds.ack_drain.buffer import backup_judge, judge as buffer_judge
from prefetch_check.model.code.worlds.ack_drain.write_through import judge as write_through_judge, round_views

PROPERTIES = verdicts.PROPERTIES + (buffer_judge.PROPERTY, retry_judge.PROPERTY)


def judge(run, terminal: bool) -> list[Finding]:
    found = verdicts.judge(run, terminal)
    return (found + buffer_judge.judge(run, terminal, found) + retry_judge.judge(run, terminal, found)
            + sidecars.judge(run, terminal, found) + occupancy.judge(run, terminal, found)
            + backup_judge.judge(run, terminal, found) + write_through_judge.judge(run, terminal, found)
            + round_views.judge(run, terminal) + abort_judge.judge(run, terminal, found))


def not_judged(config) -> dict[str, str]:
    """What the world's own properties cannot judge in `config` (the worlds they belong to are off)."""
    out = {}
    if config.host_memory_mode != "buffer_only" and not config.backup:  # the write path's device lock judges it too
        out[buffer_judge.PROPERTY] = "the anchor locks of host_memory_mode buffer_only: CodeConfig(host_memory_mode='buffer_only')"
    if not config.retries and not abort_judge.judges(config):
        out[retry_judge.PROPERTY] = retry_judge.NOT_RETRIES
    return out
