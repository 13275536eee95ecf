"""The MPI side of an SPMD call spread over processes: communicators, and the check that every
process reaches the same collective before any data moves.

``functrans.distributed.initialize()`` calls :func:`attach` with ``COMM_WORLD``; two duplicates
of it keep functrans's traffic apart from the user's: one for fingerprints (the check below),
one for point-to-point data (``ppermute``). A collective over a group of processes smaller
than the job runs on a communicator made for exactly those processes (``Create_group``, which
only they take part in), cached by the ordered tuple of their ranks.

Each pmap/shard_map call over several processes gets a :class:`CallState`. Before every
collective (and once more at the end of the call) its processes exchange a fixed-size
fingerprint: the call's number, the collective's number within the call and a checksum of its
description. The exchange is non-blocking with a deadline, so a process that never arrives,
or arrives somewhere else, is reported instead of waited for.
"""
from __future__ import annotations

import struct
import time
import zlib

from .divergence import CollectiveMismatchError, collective_timeout, describe, mismatch_error

_FP_TAG, _DESC_TAG = 1, 2
# The header: call number, collective number, checksum of the description, payload bytes.
_HEAD = struct.Struct("<4q")
_HEADER = _HEAD.size
SMALL = 2048  # payloads up to this many bytes travel with the fingerprint
_SPINS = 20000  # tests before sleeping: a few ms, longer than most waits for a partner
_CHECKSUMS: dict = {}  # fingerprint -> checksum of its description


class _Comms:
    world = None  # the communicator initialize() joined
    control = None  # fingerprints
    data = None  # point-to-point data
    groups: dict = {}  # ordered ranks -> communicator of exactly those processes
    calls: dict = {}  # sorted ranks of a call -> calls made among them so far


_comms = _Comms()


def attach(world) -> None:
    """Use ``world`` (collective over it: every process calls this, as initialize() does)."""
    if _comms.world is world:
        return
    _comms.world, _comms.control, _comms.data = world, world.Dup(), world.Dup()
    _comms.groups, _comms.calls = {}, {}


def detach() -> None:
    """Forget the communicators (``functrans.distributed.shutdown``)."""
    _comms.world = _comms.control = _comms.data = None
    _comms.groups, _comms.calls = {}, {}


def _require(world):
    if _comms.world is not world:  # a communicator set without initialize()
        attach(world)
    return _comms


def data_comm():
    """The duplicate of the world communicator for point-to-point data (world ranks)."""
    return _comms.data


def group_comm(ranks: tuple):
    """The communicator of exactly the processes ``ranks``, ranked in that order. Creating it
    involves only them; every one of them reaches this at the same collective (after the
    fingerprint check), and in the same order of groups."""
    comm = _comms.groups.get(ranks)
    if comm is None:
        world = _comms.world
        if len(ranks) == world.Get_size() and list(ranks) == list(range(len(ranks))):
            comm = _comms.data
        else:
            group = world.Get_group()
            members = group.Incl(list(ranks))
            comm = world.Create_group(members, tag=zlib.crc32(repr(ranks).encode()) % 32768)
            members.Free()
            group.Free()
        _comms.groups[ranks] = comm
    return comm


def _wait(requests, deadline: float) -> bool:
    """Wait for ``requests`` until ``deadline`` (time.monotonic()); whether they completed.
    Spins briefly (the usual case: the others are already there), yields, then sleeps in
    growing steps so a long wait costs little CPU."""
    from mpi4py import MPI
    for _ in range(_SPINS):
        if MPI.Request.Testall(requests):
            return True
    pause = 1e-5
    while not MPI.Request.Testall(requests):
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 2e-3)
    return True


