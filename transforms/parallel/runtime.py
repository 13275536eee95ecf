"""Running SPMD programs: one thread per shard, and the rendezvous where shards exchange values.

Every shard of a ``pmap``/``shard_map`` runs the same per-shard program on its own thread (the
compiled kernels release the GIL, so shards run in parallel). All shards execute the same
sequence of collectives, so a collective is a *rendezvous*: each shard deposits its value,
the last one to arrive publishes the list of all values (under MPI, after one ``allgather``
between the processes), and every shard computes its own result from that list::

    >>> run_shards(2, lambda i: i * 10)
    [0, 10]
"""
from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from functrans.core.devices import processes
from functrans.core.errors import ShardError

from ..lowering.blas import blas_threads, set_blas_threads


class ShardAborted(Exception):
    """Raised in a shard waiting at a collective when another shard failed."""


class Rendezvous:
    """Where the ``n_local`` shards of this process meet at each collective; with an MPI
    communicator, the local leader exchanges the process's values with the other processes.
    Returns the values of all ``n_global`` shards, in global shard order."""

    def __init__(self, n_local: int, n_global: int, comm=None):
        self.n_local, self.n_global, self.comm = n_local, n_global, comm
        self._cond = threading.Condition()
        self._slots = [None] * n_local
        self._arrived = 0
        self._generation = 0
        self._result = None
        self._aborted = False
        self._children: dict = {}

    def exchange(self, local_index: int, value) -> list:
        with self._cond:
            if self._aborted:
                raise ShardAborted()
            generation = self._generation
            self._slots[local_index] = value
            self._arrived += 1
            if self._arrived == self.n_local:  # the last one to arrive publishes
                values = self._slots
                if self.comm is not None:
                    values = [v for part in self.comm.allgather(values) for v in part]
                self._result = values
                self._slots, self._arrived = [None] * self.n_local, 0
                self._generation += 1
                self._cond.notify_all()
                return values
            while self._generation == generation and not self._aborted:
                self._cond.wait()
            if self._aborted:
                raise ShardAborted()
            # The next generation cannot complete before this shard arrives again, so the
            # published result is still this generation's.
            return self._result

    def abort(self) -> None:
        with self._cond:
            self._aborted = True
            self._cond.notify_all()
            for child in self._children.values():
                child.abort()

    def child(self, key, n_local: int, n_global: int) -> "Rendezvous":
        """The rendezvous of a nested SPMD call (pmap inside pmap), shared by every shard of
        this one that makes call number ``key``."""
        with self._cond:
            r = self._children.get(key)
            if r is None:
                r = self._children[key] = Rendezvous(n_local, n_global)
                if self._aborted:
                    r._aborted = True
            return r


class ShardContext:
    """What a shard's thread knows about itself: its coordinates on the mesh axes, every
    shard's coordinates, and the rendezvous of its execution."""

    __slots__ = ("rendezvous", "global_index", "local_index", "coords", "sizes",
                 "all_coords", "calls", "parent")

    def __init__(self, rendezvous, global_index, local_index, coords, sizes, all_coords,
                 parent=None):
        self.rendezvous, self.global_index, self.local_index = (rendezvous, global_index,
                                                                local_index)
        self.coords, self.sizes, self.all_coords = coords, sizes, all_coords
        self.calls = 0  # nested SPMD calls made so far (keys their shared rendezvous)
        self.parent = parent

    def exchange(self, value) -> list:
        return self.rendezvous.exchange(self.local_index, value)

    def group(self, names) -> list:
        """Global indices of the shards that share a collective over ``names`` with this one
        (equal coordinates on every other axis), ordered by their position along ``names``."""
        others = [n for n in self.sizes if n not in names]
        mine = tuple(self.coords[n] for n in others)
        members = [g for g, c in enumerate(self.all_coords)
                   if tuple(c[n] for n in others) == mine]
        return sorted(members, key=lambda g: self.position(names, self.all_coords[g]))

    def position(self, names, coords=None) -> int:
        """Row-major index of ``coords`` (default: this shard's) along ``names``."""
        coords = self.coords if coords is None else coords
        idx = 0
        for n in names:
            idx = idx * self.sizes[n] + coords[n]
        return idx


class _Current(threading.local):
    shard: ShardContext | None = None


_current = _Current()


def current_shard() -> ShardContext | None:
    """The shard the calling thread is running (None outside pmap/shard_map execution)."""
    return _current.shard


