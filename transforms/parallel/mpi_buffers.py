"""Collectives between processes as MPI operations on contiguous NumPy buffers.

The last local shard to reach a collective runs :func:`publisher`'s function for all of its process's
shards. For every group of shards the collective spans (the shards with equal coordinates on
the mesh axes it does not name), in one global order that every process shares:

* a group within this process is combined here, as without MPI;
* ``psum``/``pmax``/``pmin``: the local members' values are combined first (in group order),
  then one ``Allreduce`` per process; all local members share its result;
* ``all_gather``: ``Allgather`` (``Allgatherv`` when processes hold unequal numbers of members);
* ``psum_scatter``: local sum, then ``Reduce_scatter_block`` (``Reduce_scatter``);
* ``all_to_all``: ``Alltoall`` (``Alltoallv``) of the chunks each member sends each other;
* ``ppermute``: ``Isend``/``Irecv`` between the processes that hold a source and its target.

Group communicators rank processes in the order of their first member along the group, so
each process's block of a gathered buffer lands where its members stand. Data movement goes as
raw bytes (any dtype); reductions need a dtype MPI can reduce (integers, float32/64, complex
for sums). Anything else (bfloat16, bool, objects) falls back to a pickled ``allgather`` of
the values within the group, combined by every process as without MPI.

Large results are written into buffers from ``core/buffer_pool.py`` (fresh memory would be
faulted in by MPI at every call); local shards that share a result get one read-only array.
"""
from __future__ import annotations

import functools

import numpy as np

from functrans.core.buffer_pool import take

from .mpi_comms import SMALL, data_comm, group_comm

_REDUCIBLE = set("bBhHiIlLqQfd")  # NumPy type characters MPI reduces with SUM/MAX/MIN
_SUMMABLE = _REDUCIBLE | set("FD")  # ... and complex, with SUM only
_REDUCTIONS = {"psum": "SUM", "pmax": "MAX", "pmin": "MIN", "psum_scatter": "SUM"}


def _supported(name, args) -> bool:
    for a in args:
        if not isinstance(a, np.ndarray) or a.dtype.hasobject:
            return False
        if name in _REDUCTIONS:
            ok = _SUMMABLE if _REDUCTIONS[name] == "SUM" else _REDUCIBLE
            if a.dtype.char not in ok or not a.dtype.isnative:
                return False
    return True


class _Group:
    """One group of shards, as this process sees it."""

    def __init__(self, members, owners, rank):
        self.members = members
        self.procs = tuple(dict.fromkeys(owners[m] for m in members))  # by first member
        self.by_proc = [[m for m in members if owners[m] == p] for p in self.procs]
        self.order = [m for part in self.by_proc for m in part]  # members as buffers hold them
        self.mine = self.by_proc[self.procs.index(rank)] if rank in self.procs else []
        self.pos = {m: i for i, m in enumerate(members)}

    def counts(self, unit):
        return [len(part) * unit for part in self.by_proc]


def _my_groups(groups, owners, rank) -> list:
    """The groups holding members of this process (computed once per list of groups)."""
    key = (id(groups), rank)
    got = _MINE.get(key)
    if got is None or got[0] is not groups:
        got = _MINE[key] = (groups, [g for g in (_Group(m, owners, rank) for m in groups)
                                     if g.mine])
        if len(_MINE) > 64:  # one entry per call and axis set: keep the recent ones
            _MINE.pop(next(iter(_MINE)))
    return got[1]


_MINE: dict = {}


def publisher(name, params, groups, owners, call, combine, args):
    """What the last local shard to reach collective ``name`` (operands like ``args``) runs
    for all of this process's shards, worked out once per collective of a call:
    ``publish(values, who, agree)`` with the local shards' operands ``values``, their global
    indices ``who`` and ``agree(payload=None)``, the fingerprint check of
    ``mpi_comms.CallState.agree``. ``groups``: every group of global shards, in an order all
    processes share; ``combine``: the single-process combine functions by name. ``publish``
    returns global shard -> its outputs (one read-only array where local shards share it)."""
    rest = {k: v for k, v in params.items() if k != "axis_name"}
    supported = _supported(name, args)
    mine = _my_groups(groups, owners, call.rank)
    if supported and name in ("psum", "pmax", "pmin") and len(mine) == 1 and \
            _SmallReduction.fits(mine[0], args, call.ranks):
        return _SmallReduction(name, mine[0], combine)
    return functools.partial(_exchange, name, rest, supported, mine, owners, call.rank,
                             combine)


