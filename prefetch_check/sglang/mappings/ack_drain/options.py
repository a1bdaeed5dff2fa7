"""Which ack-drain options a release's own source settles (SGLang 0.5.19 and later).

`release_options(shape)` reads a `Shape` (shape.py) and gives the options of
`AckConfig` (config.py) that model the release's steps, each with the detection that settled
it. Where the source shows something the protocol cannot represent, the answer is "not
modelled: <what>" and no options: a verdict on steps the release does not have would hide
the bugs it does have.

| option | settled by | values over the releases (research notes RELEASES.md) |
|---|---|---|
| cache | the judged class, the check's collective, the tail's release | unified: UnifiedRadixCache, vote only under timeout, tail through host_mem_release_queue (what the factory builds from 0.5.19); hiradix: HiRadixCache, PP rank 0's MAX vote at every check, tail freed directly (0.5.19-0.5.20, only when asked for) |
| ack_match | the ACK drain's test | rid (0.5.19; HiRadixCache 0.5.20); operation (UnifiedRadixCache 0.5.20+) |
| deadline | the timeout test of the predicate | issue (linear, capped or fixed timeout: 0.5.19-0.5.22); admission (0.5.23) |
| exceptions | `except Exception` in the storage threads | end_thread (0.5.19-0.5.21); caught (0.5.22+) |

The other steps are the protocol's own and must be the release's too: host slots reserved
at the hit drain, prefetch_hit_queue, no revoke queue, the IO thread keeps sending an ACK
per batch, the raw threshold tested in the drain, pages counted by the ACKs, no barrier on
abort. The timeout's length is left out (the clock may fire at any time once it runs).
"""

from __future__ import annotations

from prefetch_check.sglang.release_options import Reading, ReleaseOptions
from prefetch_check.sglang.shape import Shape

PROTOCOL = "ack-drain"

# the class judged -> (cache option, the check's collective it has, the tail's release it has)
CACHES = {
    "UnifiedRadixCache": ("unified", "vote-only-under-timeout", "drain-release-queue"),
    "HiRadixCache": ("hiradix", "max-vote-pp0", "drain-direct"),
}
ACK_MATCH = {"rid": "rid", "operation": "operation"}
DEADLINE = {"fixed": "issue", "linear": "issue", "linear-capped": "issue", "admission-deadline": "admission"}
EXCEPTIONS = {"queue-empty-only": "end_thread", "caught": "caught"}
# the steps every release of this protocol has, as the model has them
FIXED_STEPS = {
    "acks": {"ack+sync-thread": "PrefetchAck and the sync thread's MIN per progress ACK"},
    "host_alloc": {"hit": "host slots reserved when the drain pops the hit count"},
    "hit_queue": {"yes": "prefetch_hit_queue from the prefetch thread to the scheduler"},
    "revoke_queue": {"no": "no revoke queue: the drain revokes"},
    "io_short_batch": {"keep-acking": "the IO thread stops reading but still sends an ACK per batch"},
    "threshold": {"drain-raw": "hits below the raw prefetch_threshold revoked in the drain"},
    "write_order": {"write-then-ack": "pages counted by what the ACKs carry, after the writes"},
    "abort_barrier": {"no": "release_aborted_request without a barrier"},
}
LEFT_OUT = (
    "the timeout's length (the clock may fire at any time once it runs)",
    "PP > 1, host_memory_mode buffer_only, sidecar pools and their pool_hits ACKs, PP tickets (0.5.21+), "
    "storage_prefetch_retries (0.5.20+), the cache's reset (flush_cache)",
)


def release_options(shape: Shape) -> ReleaseOptions:
    """The ack-drain options of this release shape, each with its evidence, or why there are none."""
    r = Reading(shape)
    r.unrecognised()
    for feature, allowed in FIXED_STEPS.items():
        r.require(feature, allowed, PROTOCOL)
    _cache(r)
    match = r.require("ack_match", {k: f"ack_match={v}" for k, v in ACK_MATCH.items()}, PROTOCOL)
    if match:
        r.set("ack_match", ACK_MATCH[match], ("ack_match",), getattr(shape.ack_match, "note", ""))
    timeout = r.require("timeout", {k: f"deadline={v}" for k, v in DEADLINE.items()}, PROTOCOL)
    if timeout:
        r.set("deadline", DEADLINE[timeout], ("timeout",), shape.timeout.note)
    caught = r.require("storage_exceptions", {k: f"exceptions={v}" for k, v in EXCEPTIONS.items()}, PROTOCOL)
    if caught:
        r.set("exceptions", EXCEPTIONS[caught], ("storage_exceptions",), shape.storage_exceptions.note)
    r.left_out.extend(LEFT_OUT)
    return r.result(PROTOCOL)


def _cache(r: Reading) -> None:
    """cache: the class judged, confirmed by its check's collective and its tail release."""
    judged = r.value("judged_class")
    if judged not in CACHES:
        if judged is not None:
            r.problems.append(f"judged_class={judged}: the ack-drain protocol models UnifiedRadixCache or HiRadixCache")
        return
    option, collective, tail = CACHES[judged]
    ok = True
    for feature, expected in (("check_collective", collective), ("tail_release", tail)):
        value = r.value(feature)
        if value is not None and value != expected:
            r.problems.append(f"{feature}={value}: with {judged} (cache={option}) the ack-drain protocol has {expected}")
            ok = False
    if ok:
        built = r.value("cache_class")
        why = f"{judged}: {collective}, tail {tail}" + ("" if built == judged else f" (asked for; the factory builds {built})")
        r.set("cache", option, ("judged_class", "check_collective", "tail_release"), why)
