"""A thread pool whose caller never waits for a thread that has not started: work sharing for
jit's parallel loops and cut products.

Numba's threading layers run a region's units in fixed shares, one per thread, and the
calling thread waits at the end for every share. When another process holds a core, the
share of a thread the OS has not scheduled yet waits for it (a time slice, or at best a
wake-up and a migration): on the 2-core VM, with one core spinning elsewhere, the optax MLP
step took 6.4 ms (p50) on two threads against 5.4-5.7 ms on one.

Here the units of a region are handed out in batches from one atomic counter. The caller
takes batches like any worker; when none is left it waits only for batches other threads
have started. A worker that wakes late finds nothing to do, so a region is never slower
than the caller alone plus the batches already running. The units, and so the partial sums
of a parallel loop (one per unit, added in unit order), are the same as with Numba's layer:
results do not depend on which thread ran what.

The entry point ``functrans_parallel_for`` has ``numba_parallel_for``'s signature
``(fn, args, dims, steps, data, inner_ndim, array_count, num_threads)`` and calls
``fn(args', dims', steps, data)`` for a range of units (``args'[0]`` its first unit,
``dims'[0]`` their count), as the generated chunk functions expect. It is LLVM IR (atomics
and Linux futexes), compiled once and cached like kernels. The workers are Python threads
that enter it through ctypes (which lets go of the GIL) and never come back. A region from a
second thread while one runs (pmap's shards), or from inside a unit, runs on Numba's
threading layer, as every region did before; a region with one thread, or with no workers,
runs on its caller. Where the pool is not built (another OS or CPU than Linux on x86-64,
or ``FUNCTRANS_POOL=numba``), ``functrans_parallel_for`` is Numba's entry point itself.

Between regions, idle workers spin briefly, then sleep on a futex; a caller with batches
still running elsewhere does the same. ``SPIN`` is 2000 pause instructions (25 ns each on the
test VM: 50 us). Measured there, alternating in one process: quiet, the optax and equinox
steps were as fast from 1000 to 16000 and 15% slower (equinox) at 500; with one core busy,
16000 made the optax step 45% slower, and 2000 gave equinox its best median.

    >>> from functrans.transforms.native.parallel import ensure_threads
    >>> ensure_threads()  # starts Numba's layer, then this pool (once)
    >>> uses_workers() in (True, False)
    True
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading
from contextlib import contextmanager

from llvmlite import binding as llvm

from . import engine

__all__ = ["install", "uses_workers", "paused", "SPIN"]

SPIN = 2000  # pause instructions before an idle thread sleeps (50 us on the test VM)
_SYS_FUTEX = 202  # x86-64 Linux
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # the _PRIVATE forms: one process's threads
_ENTRY = "functrans_parallel_for"
_lock = threading.Lock()
_state: dict = {}  # "mode": "pool" | "numba"; "workers": started threads; "fns": ctypes entries


def _enabled() -> bool:
    return (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")
            and os.environ.get("FUNCTRANS_POOL", "work") != "numba")


# The job's fields (name, LLVM type), written by the caller, read by the workers.
_FIELDS = [("fn", "ptr"), ("data", "ptr"), ("units", "i64"), ("batch", "i64"), ("base", "i64"),
           ("nthreads", "i32")]


def pool_ir() -> str:
    """The pool's LLVM IR: ``functrans_parallel_for`` (the regions' entry point),
    ``functrans_pool_worker(i32 index)`` (a worker's loop, never returns) and small
    accessors for the Python side."""
    futex = f"call i64 (i64, ...) @syscall(i64 {_SYS_FUTEX}"
    words = ["gen", "done", "waiting", "sleepers", "busy", "workers", "paused"]
    lines = ["declare i64 @syscall(i64, ...)", "declare void @llvm.x86.sse2.pause()",
             "declare void @numba_parallel_for(ptr, ptr, ptr, ptr, ptr, i64, i64, i32)", ""]
    # each word on its own cache line: the caller and workers write different ones
    lines += [f"@ft_pool_{w} = internal global i32 0, align 64" for w in words]
    lines += ["@ft_pool_next = internal global i64 0, align 64",
              f"@ft_pool_spin = internal global i32 {SPIN}, align 4"]
    lines += [f"@ft_pool_{n} = internal global {t} {'null' if t == 'ptr' else 0}, align 8"
              for n, t in _FIELDS]
    lines += ["", """
define internal void @run_range(ptr %fn, ptr %data, i64 %lo, i64 %count) nounwind {
entry:
  %args = alloca ptr
  %dims = alloca i64
  %steps = alloca i64
  %p = inttoptr i64 %lo to ptr
  store ptr %p, ptr %args
  store i64 %count, ptr %dims
  store i64 1, ptr %steps
  call void %fn(ptr %args, ptr %dims, ptr %steps, ptr %data)
  ret void
}

; Claim and run batches of job %g until none is left. The counter holds the job's
; generation (high half) and its next unit (low half): a claim of a finished or replaced
; job fails.
define internal void @claim(i32 %g, ptr %fn, ptr %data, i64 %units, i64 %batch,
                            i64 %base) nounwind {
entry:
  %g64 = zext i32 %g to i64
  %tag = shl i64 %g64, 32
  %u32 = trunc i64 %units to i32
  br label %loop
loop:
  %w = load atomic i64, ptr @ft_pool_next monotonic, align 8
  %wg = lshr i64 %w, 32
  %same = icmp eq i64 %wg, %g64
  %i = and i64 %w, 4294967295
  %left = icmp ult i64 %i, %units
  %open = and i1 %same, %left
  br i1 %open, label %try, label %exit
try:
  %e = add i64 %i, %batch
  %short = icmp ult i64 %e, %units
  %hi = select i1 %short, i64 %e, i64 %units
  %new = or i64 %tag, %hi
  %r = cmpxchg ptr @ft_pool_next, i64 %w, i64 %new seq_cst monotonic
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %run, label %loop
run:
  %n = sub i64 %hi, %i
  %lo = add i64 %base, %i
  call void @run_range(ptr %fn, ptr %data, i64 %lo, i64 %n)
  %n32 = trunc i64 %n to i32
  %old = atomicrmw add ptr @ft_pool_done, i32 %n32 seq_cst
  %now = add i32 %old, %n32
  %last = icmp eq i32 %now, %u32
  br i1 %last, label %check, label %loop
check:
  %wt = load atomic i32, ptr @ft_pool_waiting seq_cst, align 4
  %asleep = icmp ne i32 %wt, 0
  br i1 %asleep, label %wake, label %loop
wake:
  """ + futex + f""", ptr @ft_pool_done, i32 {_FUTEX_WAKE}, i32 1)
  br label %loop
exit:
  ret void
}}

