"""The shape of a release's prefetch protocol, read from its own source with `ast`.

Why: the checker's protocols differ from release to release in more than the completion
predicate (where host memory is allocated and given back, what the IO thread does after a
short batch, how ACKs are matched, ...). A verdict built from one release's predicate on
another release's steps would hide bugs that shipped, so every step whose behaviour changed
upstream is read from the code itself, never guessed from the version number.

`detect_shape(files)` takes the protocol files of one SGLang tree as text, keyed by their
path below `sglang/srt/` (e.g. "mem_cache/hiradix_cache.py"), and returns a `Shape`: one
`Feature` per named step (shape.py), each with the evidence (file, line, what was seen). A
feature whose pattern is not found has `value=None` and says what was looked for;
`families.classify` then gives "unknown" rather than a family. Nothing is imported or
executed (the `ast` readers: source_ast.py).

Every value here is read from positive evidence (something present, at file:line). What a
release does NOT have (no hit queue, no ACKs, only queue.Empty caught, no page counter, no
abort barrier) is never read off a user's tree: that a piece is missing says nothing about
what a tree does elsewhere. Those values are recorded for the releases the model follows when
their fingerprints are built (release_record.py) and a tree gets them only where its whole
prefetch path is one such release's (followed.py, tree_shape.py).
"""

from __future__ import annotations

import ast
from dataclasses import fields
from typing import Mapping, Optional

from prefetch_check.sglang.locate import CACHE_FILES, CONTROLLER, REGISTRY, SCHEDULER
from prefetch_check.sglang.shape import Feature, Shape, unrecognised
from prefetch_check.sglang.source_ast import (SourceFile, attrs, call_name, calls, mentions, parse_file, policy_branch,
                                              reduce_ops)

# what a feature read only as positive evidence says when the evidence is not there
NOT_READ_AS_NO = ("; not seen, and an absence is not read as a value here (it is known only for the "
                  "releases the model follows: prefetch_check/sglang/release_record.py)")


# ---------------------------------------------------------------- the factory


def _factory_class(files: Mapping[str, str]) -> Feature:
    registry = parse_file(files, REGISTRY)
    if registry is not None and "default_radix_cache_factory" in registry.functions:
        fn = registry.functions["default_radix_cache_factory"]
        hi = calls(fn, "HiRadixCache")
        if hi:
            return Feature("HiRadixCache", (registry.ev(hi[0]),), "dense models; hybrid ones get UnifiedRadixCache")
        uni = (calls(fn, "_create_unified_radix_cache") or calls(fn, "create_unified_radix_cache")
               or calls(fn, "UnifiedRadixCache"))
        if uni:
            last = [s for s in fn.body if isinstance(s, ast.Return)]
            node = last[-1] if last else uni[-1]
            return Feature("UnifiedRadixCache", (registry.ev(node),), "no HiRadixCache(...) left in the factory")
        return unrecognised("default_radix_cache_factory builds neither HiRadixCache nor UnifiedRadixCache")
    scheduler = parse_file(files, SCHEDULER)
    if scheduler is not None:
        hi = calls(scheduler.module, "HiRadixCache")
        if hi:
            return Feature("HiRadixCache", (scheduler.ev(hi[0]),), "built by the scheduler (no registry.py)")
        return unrecognised("scheduler.py constructs no HiRadixCache and there is no registry.py factory")
    return unrecognised(f"neither {REGISTRY} (default_radix_cache_factory) nor {SCHEDULER} present")


# ---------------------------------------------------------------- per-feature detectors