def _exchange(name, rest, supported, mine, owners, rank, combine, values, who, agree) -> dict:
    """Collective ``name`` for this process's shards, group by group (see the module's
    docstring), after every process agreed to run it."""
    local = dict(zip(who, values))
    agree()
    n_args = len(values[0])
    out = {g: [None] * n_args for g in local}
    spread = []  # groups over several processes (ppermute runs them all at once)
    for group in mine:
        members = group.members
        if len(group.procs) == 1 or not supported:
            _combine_here(name, rest, group, local, out, combine)
            continue
        spread.append(members)
        if name == "ppermute":
            continue
        comm = group_comm(group.procs)
        for k in range(n_args):
            xs = [local[m][k] for m in group.mine]
            results = _BUFFER_OPS[name](comm, group, xs, combine, name=name, **rest)
            for m, r in zip(group.mine, results):
                out[m][k] = r
    if name == "ppermute" and spread:
        _ppermute(spread, owners, rank, local, out, **rest)
    return out


class _SmallReduction:
    """A reduction of a few bytes within one group spanning every process of the call: the
    local parts travel with the fingerprint (one exchange instead of two) and every process
    combines them in the group's process order, so all get the same bits."""

    def __init__(self, name, group, combine):
        self.fn = combine[name]
        self.mine, self.procs = group.mine, group.procs

    @staticmethod
    def fits(group, args, ranks) -> bool:
        return sum(a.nbytes for a in args) <= SMALL and len(group.procs) > 1 and \
            sorted(group.procs) == list(ranks)

    def __call__(self, values, who, agree) -> dict:
        if len(who) == 1:  # the group holds every local shard
            xs = values
        else:
            local = dict(zip(who, values))
            xs = [local[m] for m in self.mine]
        if len(xs[0]) == 1:  # one operand: sent as it is, no packing
            parts = [self._part(xs, 0)]
            everyone = agree(parts[0])
        else:
            parts = [self._part(xs, k) for k in range(len(xs[0]))]
            everyone = agree(b"".join(p.tobytes() for p in parts))
        results, offset = [], 0
        for p in parts:
            got = [np.frombuffer(everyone[r], p.dtype, p.size, offset).reshape(p.shape)
                   for r in self.procs]
            offset += p.nbytes
            results.append(_share(self.fn(got, 0, p), len(xs))[0])
        return {m: list(results) for m in self.mine}

    def _part(self, xs, k):
        """Operand ``k`` of this process's members, combined in group order."""
        if len(xs) == 1:
            return _contiguous(xs[0][k])
        return _contiguous(self.fn([x[k] for x in xs], 0, xs[0][k]))


def _combine_here(name, rest, group, local, out, combine):
    """Every member's values here (a pickled allgather when other processes hold some), then
    each local member combines them as a single process would."""
    values = {m: local[m] for m in group.mine}
    if len(group.procs) > 1:
        for part in group_comm(group.procs).allgather(values):
            values.update(part)
    for m in group.mine:
        me = group.pos[m]
        for k, x in enumerate(local[m]):
            out[m][k] = combine[name]([values[j][k] for j in group.members], me, x, **rest)


def _contiguous(a):
    """``a`` C-contiguous, rank kept (``np.ascontiguousarray`` makes a 0-d array 1-d: a
    psum of per-shard scalars came back with shape (1,))."""
    return np.asarray(a, order="C")


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


def _share(value, n):
    """``value`` for ``n`` local shards. Several shards get the same array, made read-only
    (kernels never write their inputs, and any other write fails loudly instead of changing
    another shard's value): no copy per shard."""
    if n > 1:
        value = value.view()
        value.setflags(write=False)
    return [value] * n