define void @{_ENTRY}(ptr %fn, ptr %args, ptr %dims, ptr %steps, ptr %data,
                      i64 %inner, i64 %arrays, i32 %nthreads) nounwind {{
entry:
  %first = load ptr, ptr %args
  %base = ptrtoint ptr %first to i64
  %units = load i64, ptr %dims
  %workers = load atomic i32, ptr @ft_pool_workers monotonic, align 4
  %c1 = icmp sgt i32 %nthreads, 1
  %c2 = icmp sgt i32 %workers, 0
  %c3 = icmp ugt i64 %units, 1
  %c4 = icmp ult i64 %units, 2147483648
  %c12 = and i1 %c1, %c2
  %c34 = and i1 %c3, %c4
  %c = and i1 %c12, %c34
  br i1 %c, label %lock, label %serial
lock:
  %lk = cmpxchg ptr @ft_pool_busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue {{ i32, i1 }} %lk, 1
  br i1 %got, label %publish, label %elsewhere
elsewhere:
  call void @numba_parallel_for(ptr %fn, ptr %args, ptr %dims, ptr %steps, ptr %data,
                                i64 %inner, i64 %arrays, i32 %nthreads)
  ret void
serial:
  call void @run_range(ptr %fn, ptr %data, i64 %base, i64 %units)
  ret void
publish:
  %g0 = load atomic i32, ptr @ft_pool_gen monotonic, align 4
  %godd = add i32 %g0, 1
  store atomic i32 %godd, ptr @ft_pool_gen seq_cst, align 4
  fence release
  %nt64 = sext i32 %nthreads to i64
  %q = mul i64 %nt64, 4
  %b0 = udiv i64 %units, %q
  %bz = icmp eq i64 %b0, 0
  %batch = select i1 %bz, i64 1, i64 %b0
""" + "".join(f"  store atomic {t} %{n}, ptr @ft_pool_{n} monotonic, align {8 if t != 'i32' else 4}\n"
              for n, t in _FIELDS) + f"""  store atomic i32 0, ptr @ft_pool_done seq_cst, align 4
  %g = add i32 %g0, 2
  %g64 = zext i32 %g to i64
  %tag = shl i64 %g64, 32
  store atomic i64 %tag, ptr @ft_pool_next seq_cst, align 8
  store atomic i32 %g, ptr @ft_pool_gen seq_cst, align 4
  %sl = load atomic i32, ptr @ft_pool_sleepers seq_cst, align 4
  %anyone = icmp sgt i32 %sl, 0
  br i1 %anyone, label %wakeall, label %work
wakeall:
  {futex}, ptr @ft_pool_gen, i32 {_FUTEX_WAKE}, i32 2147483647)
  br label %work
work:
  call void @claim(i32 %g, ptr %fn, ptr %data, i64 %units, i64 %batch, i64 %base)
  %u32 = trunc i64 %units to i32
  %limit = load atomic i32, ptr @ft_pool_spin monotonic, align 4
  br label %wait
wait:
  %s = phi i32 [ 0, %work ], [ %s1, %spin ], [ 0, %slept ]
  %d = load atomic i32, ptr @ft_pool_done seq_cst, align 4
  %fin = icmp eq i32 %d, %u32
  br i1 %fin, label %finish, label %more
more:
{_spin("wait")}
{_sleep("store atomic i32 1, ptr @ft_pool_waiting seq_cst, align 4", "@ft_pool_done",
         "icmp ne i32 %now, %u32", "slept",
         "store atomic i32 0, ptr @ft_pool_waiting seq_cst, align 4")}
  br label %wait
finish:
  store atomic i32 0, ptr @ft_pool_busy release, align 4
  ret void
}}