class CallState:
    """One pmap/shard_map call over the processes owning its shards (``owners``: the process
    of each global shard): numbers the call among the calls of the same processes, and checks
    at each collective that they all reached the same one."""

    def __init__(self, world, owners):
        comms = _require(world)
        ranks = tuple(sorted(set(owners)))
        self.rank, self.ranks = world.Get_rank(), ranks
        self.peers = [p for p in ranks if p != self.rank]
        comms.calls[ranks] = self.call_id = comms.calls.get(ranks, 0) + 1
        self.timeout = collective_timeout()
        # bytearrays and struct: packing and comparing a header through NumPy cost more than
        # the exchange itself
        width = _HEADER + SMALL
        self._send = bytearray(width)
        self._send_view = memoryview(self._send)
        self._rows = [memoryview(bytearray(width)) for _ in self.peers]

    def agree(self, fp, step: int, payload=None):
        """Return once every process of the call reached collective ``fp`` as its collective
        number ``step``; raise :class:`CollectiveMismatchError` naming the processes when one
        is elsewhere, or did not arrive within the timeout. A small ``payload`` (a contiguous
        buffer of at most ``SMALL`` bytes) rides along: then returns rank -> payload for every
        process of the call (a small collective costs one exchange instead of two); the
        other processes' payloads are views valid until the next check."""
        if not self.peers:
            return {self.rank: payload}
        if payload is None:
            size = 0
        else:
            payload = memoryview(payload).cast("B")
            size = payload.nbytes
            self._send[_HEADER:_HEADER + size] = payload
        code = _CHECKSUMS.get(fp)
        if code is None:
            code = _CHECKSUMS[fp] = zlib.crc32(repr(fp).encode())
        header = (self.call_id, step, code, size)
        _HEAD.pack_into(self._send, 0, *header)
        ctrl = _comms.control
        rows = self._rows  # (reused: each check completes before the next starts)
        requests = [ctrl.Irecv(row, source=p, tag=_FP_TAG) for row, p in zip(rows, self.peers)]
        mine = self._send_view[:_HEADER + size]
        requests += [ctrl.Isend(mine, dest=p, tag=_FP_TAG) for p in self.peers]
        deadline = time.monotonic() + self.timeout
        if not _wait(requests, deadline):
            self._missing(fp, step, requests)
        for row in rows:
            if _HEAD.unpack_from(row) != header:
                # Every process saw every fingerprint, so all of them are here: say what each
                # runs.
                self._report(fp, step, deadline)
        if payload is None:
            return None
        got = {p: row[_HEADER:_HEADER + size] for p, row in zip(self.peers, rows)}
        got[self.rank] = payload
        return got

    def _missing(self, fp, step, requests):
        missing = [f"process {p}" for p, r in zip(self.peers, requests) if not r.Test()]
        raise CollectiveMismatchError(
            f"{describe(fp)} (collective #{step} of pmap/shard_map call #{self.call_id} "
            f"among processes {sorted(self.peers + [self.rank])}): {', '.join(missing)} "
            f"did not reach it within {self.timeout:g} s (FUNCTRANS_COLLECTIVE_TIMEOUT); "
            "they finished, failed, or run a different program")

    def _report(self, fp, step, deadline):
        ctrl = _comms.control
        mine = (self.call_id, step, fp)
        requests = [ctrl.irecv(source=p, tag=_DESC_TAG) for p in self.peers]
        sends = [ctrl.isend(mine, dest=p, tag=_DESC_TAG) for p in self.peers]
        seen = {self.rank: mine}
        for p, r in zip(self.peers, requests):
            remaining = max(deadline - time.monotonic(), 0.1)
            seen[p] = _recv_object(r, time.monotonic() + remaining)
        for s in sends:
            s.Test()
        error = mismatch_error(
            "between processes",
            {f"process {p} (call #{c}, collective #{k})": f
             for p, (c, k, f) in sorted(seen.items(), key=lambda kv: kv[0])}, None)
        raise error


def _recv_object(request, deadline):
    """The object a pickled ``irecv`` brings (None if it does not come by ``deadline``)."""
    pause = 1e-5
    while True:
        done, value = request.test()
        if done:
            return value
        if time.monotonic() > deadline:
            return (0, 0, None)
        time.sleep(pause)
        pause = min(pause * 2, 2e-3)