class Reader:
    """The parsed files of one tree and the cache class being judged."""

    def __init__(self, files: Mapping[str, str], cls: str):
        self.cls = cls
        self.cache = parse_file(files, CACHE_FILES[cls])
        self.ctl = parse_file(files, CONTROLLER)
        self.methods = self.cache.methods(cls) if self.cache else {}
        self.ctl_methods = self.ctl.methods("HiCacheController") if self.ctl else {}

    def drains(self) -> list[ast.FunctionDef]:
        """The scheduler-side drain methods of the cache class (revokes, hits, ACKs, releases)."""
        names = ("drain_storage_control_queues", "_drain_storage_control_queues_impl", "check_revoked_prefetch")
        return [self.methods[n] for n in names if n in self.methods]

    def predicate_name(self) -> Optional[str]:
        check = self.methods.get("check_prefetch_progress")
        if check is None:
            return None
        for name in ("_can_terminate_prefetch", "can_terminate_prefetch"):
            if calls(check, name) and name in self.methods:
                return name
        return None


def _predicate(r: Reader) -> Feature:
    name = r.predicate_name()
    if name is None:
        return unrecognised(f"{r.cls}.check_prefetch_progress calling a can_terminate_prefetch method")
    fn = r.methods[name]
    return Feature(f"{r.cache.rel}:{r.cls}.{name}", (r.cache.ev(fn, f"def {name}"),))


def _host_alloc(r: Reader) -> Feature:
    issue = r.methods.get("prefetch_from_storage")
    if issue is None:
        return unrecognised(f"{r.cls}.prefetch_from_storage")
    at_issue = [c for c in calls(issue, "alloc") if mentions(c.func, "mem_pool_host")]
    if at_issue:
        return Feature("issue", (r.cache.ev(at_issue[0]),), "host slots reserved when the prefetch is issued")
    for fn in r.drains():
        at_hit = [c for c in calls(fn, "alloc") if mentions(c.func, "mem_pool_host")]
        at_hit = sorted(at_hit + calls(fn, "allocate_storage_hit"), key=lambda c: c.lineno)
        if at_hit and mentions(fn, "prefetch_hit_queue"):
            return Feature("hit", (r.cache.ev(at_hit[0]),), "host slots reserved in the drain, sized to the agreed hits")
    return unrecognised("mem_pool_host.alloc in prefetch_from_storage or in a drain of prefetch_hit_queue")


def _queue(r: Reader, queue: str) -> Feature:
    if r.ctl is None:
        return unrecognised(f"{CONTROLLER}")
    puts = [a for a in attrs(r.ctl.module, queue)]
    if puts:
        return Feature("yes", (r.ctl.ev(puts[0]),))
    return unrecognised(f"`{queue}` in {CONTROLLER}{NOT_READ_AS_NO}")


def _acks(r: Reader) -> Feature:
    if r.ctl is None:
        return unrecognised(f"{CONTROLLER}")
    ack = r.ctl.classes.get("PrefetchAck")
    sync = r.ctl_methods.get("prefetch_sync_thread_func")
    if ack is not None and sync is not None:
        return Feature("ack+sync-thread", (r.ctl.ev(ack, "class PrefetchAck"), r.ctl.ev(sync, "def prefetch_sync_thread_func")))
    if ack is None and sync is None:
        return unrecognised(f"PrefetchAck and prefetch_sync_thread_func in {CONTROLLER}{NOT_READ_AS_NO}")
    return unrecognised("PrefetchAck together with prefetch_sync_thread_func (only one of them found)")


def _check_collective(r: Reader) -> Feature:
    check = r.methods.get("check_prefetch_progress")
    name = r.predicate_name()
    if check is None or name is None:
        return unrecognised(f"{r.cls}.check_prefetch_progress and its predicate")
    pred = r.methods[name]
    in_check = [(op, n) for op, n in reduce_ops(check)]
    in_pred = [(op, n) for op, n in reduce_ops(pred)]
    pp_gate = [n for n in ast.walk(check) if isinstance(n, ast.Compare) and mentions(n.left, "pp_rank")]
    if in_check and in_check[0][0] == "MAX" and pp_gate:
        return Feature("max-vote-pp0", (r.cache.ev(pp_gate[0]), r.cache.ev(in_check[0][1])),
                       "PP rank 0 computes is_terminated() or the predicate; MAX over the ranks")
    if not in_check and in_pred and all(policy_branch(pred, n) == "timeout" for _, n in in_pred):
        op, node = in_pred[0]
        return Feature("vote-only-under-timeout", (r.cache.ev(node),),
                       f"{op} vote inside the timeout branch only; best_effort/wait_complete decide locally")
    pred_min = [n for op, n in in_pred if op == "MIN"]
    pred_max = [n for op, n in in_pred if op == "MAX"]
    if pred_max and mentions(pred, "is_terminated"):
        return Feature("max-not-can-terminate-terminated", (r.cache.ev(pred_max[0]),),
                       "MAX over [1 - can_terminate, terminated]")
    if pred_min and not pred_max:
        return Feature("min-can-terminate", (r.cache.ev(pred_min[0]),), "MIN of can_terminate")
    return unrecognised("a MIN/MAX collective in the check or its predicate of a known shape")