; A worker: wait for a new job (spin, then sleep on the generation word), read it as a
; seqlock reader (the caller makes the generation odd while it writes the fields), take
; batches if its index is below the job's thread count.
define void @functrans_pool_worker(i32 %index) nounwind {{
entry:
  %g.init = load atomic i32, ptr @ft_pool_gen seq_cst, align 4
  br label %idle
idle:
  %seen = phi i32 [ %g.init, %entry ], [ %g, %next ]
  br label %poll
poll:
  %s = phi i32 [ 0, %idle ], [ %s1, %spin ], [ 0, %woke ]
  %g = load atomic i32, ptr @ft_pool_gen acquire, align 4
  %new = icmp ne i32 %g, %seen
  %low = and i32 %g, 1
  %even = icmp eq i32 %low, 0
  %job = and i1 %new, %even
  br i1 %job, label %read, label %notyet
notyet:
  %limit = load atomic i32, ptr @ft_pool_spin monotonic, align 4
{_spin("poll")}
{_sleep("%x0 = atomicrmw add ptr @ft_pool_sleepers, i32 1 seq_cst", "@ft_pool_gen",
         "icmp eq i32 %now, %seen", "woke", "%x1 = atomicrmw sub ptr @ft_pool_sleepers, i32 1 seq_cst")}
  br label %poll
read:
  %paused = load atomic i32, ptr @ft_pool_paused monotonic, align 4
""" + "".join(f"  %{n} = load atomic {t}, ptr @ft_pool_{n} monotonic, align {8 if t != 'i32' else 4}\n"
              for n, t in _FIELDS) + f"""  fence acquire
  %g3 = load atomic i32, ptr @ft_pool_gen monotonic, align 4
  %valid = icmp eq i32 %g3, %g
  %active = icmp eq i32 %paused, 0
  %mine = icmp slt i32 %index, %nthreads
  %go1 = and i1 %valid, %active
  %go = and i1 %go1, %mine
  br i1 %go, label %take, label %next
take:
  call void @claim(i32 %g, ptr %fn, ptr %data, i64 %units, i64 %batch, i64 %base)
  br label %next
next:
  br label %idle
}}

define void @functrans_pool_set(i32 %workers, i32 %paused) nounwind {{
  store atomic i32 %workers, ptr @ft_pool_workers seq_cst, align 4
  store atomic i32 %paused, ptr @ft_pool_paused seq_cst, align 4
  ret void
}}

define void @functrans_pool_spin(i32 %n) nounwind {{
  store atomic i32 %n, ptr @ft_pool_spin seq_cst, align 4
  ret void
}}