def _local_part(name, xs, combine):
    """This process's part of a reduction: its shards' values combined in group order, in a
    pooled buffer (it is reduced in place next), or the only shard's own value."""
    if len(xs) == 1:
        return _contiguous(xs[0]), False
    if name in ("psum", "psum_scatter"):  # summed as collectives._psum sums, into the pool
        part = take(xs[0].shape, xs[0].dtype)
        np.add(xs[0], xs[1], out=part, dtype=xs[0].dtype)
        for v in xs[2:]:
            np.add(part, v, out=part)
        return part, True
    return _contiguous(combine[name](xs, 0, xs[0])), True


def _reduce(comm, group, xs, combine, *, name):
    from mpi4py import MPI
    op = getattr(MPI, _REDUCTIONS[name])
    part, own = _local_part(name, xs, combine)
    if own:  # a buffer of this collective's own: reduced in place
        comm.Allreduce(MPI.IN_PLACE, part, op=op)
        return _share(part, len(xs))
    total = take(part.shape, part.dtype)
    comm.Allreduce(part, total, op=op)
    return _share(total, len(xs))


def _all_gather(comm, group, xs, combine, *, name, axis, tiled):
    """``Allgather`` into the buffer that becomes the result where the layout allows (members
    stored by process in group order, gathered along the leading axis): no copy after it."""
    x = xs[0]
    n = len(group.members)
    gathered = take((n,) + x.shape, x.dtype)
    _gather_into(comm, group, xs, gathered)
    if group.order != group.members:  # buffers hold members by process
        where = {m: i for i, m in enumerate(group.order)}
        gathered = gathered[[where[m] for m in group.members]]
    if not tiled:
        result = gathered if axis == 0 else _moved(gathered, 0, axis)
    elif axis == 0:
        result = gathered.reshape((n * x.shape[0],) + x.shape[1:])
    else:
        result = _moved(gathered, 0, axis)
        result = result.reshape(x.shape[:axis] + (n * x.shape[axis],) + x.shape[axis + 1:])
    return _share(result, len(xs))


def _gather_into(comm, group, xs, gathered):
    """Every member's value into ``gathered`` (members by process, in group order). One local
    shard sends its own buffer; several are written to their places in ``gathered`` and
    gathered in place (no stacked copy)."""
    from mpi4py import MPI
    counts = group.counts(xs[0].nbytes)
    equal = len(set(counts)) == 1
    displs = np.cumsum([0] + counts[:-1]).tolist()
    recv = [_bytes(gathered), MPI.BYTE] if equal else \
        [_bytes(gathered), (counts, displs), MPI.BYTE]
    if len(xs) == 1:
        send = [_bytes(_contiguous(xs[0])), MPI.BYTE]
    else:
        first = group.order.index(group.mine[0])
        for i, v in enumerate(xs):
            gathered[first + i] = v
        send = MPI.IN_PLACE
    if equal:
        comm.Allgather(send, recv)
    else:
        comm.Allgatherv(send, recv)


def _moved(a, source, destination):
    """``np.moveaxis(a, source, destination)`` as a C-contiguous array from the pool."""
    moved = np.moveaxis(a, source, destination)
    out = take(moved.shape, a.dtype)
    out[...] = moved
    return out