def _clamped(tree: SourceFile, cls: str) -> Optional[ast.AST]:
    """The `self.prefetch_threshold = max(..., page_size)` assignment of a class, if any."""
    node = tree.classes.get(cls)
    if node is None:
        return None
    for n in ast.walk(node):
        if (isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "prefetch_threshold" for t in n.targets)
                and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name) and n.value.func.id == "max"):
            return n
    return None


def _threshold_compares(fn: ast.AST) -> list[ast.Compare]:
    """`<hits> < self.prefetch_threshold` where <hits> names a hit count (storage_hit_count, hit_tokens)."""
    out = []
    for n in ast.walk(fn):
        if (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt)
                and isinstance(n.comparators[0], ast.Attribute) and n.comparators[0].attr == "prefetch_threshold"):
            left = n.left.attr if isinstance(n.left, ast.Attribute) else n.left.id if isinstance(n.left, ast.Name) else ""
            if "hit" in left:
                out.append(n)
    return sorted(out, key=lambda n: n.lineno)


def _threshold(r: Reader) -> Feature:
    thread = r.ctl_methods.get("prefetch_thread_func")
    if thread is not None:
        tests = _threshold_compares(thread)
        if tests:
            clamp = _clamped(r.ctl, "HiCacheController")
            ev = (r.ctl.ev(tests[0]),) + ((r.ctl.ev(clamp),) if clamp is not None else ())
            return Feature("prefetch-thread-clamped" if clamp is not None else "prefetch-thread-raw", ev,
                           "hits below the threshold are revoked by the prefetch thread")
    for fn in r.drains():
        tests = _threshold_compares(fn)
        if tests:
            clamp = _clamped(r.cache, r.cls)
            ev = (r.cache.ev(tests[0]),) + ((r.cache.ev(clamp),) if clamp is not None else ())
            return Feature("drain-clamped" if clamp is not None else "drain-raw", ev,
                           "hits below the threshold are revoked in the scheduler's drain")
    return unrecognised("`storage_hit_count < self.prefetch_threshold` in prefetch_thread_func or in a drain")


def _io_short_batch(r: Reader) -> Feature:
    transfer = r.ctl_methods.get("_page_transfer") or r.ctl_methods.get("generic_page_transfer")
    if transfer is None:
        return unrecognised("HiCacheController._page_transfer (or generic_page_transfer)")
    acks = calls(transfer, "PrefetchAck")
    if acks:
        return Feature("keep-acking", (r.ctl.ev(acks[0]),),
                       "after a short or terminated batch it stops reading but still emits one ACK per batch")
    marks = calls(transfer, "mark_terminate")
    if marks:
        return Feature("mark-terminate", (r.ctl.ev(marks[0]),), "a short batch marks the operation terminated")
    breaks = [n for n in ast.walk(transfer) if isinstance(n, ast.Break)]
    if breaks:
        return Feature("stop", (r.ctl.ev(breaks[0]),), "a short batch stops the transfer; nothing is marked")
    return unrecognised(f"a break, mark_terminate() or PrefetchAck(...) in {transfer.name}")