; (a fork in the middle of a region leaves its words as they were: start over from 0)
define void @functrans_pool_after_fork() nounwind {{
  store atomic i32 0, ptr @ft_pool_workers seq_cst, align 4
  store atomic i32 0, ptr @ft_pool_gen seq_cst, align 4
  store atomic i64 0, ptr @ft_pool_next seq_cst, align 8
  store atomic i32 0, ptr @ft_pool_done seq_cst, align 4
  store atomic i32 0, ptr @ft_pool_busy seq_cst, align 4
  store atomic i32 0, ptr @ft_pool_sleepers seq_cst, align 4
  store atomic i32 0, ptr @ft_pool_waiting seq_cst, align 4
  ret void
}}
"""]
    return "\n".join(lines)


def _spin(back: str) -> str:
    """IR of a wait's spinning: pause and go ``back`` (the wait's test) until ``%s`` pauses
    reach ``%limit``, then on to ``sleep``."""
    return (f"  %tired = icmp uge i32 %s, %limit\n  br i1 %tired, label %sleep, label %spin\n"
            f"spin:\n  call void @llvm.x86.sse2.pause()\n  %s1 = add i32 %s, 1\n"
            f"  br label %{back}")


def _sleep(announce: str, word: str, still: str, after: str, retract: str) -> str:
    """IR of a wait's sleep: ``announce`` it (a flag or a count the waker reads), read
    ``word`` again into ``%now`` and, if ``still`` (a test of ``%now``) holds, futex-wait
    while the word holds ``%now``; then, at label ``after``, ``retract`` the announcement.
    (The waker changes the word before it reads the announcement, and the kernel checks
    the word before sleeping: no wake-up is lost.)"""
    futex = f"call i64 (i64, ...) @syscall(i64 {_SYS_FUTEX}, ptr {word}, i32 {_FUTEX_WAIT}"
    return (f"sleep:\n  {announce}\n  %now = load atomic i32, ptr {word} seq_cst, align 4\n"
            f"  %asleep = {still}\n  br i1 %asleep, label %dosleep, label %{after}\n"
            f"dosleep:\n  {futex}, i32 %now, ptr null)\n  br label %{after}\n"
            f"{after}:\n  {retract}")


def install() -> None:
    """Register ``functrans_parallel_for`` with LLVM (once): this pool's entry point, its
    workers started, or Numba's ``numba_parallel_for`` where the pool is not used. Call it
    after Numba's threading layer has started (its symbols are registered then)."""
    if _state:
        return
    with _lock:
        if _state:
            return
        if not _enabled():
            llvm.add_symbol(_ENTRY, llvm.address_of_symbol("numba_parallel_for"))
            _state["mode"] = "numba"
            return
        text = pool_ir()
        symbol = engine.symbol_for("ft_work_pool", text)
        obj = engine.cached_object(symbol)
        if obj is None:
            # Unoptimized: 14 ms on an empty cache, against 32 at -O2, for code that
            # spends its time in the units it calls and in futex waits.
            obj = engine.compile_ir(text, opt=0, unroll=False)
            engine.store_object(symbol, obj)
        entry = engine.load(_ENTRY, obj)
        jit = engine._init()["engine"]
        fns = {name: jit.get_function_address(name) for name in
               ("functrans_pool_worker", "functrans_pool_set", "functrans_pool_after_fork",
                "functrans_pool_spin")}
        _state["fns"] = {
            "worker": ctypes.CFUNCTYPE(None, ctypes.c_int32)(fns["functrans_pool_worker"]),
            "set": ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)(fns["functrans_pool_set"]),
            "after_fork": ctypes.CFUNCTYPE(None)(fns["functrans_pool_after_fork"]),
            "spin": ctypes.CFUNCTYPE(None, ctypes.c_int32)(fns["functrans_pool_spin"])}
        llvm.add_symbol(_ENTRY, entry)
        _state["mode"] = "pool"
        _start_workers()
        os.register_at_fork(after_in_child=_after_fork)


def _start_workers() -> None:
    import numba
    count = max(0, int(numba.config.NUMBA_NUM_THREADS) - 1)
    worker = _state["fns"]["worker"]
    for index in range(1, count + 1):
        threading.Thread(target=worker, args=(index,), daemon=True,
                         name=f"functrans-pool-{index}").start()
    _state["workers"] = count
    _state["fns"]["set"](count, 0)


def _after_fork() -> None:
    # The child has none of the parent's threads: reset the pool's words, start new ones.
    _state["fns"]["after_fork"]()
    _start_workers()


def uses_workers() -> bool:
    """Whether regions run on this pool's workers (False: on Numba's threading layer, or
    on the caller alone)."""
    return _state.get("mode") == "pool" and _state.get("workers", 0) > 0


@contextmanager
def paused():
    """Workers take no units while this is active: every region runs on its caller alone,
    as when the workers are late (for tests).

        >>> with paused():
        ...     pass
    """
    install()
    fns = _state.get("fns")
    if fns is None:
        yield
        return
    fns["set"](_state["workers"], 1)
    try:
        yield
    finally:
        fns["set"](_state["workers"], 0)