_pool = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            # Generous: shards of nested pmaps wait for their inner shards on pool threads.
            _pool = ThreadPoolExecutor(max_workers=256, thread_name_prefix="functrans-device")
        return _pool


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


class _ThreadSettings(threading.local):
    numba_threads: int | None = None  # what this thread last set (numba's getter is slow)


_settings = _ThreadSettings()


def _set_numba_threads(n: int) -> int:
    """Set this thread's Numba thread count; returns the previous one."""
    import numba
    prev = _settings.numba_threads
    if prev is None:
        prev = numba.get_num_threads()
    if n != prev:
        numba.set_num_threads(n)
    _settings.numba_threads = n
    return prev


def _guard_workqueue() -> None:
    from ..lowering.compile import parallel_regions
    if parallel_regions.lock is None and _layer() == "workqueue":
        parallel_regions.lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _layer() -> str:
    import numba
    return numba.threading_layer()  # launched by the set_num_threads call before this


def _run_one(fn, i, n_concurrent, ctx):
    """Run shard ``i`` with thread settings that keep n_concurrent shards from
    oversubscribing the cores (Numba's prange and BLAS threads are per thread here)."""
    prev_shard = _current.shard
    _current.shard = ctx
    if n_concurrent > 1:
        import numba
        share = min(max(1, _cores() // n_concurrent), numba.config.NUMBA_NUM_THREADS)
        if share != _settings.numba_threads:
            _set_numba_threads(share)
            _guard_workqueue()
    try:
        return fn(i)
    finally:
        _current.shard = prev_shard
        # Pool threads only run shards: they keep their share of the cores.


def run_shards(n: int, fn, contexts=None) -> list:
    """Run ``fn(i)`` for local shards ``i < n`` in parallel; the results in order. If a
    shard raises, the others are released from any collective they wait at and the first
    failure is raised here, naming the shard.
    """
    contexts = contexts if contexts is not None else [None] * n
    rendezvous = contexts[0].rendezvous if contexts[0] is not None else None
    if n == 1:
        return [_run_one(fn, 0, 1, contexts[0])]
    # Every shard runs on a pool thread: their Numba thread counts (a share of the cores) are
    # set once per thread and kept, instead of being changed and restored on the caller's
    # thread at every call. OpenBLAS's count is process-wide (its per-thread setter slows
    # other threads' products down afterwards): lowered while the shards run.
    blas = blas_threads()
    if blas is not None and blas > 1:
        set_blas_threads(max(1, min(blas, _cores() // n)))
    try:
        futures = [_executor().submit(_run_one, fn, i, n, contexts[i]) for i in range(n)]
        results, errors = _collect(futures, rendezvous)
    finally:
        if blas is not None and blas > 1:
            set_blas_threads(blas)
    _raise_first(errors, contexts)
    return results


def _collect(futures, rendezvous):
    results, errors = [None] * len(futures), []
    for i, f in enumerate(futures):
        try:
            results[i] = f.result()
        except BaseException as e:  # noqa: BLE001 - re-raised with the shard index
            errors.append((i, e))
            if rendezvous is not None:
                rendezvous.abort()
    return results, errors


def _raise_first(errors, contexts):
    """Raise the first real failure (not a shard released by another's failure), naming its
    shard; under MPI, end the job."""
    real = [(i, e) for i, e in errors if not isinstance(e, ShardAborted)]
    if real:
        i, e = real[0]
        if not isinstance(e, ShardError):  # (a nested pmap's error already names its shard)
            global_index = contexts[i].global_index if contexts[i] is not None else i
            error = ShardError(f"shard {global_index} raised {type(e).__name__}: {e}")
            error.__cause__ = e
            e = error
        _abort_other_processes(e)
        raise e
    if errors:
        raise errors[0][1]


def _abort_other_processes(error) -> None:
    """Under MPI the other processes would wait for this one forever: end the whole job, with
    a message saying why (as JAX does when a distributed computation fails)."""
    if processes.count > 1 and processes.communicator is not None:
        import sys
        print(f"functrans: process {processes.index}: {error}; aborting all "
              f"{processes.count} processes", file=sys.stderr, flush=True)
        # mpiexec forwards a process's output asynchronously; aborting at once can kill the
        # job before the message above is passed on (seen on a loaded 2-core machine).
        import time
        time.sleep(0.5)
        processes.communicator.Abort(1)
