"""Running SPMD programs: one thread per shard, and the rendezvous where shards exchange values.

Every shard of a ``pmap``/``shard_map`` runs the same per-shard program on its own thread (the
compiled kernels release the GIL, so shards run in parallel). All shards execute the same
sequence of collectives, so a collective is a *rendezvous*: each shard deposits its value,
the last one to arrive publishes the list of all values, and every shard computes its own
result from that list. Under MPI the last one to arrive instead exchanges buffers with the
other processes for all of this process's shards (``collectives.py``, ``mpi_buffers.py``).
The primitives know no backend: they reach this runtime through ``core/shard_env.py`` (the
calling thread's shard, and the functions installed there at this module's import)::

    >>> run_shards(2, lambda i: i * 10)
    [0, 10]
"""
from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from functrans.core import shard_env
from functrans.core.devices import device_count, processes
from functrans.core.errors import ShardError
from functrans.core.shard_env import current_shard, enter_shard

from ..lowering.blas import blas_threads, set_blas_threads
from .collectives import device_collective
from .divergence import DEBUG_CALLBACK, FINISHED, CollectiveMismatchError, mismatch_error


class ShardAborted(Exception):
    """Raised in a shard waiting at a collective when another shard failed."""


class Rendezvous:
    """Where the ``n_local`` shards of this process meet at each collective. Without MPI the
    meeting returns the values of all shards, in global shard order; with an MPI communicator
    (``owners``: the process of each global shard) the last shard to arrive runs ``publish``
    for all of them, which exchanges buffers with the other processes.

    Every meeting compares the shards' fingerprints (``divergence.py``): a shard at another
    collective, a shard that finished its program while others wait, or (under MPI) a
    process that does not arrive in time raises :class:`CollectiveMismatchError` instead of
    leaving the others waiting forever."""

    def __init__(self, n_local: int, n_global: int, comm=None, owners=None,
                 top_level: bool = True):
        self.n_local, self.n_global, self.comm = n_local, n_global, comm
        self.owners, self.top_level = owners, top_level
        self.call = None  # the cross-process side (mpi_comms.CallState)
        if comm is not None:
            from .mpi_comms import CallState
            self.call = CallState(comm, owners)
        self.memo: dict = {}  # per-call facts collectives reuse (groups of each axis set)
        self.plans: dict = {}  # fingerprint -> how this process runs it across processes
        self.step = 0  # collectives completed (named #step + 1 in errors)
        self._cond = threading.Condition()
        self._slots = [None] * n_local
        self._fps = [None] * n_local
        self._present = [False] * n_local
        self._who = list(range(n_local))  # global index of each local shard, once seen
        self._finished: set = set()
        self._arrived = 0
        self._generation = 0
        self._result = None
        self._error = None  # (generation, error) for the shards waiting at it
        self._busy = False  # the last shard is exchanging with the other processes
        self._aborted = False
        self._children: dict = {}

    def exchange(self, local_index: int, value, fingerprint=DEBUG_CALLBACK, global_index=None,
                 publish=None):
        """Deposit ``value``; once every local shard did, return what the meeting produced:
        ``publish(values, global_indices, agree)`` when given (under MPI: ``agree(payload)``
        checks that every process reached this collective), else every shard's value in
        global order (None for other processes' shards)."""
        if self.n_local == 1 and publish is not None:
            return self._exchange_alone(value, fingerprint, global_index, publish)
        with self._cond:
            if self._aborted:
                raise ShardAborted()
            if global_index is not None:
                self._who[local_index] = global_index
            generation = self._generation
            if self._finished:  # a local shard ended without this collective
                waiting = {i: fp for i, fp in enumerate(self._fps) if self._present[i]}
                error = self._divergence({**waiting, local_index: fingerprint})
                self._fail(generation, error)
                raise error
            self._slots[local_index] = value
            self._fps[local_index] = fingerprint
            self._present[local_index] = True
            self._arrived += 1
            if self._arrived < self.n_local:
                return self._wait(generation, local_index)
            slots, fps, who = self._slots, self._fps, list(self._who)
            if any(fp != fingerprint for fp in fps):
                error = self._divergence(dict(enumerate(fps)))
                self._fail(generation, error)
                raise error
            if self.call is None and publish is None:  # threads only: hand the list over
                self._complete(slots, fingerprint)
                return slots
            self._busy = True
        try:
            if publish is not None:  # it calls agree() once, before or with its first data
                result = publish(slots, who, functools.partial(self.call.agree, fingerprint,
                                                               self.step + 1))
            else:  # a debug callback: this process's shards only
                result = [None] * self.n_global
                for g, v in zip(who, slots):
                    result[g] = v
        except BaseException as e:
            with self._cond:
                self._fail(generation, e)
            raise
        with self._cond:
            self._complete(result, fingerprint)
        return result

    def _exchange_alone(self, value, fingerprint, global_index, publish):
        """:meth:`exchange` for the only shard of this process: no local shard to meet, so
        no lock or wait around the exchange with the other processes (the per-collective
        cost of a small collective is mostly Python)."""
        if self._aborted:
            raise ShardAborted()
        if global_index is not None:
            self._who[0] = global_index
        try:
            result = publish([value], self._who, functools.partial(
                self.call.agree, fingerprint, self.step + 1))
        except BaseException as e:
            with self._cond:
                self._fail(self._generation, e)
            raise
        self.step += 1
        return result

    def _complete(self, result, fingerprint) -> None:
        self._result = result
        self._slots, self._fps = [None] * self.n_local, [None] * self.n_local
        self._present = [False] * self.n_local
        self._arrived, self._busy = 0, False
        if fingerprint != DEBUG_CALLBACK:
            self.step += 1
        self._generation += 1
        self._cond.notify_all()

    def _wait(self, generation, local_index):
        # No deadline here: a local shard that has not arrived is still running (one that
        # ended or failed releases this wait), and the exchange between processes bounds its
        # own wait.
        while self._generation == generation and not self._aborted:
            self._cond.wait()
        if self._error is not None and self._error[0] == generation:
            error = self._error[1]
            if isinstance(error, CollectiveMismatchError):
                raise type(error)(*error.args)  # each waiting shard reports it
            raise ShardAborted() from error
        if self._aborted:
            raise ShardAborted()
        # The next generation cannot complete before this shard arrives again, so the
        # published result is still this generation's.
        return self._result

    def _divergence(self, arrived: dict):
        """The error for local shards (``arrived``: local index -> fingerprint) that do not
        all meet at the same collective, or meet one that finished shards never reach."""
        seen = {f"shard {self._who[i]}": fp for i, fp in sorted(arrived.items())}
        seen.update({f"shard {self._who[i]}": FINISHED for i in sorted(self._finished)})
        return mismatch_error("between the shards of this process", seen, self.step + 1)

    def _fail(self, generation, error) -> None:
        """Release the shards waiting at this generation with ``error`` (lock held)."""
        self._error = (generation, error)
        self._aborted = True  # the SPMD call is over: later meetings must not wait
        self._generation += 1
        self._cond.notify_all()
        for child in self._children.values():
            child.abort()

    def finished(self, local_index: int, global_index=None) -> None:
        """A local shard ended its program: shards waiting at a collective (or arriving at
        one later) cannot meet it there."""
        with self._cond:
            if global_index is not None:
                self._who[local_index] = global_index
            self._finished.add(local_index)
            if self._arrived and not self._busy and not self._aborted:
                arrived = {i: fp for i, fp in enumerate(self._fps) if self._present[i]}
                self._fail(self._generation, self._divergence(arrived))

    def finish_call(self) -> None:
        """After every local shard ended: check that the other processes ended the call too
        (and are not waiting at a collective this process never reached)."""
        if self.call is not None and self.top_level:
            self.call.agree(FINISHED, self.step + 1)

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
                per = n_global // self.n_global
                owners = (None if self.owners is None else
                          tuple(self.owners[g // per] for g in range(n_global)))
                r = self._children[key] = Rendezvous(n_local, n_global, self.comm, owners,
                                                     top_level=False)
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

    def exchange(self, value, fingerprint=DEBUG_CALLBACK, publish=None):
        """Meet this process's other shards (see :meth:`Rendezvous.exchange`)."""
        return self.rendezvous.exchange(self.local_index, value, fingerprint,
                                        self.global_index, publish)

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


def shard_contexts(mesh):
    """The contexts of this process's shards of ``mesh`` and their global indices; a
    shard_map started by a shard (nested pmap) joins the shards started by its siblings in
    one rendezvous over the combined axes."""
    parent = current_shard()
    sizes, coords = mesh.shape, mesh.coords()
    flat = list(mesh.devices.flat)
    if parent is None:
        local = [g for g, d in enumerate(flat) if d.process_index == processes.index]
        comm = processes.communicator if len(local) < len(flat) else None
        rdv = Rendezvous(len(local), len(flat), comm,
                         owners=tuple(d.process_index for d in flat) if comm else None)
        return [ShardContext(rdv, g, i, coords[g], sizes, coords)
                for i, g in enumerate(local)], local
    names = set(parent.sizes)
    if names & set(sizes):
        raise ValueError(f"a nested pmap/shard_map reuses the axis names "
                         f"{sorted(names & set(sizes))} of an enclosing one")
    n = mesh.size
    outer = parent.rendezvous
    if outer.n_global * n > device_count():
        raise ValueError(f"nested pmap/shard_map needs {outer.n_global} x {n} devices, but "
                         f"there are {device_count()}; raise num_cpu_devices")
    key = parent.calls
    parent.calls += 1
    rdv = outer.child(key, outer.n_local * n, outer.n_global * n)
    all_sizes = dict(parent.sizes, **sizes)
    all_coords = [dict(pc, **c) for pc in parent.all_coords for c in coords]
    ctxs = [ShardContext(rdv, parent.global_index * n + g, parent.local_index * n + g,
                         all_coords[parent.global_index * n + g], all_sizes, all_coords, parent)
            for g in range(n)]
    return ctxs, list(range(n))


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
    prev_shard = enter_shard(ctx)
    if n_concurrent > 1:
        import numba
        share = min(max(1, _cores() // n_concurrent), numba.config.NUMBA_NUM_THREADS)
        if share != _settings.numba_threads:
            _set_numba_threads(share)
            _guard_workqueue()
    try:
        out = fn(i)
    finally:
        enter_shard(prev_shard)
        # Pool threads only run shards: they keep their share of the cores.
    if ctx is not None:  # shards still waiting at a collective will not meet this one there
        ctx.rendezvous.finished(ctx.local_index, ctx.global_index)
    return out


def run_shards(n: int, fn, contexts=None) -> list:
    """Run ``fn(i)`` for local shards ``i < n`` in parallel; the results in order. If a
    shard raises, the others are released from any collective they wait at and the first
    failure is raised here, naming the shard.
    """
    contexts = contexts if contexts is not None else [None] * n
    rendezvous = contexts[0].rendezvous if contexts[0] is not None else None
    across = rendezvous is not None and rendezvous.call is not None
    if n == 1 and not across:
        return [_run_one(fn, 0, 1, contexts[0])]
    if n == 1:  # under MPI a failure must end the other processes too
        try:
            results = [_run_one(fn, 0, 1, contexts[0])]
        except BaseException as e:  # noqa: BLE001 - re-raised by _raise_first
            _raise_first([(0, e)], contexts)
            raise
        _finish_call(rendezvous)
        return results
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
    if across:
        _finish_call(rendezvous)
    return results


def _finish_call(rendezvous) -> None:
    """Check that the other processes ended the call too; if not, end the job (they may be
    waiting at a collective this process never reached)."""
    try:
        rendezvous.finish_call()
    except CollectiveMismatchError as e:
        _abort_other_processes(e)
        raise


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


# The primitives (shard_map, the collectives) reach this runtime through core/shard_env.py.
shard_env.install(shard_contexts=shard_contexts, run_shards=run_shards,
                  collective=device_collective)