def _psum_scatter(comm, group, xs, combine, *, name, scatter_dimension, tiled):
    from mpi4py import MPI
    n, sd = len(group.members), scatter_dimension
    part, _ = _local_part("psum", xs, combine)
    blocks = np.moveaxis(part, sd, 0).reshape((n, -1))  # block j: member j's share
    if group.order != group.members:
        blocks = blocks[[group.pos[m] for m in group.order]]
    blocks = _contiguous(blocks)
    mine = take((len(xs), blocks.shape[1]), part.dtype)
    counts = group.counts(blocks.shape[1])
    if len(set(counts)) == 1:
        comm.Reduce_scatter_block(blocks, mine, op=MPI.SUM)
    else:
        comm.Reduce_scatter(blocks, mine, counts, op=MPI.SUM)
    shape = list(part.shape)
    del shape[sd]
    if not tiled:
        return [b.reshape(shape) for b in mine]
    chunk = (part.shape[sd] // n,) + tuple(shape)
    return [_contiguous(np.moveaxis(b.reshape(chunk), 0, sd)) for b in mine]


def _all_to_all(comm, group, xs, combine, *, name, split_axis, concat_axis, tiled):
    from mpi4py import MPI
    n, x = len(group.members), xs[0]
    sa = split_axis
    # blocks[s, d]: what local member s sends member d (d in buffer order, by process).
    blocks = np.stack([np.moveaxis(v, sa, 0).reshape((n, -1)) for v in xs])
    if group.order != group.members:
        blocks = blocks[:, [group.pos[m] for m in group.order]]
    send = _contiguous(blocks.transpose(1, 0, 2))  # (dest, local source, block)
    unit = blocks.shape[2] * x.dtype.itemsize
    # From process p: for each local destination, one block from each of p's members.
    recv = np.empty(n * len(xs) * blocks.shape[2], x.dtype)
    send_counts = [len(part) * len(xs) * unit for part in group.by_proc]
    if len(set(send_counts)) == 1:
        comm.Alltoall([_bytes(send), MPI.BYTE], [_bytes(recv), MPI.BYTE])
    else:
        displs = np.cumsum([0] + send_counts[:-1]).tolist()
        comm.Alltoallv([_bytes(send), (send_counts, displs), MPI.BYTE],
                       [_bytes(recv), (send_counts, displs), MPI.BYTE])
    chunks = {}  # (source member, local destination index) -> block
    offset = 0
    for part in group.by_proc:
        got = recv[offset:offset + len(part) * len(xs) * blocks.shape[2]]
        got = got.reshape((len(xs), len(part), blocks.shape[2]))
        offset += got.size
        for j in range(len(xs)):
            for i, s in enumerate(part):
                chunks[s, j] = got[j, i]
    moved = list(np.moveaxis(x, sa, 0).shape)
    chunk_shape = (moved[0] // n,) + tuple(moved[1:]) if tiled else tuple(moved[1:])
    results = []
    for j in range(len(xs)):
        parts = [chunks[s, j].reshape(chunk_shape) for s in group.members]
        if tiled:
            results.append(np.concatenate([np.moveaxis(p, 0, sa) for p in parts], concat_axis))
        else:
            results.append(np.stack(parts, concat_axis))
    return results


def _ppermute(groups, owners, rank, local, out, *, perm):
    """Point-to-point: a process sends only what its members' targets elsewhere need, and
    receives only from the processes holding its members' sources. Both sides walk the
    groups, pairs and operands in the same order, so messages match in order."""
    from mpi4py import MPI
    comm, requests = data_comm(), []
    for members in groups:
        for src, dst in perm:
            s, d = members[src], members[dst]
            if owners[s] == rank and owners[d] == rank:
                for k, x in enumerate(local[s]):
                    out[d][k] = np.array(x)
            elif owners[s] == rank:
                for x in local[s]:
                    buf = _contiguous(x)
                    requests.append((comm.Isend([_bytes(buf), MPI.BYTE], dest=owners[d]), buf))
            elif owners[d] == rank:
                for k, x in enumerate(local[d]):
                    buf = out[d][k] = np.empty_like(x)
                    requests.append((comm.Irecv([_bytes(buf), MPI.BYTE], source=owners[s]), buf))
    MPI.Request.Waitall([r for r, _ in requests])
    for d, outs in out.items():  # members no source sends to get zeros
        for k, x in enumerate(local[d]):
            if outs[k] is None:
                outs[k] = np.zeros_like(x)


_BUFFER_OPS = {"psum": _reduce, "pmax": _reduce, "pmin": _reduce, "all_gather": _all_gather,
               "psum_scatter": _psum_scatter, "all_to_all": _all_to_all}