def _ack_match(r: Reader, acks: Feature) -> Feature:
    if not acks.recognised:
        return unrecognised(f"the ACK drain's test, with ACKs seen{NOT_READ_AS_NO}")
    for fn in r.drains():
        if not mentions(fn, "ack_prefetch_queue"):
            continue
        identity = [n for n in ast.walk(fn) if isinstance(n, ast.Compare) and any(isinstance(o, ast.Is) for o in n.ops)
                    and mentions(n, "operation")]
        if identity:
            return Feature("operation", (r.cache.ev(identity[0]),), "an ACK applies only to the very operation in ongoing_prefetch")
        by_rid = [n for n in ast.walk(fn) if isinstance(n, ast.Compare) and any(isinstance(o, ast.In) for o in n.ops)
                  and mentions(n, "request_id") and mentions(n, "ongoing_prefetch")]
        if by_rid:
            return Feature("rid", (r.cache.ev(by_rid[0]),), "an ACK applies when its request id is in ongoing_prefetch")
    return unrecognised("the ACK drain's test (`rid in ongoing_prefetch` or `info.operation is operation`)")


def _is_tail(node: ast.AST) -> bool:
    """`X.host_indices[X.completed_tokens:]`: the slots past what was loaded."""
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.upper is None
            and node.slice.lower is not None and mentions(node.slice.lower, "completed_tokens")
            and mentions(node.value, "host_indices"))


def _tail_slices(fn: ast.AST) -> list[ast.Call]:
    """free(...)/append_host_mem_release(...) calls on the tail, directly or through a local name."""
    names = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and _is_tail(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    out = []
    for call in calls(fn, "free") + calls(fn, "append_host_mem_release"):
        for arg in list(call.args) + [k.value for k in call.keywords]:
            if _is_tail(arg) or (isinstance(arg, ast.Name) and arg.id in names):
                out.append(call)
    return out


def _tail_release(r: Reader) -> Feature:
    io_names = ("_page_transfer", "prefetch_io_aux_func", "generic_page_transfer", "zerocopy_page_transfer")
    found: list[tuple[str, SourceFile, ast.Call]] = []
    for name in io_names:
        if name in r.ctl_methods:
            found += [("io-thread", r.ctl, c) for c in _tail_slices(r.ctl_methods[name])]
    if not found:
        for fn in r.drains():
            found += [("drain", r.cache, c) for c in _tail_slices(fn)]
    if not found:
        return unrecognised("a release of host_indices[completed_tokens:] in the IO thread or the ACK drain")
    whos = {w for w, _, _ in found}
    hows = {("direct" if call_name(c) == "free" else "release-queue") for _, _, c in found}
    if len(whos) != 1 or len(hows) != 1:
        return unrecognised("the tail [completed, L) released in one consistent way")
    value = f"{whos.pop()}-{hows.pop()}" + ("-twice" if len(found) > 1 else "")
    return Feature(value, tuple(t.ev(c) for _, t, c in found),
                   "released twice for one operation" if len(found) > 1 else "")




def _timeout(r: Reader) -> Feature:
    name = r.predicate_name()
    if name is None:
        return unrecognised("the completion predicate")
    pred = r.methods[name]
    deadline = calls(pred, "_prefetch_deadline_expired")
    if deadline:
        return Feature("admission-deadline", (r.cache.ev(deadline[0]),),
                       "clock starts at the first waiting check; budget from the requested tokens")
    linear = r.methods.get("_prefetch_timeout_check_linear_func")
    uses_linear = calls(pred, "_prefetch_timeout_check_linear_func") or attrs(pred, "is_prefetch_timeout")
    if linear is not None and uses_linear:
        caps = [c for c in calls(linear, "min") if mentions(c, "max")]
        if caps:
            return Feature("linear-capped", (r.cache.ev(caps[0]),), "min(max, base + per_ki_token * tokens / 1024)")
        return Feature("linear", (r.cache.ev(linear, "def _prefetch_timeout_check_linear_func"),),
                       "base + len(hash_value) * per_page, no cap")
    fixed = attrs(pred, "prefetch_timeout")
    if fixed:
        return Feature("fixed", (r.cache.ev(fixed[0]),), "now - start_time > a constant")
    return unrecognised("a timeout test in the predicate (fixed, linear function or admission deadline)")


def _storage_exceptions(r: Reader) -> Feature:
    names = ("prefetch_thread_func", "prefetch_io_aux_func", "_page_transfer")
    present = [r.ctl_methods[n] for n in names if n in r.ctl_methods]
    if not present:
        return unrecognised("the storage thread functions of HiCacheController")
    caught = []
    for fn in present:
        for n in ast.walk(fn):
            if isinstance(n, ast.ExceptHandler) and (n.type is None or mentions(n.type, "Exception")):
                caught.append(n)
    if caught:
        return Feature("caught", tuple(r.ctl.ev(n) for n in caught[:3]), "storage errors are caught in the thread")
    finals = [n for fn in present for n in ast.walk(fn) if isinstance(n, ast.Try) and n.finalbody]
    if finals:
        return Feature("finally-only", (r.ctl.ev(finals[0]),), "completion is emitted in a finally; errors still end the thread")
    return unrecognised(f"`except Exception` or a `finally` in {', '.join(fn.name for fn in present)}{NOT_READ_AS_NO}")


def _write_order(r: Reader) -> Feature:
    getter = r.ctl_methods.get("_generic_page_get") or r.ctl_methods.get("generic_page_transfer")
    if getter is None:
        return unrecognised("HiCacheController._generic_page_get (or generic_page_transfer)")
    writes = calls(getter, "set_from_flat_data_page")
    counts = calls(getter, "increment")
    if not writes:
        return unrecognised(f"set_from_flat_data_page in {getter.name}")
    if not counts:
        return unrecognised(f"the `increment` of completed tokens in {getter.name}{NOT_READ_AS_NO}")
    if counts[0].lineno < writes[0].lineno:
        if _counts_a_batch(counts[0]) and _in_loop_after(getter, writes[0], counts[0]):
            return Feature("count-batch-then-write", (r.ctl.ev(counts[0]), r.ctl.ev(writes[0])),
                           "one increment counts the whole batch (len(...) pages), then a loop writes its pages")
        return Feature("count-then-write", (r.ctl.ev(counts[0]), r.ctl.ev(writes[0])),
                       "completed_tokens grows before the page's data is written")
    return Feature("write-then-count", (r.ctl.ev(writes[0]), r.ctl.ev(counts[0])))


def _counts_a_batch(increment: ast.Call) -> bool:
    """`increment(page_size * len(batch))`: the count of a whole batch at once (0.5.1)."""
    return any(isinstance(n, ast.Call) and call_name(n) == "len" for a in increment.args for n in ast.walk(a))


def _in_loop_after(fn: ast.AST, write: ast.Call, increment: ast.Call) -> bool:
    """Whether `write` sits in a `for` loop that starts after `increment` (one write per page)."""
    return any(isinstance(n, ast.For) and n.lineno > increment.lineno and any(m is write for m in ast.walk(n))
               for n in ast.walk(fn))


ROUND_CHECKS = ("writing_check", "loading_check")
ALL_REDUCES = ("_all_reduce", "_all_reduce_attn_groups", "all_reduce")


def _round_collectives(r: Reader) -> Feature:
    """The all_reduce calls check_hicache_events makes every round before the drain reads its queue
    sizes: writing_check's and loading_check's where each reaches its all_reduce with nothing written
    back or loaded (0.5.13: loading_check only, writing_check returns first while
    ongoing_write_through is empty; 0.5.14-0.5.16: both); from 0.5.17 one collective
    (`_sync_hicache_ready_counts`) that also carries the drain's queue sizes."""
    events = r.methods.get("check_hicache_events")
    if events is None:
        return unrecognised(f"{r.cls}.check_hicache_events and the all_reduce its checks make{NOT_READ_AS_NO}")
    merged = calls(events, "_sync_hicache_ready_counts")
    if merged:
        return Feature("merged-with-drain", (r.cache.ev(merged[0]),),
                       "one all_reduce carries the write and load counts and the drain's queue sizes")
    made = []
    for stmt in events.body:  # the round's own calls, in order (not those behind a branch)
        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        if call is None or call_name(call) not in ROUND_CHECKS or call.args or call.keywords:
            continue
        reduce = _unconditional_reduce(r.methods.get(call_name(call)))
        if reduce is not None:
            made.append((call, reduce))
    if not made:
        return unrecognised(f"an all_reduce reached every round by {' or '.join(ROUND_CHECKS)} in "
                            f"check_hicache_events{NOT_READ_AS_NO}")
    value = "+".join(call_name(c).replace("_", "-") for c, _ in made)
    evidence = tuple(e for c, red in made for e in (r.cache.ev(c), r.cache.ev(red)))
    return Feature(value, evidence, "an all_reduce(MIN) on the scheduler's group every round, before the drain")


def _unconditional_reduce(fn: Optional[ast.FunctionDef]) -> Optional[ast.Call]:
    """The all_reduce a method reaches on every call with its default arguments: a top-level
    statement of its body, after no `if ...: return` but the one under its own `write_back`
    parameter (False by default, the scheduler's call)."""
    if fn is None:
        return None
    params = {a.arg for a in fn.args.args}
    for stmt in fn.body:
        if isinstance(stmt, ast.If) and any(isinstance(s, ast.Return) for s in stmt.body):
            if isinstance(stmt.test, ast.Name) and stmt.test.id in params:
                continue  # `if write_back: ... return`: not the scheduler's per-round call
            return None  # e.g. `if len(self.ongoing_write_through) == 0: return`
        found = [c for c in ast.walk(stmt) if isinstance(c, ast.Call) and call_name(c) in ALL_REDUCES]
        if found:
            return found[0]
    return None


def _abort_barrier(r: Reader) -> Feature:
    abort = r.methods.get("release_aborted_request")
    barriers = (calls(abort, "barrier") + calls(abort, "_barrier_attn_groups")) if abort is not None else []
    if barriers:
        return Feature("yes", (r.cache.ev(barriers[0]),), "the abort path waits in a TP barrier")
    return unrecognised(f"a barrier in {r.cls}.release_aborted_request{NOT_READ_AS_NO}")


# ---------------------------------------------------------------- the shape


def detect_shape(files: Mapping[str, str], cache_class: Optional[str] = None) -> Shape:
    """The shape of `cache_class` (default: the class the factory builds) in these files."""
    built = _factory_class(files)
    judged = cache_class or built.value
    if judged not in CACHE_FILES or parse_file(files, CACHE_FILES.get(judged, "")) is None:
        missing = unrecognised(f"the cache class to judge ({judged or 'the factory'}: "
                               f"{CACHE_FILES.get(judged, 'HiRadixCache or UnifiedRadixCache')} not readable)")
        return Shape(built, missing, *([missing] * (len(fields(Shape)) - 2)))
    r = Reader(files, judged)
    if judged not in r.cache.classes:
        missing = unrecognised(f"class {judged} in {r.cache.rel}")
        return Shape(built, missing, *([missing] * (len(fields(Shape)) - 2)))
    judged_feat = Feature(judged, (r.cache.ev(r.cache.classes[judged], f"class {judged}"),),
                          "the factory's class" if judged == built.value else "asked for explicitly")
    acks = _acks(r)
    return Shape(
        cache_class=built,
        judged_class=judged_feat,
        predicate=_predicate(r),
        host_alloc=_host_alloc(r),
        hit_queue=_queue(r, "prefetch_hit_queue"),
        revoke_queue=_queue(r, "prefetch_revoke_queue"),
        acks=acks,
        check_collective=_check_collective(r),
        threshold=_threshold(r),
        io_short_batch=_io_short_batch(r),
        ack_match=_ack_match(r, acks),
        tail_release=_tail_release(r),
        timeout=_timeout(r),
        storage_exceptions=_storage_exceptions(r),
        write_order=_write_order(r),
        abort_barrier=_abort_barrier(r),
        round_collectives=_round_collectives(r),
    )
