"""Collectives between shards running on devices: what ``psum``, ``all_gather``, ``ppermute``
... compute when a shard's program evaluates them (under ``vmap`` their batching rules compute
them instead, in ``functrans.primitives.collectives``, whose impls call
:func:`device_collective` as ``core.shard_env.collective``, installed by ``runtime.py``).

Within one process every collective is one exchange of all shards' values (see
``runtime.Rendezvous``); each shard then combines the values of its group in the same order,
so every member of a group gets bit-identical results. When the shards are spread over MPI
processes, the last local shard to arrive runs the collective for all local shards as MPI
buffer operations (``mpi_buffers.py``). Either way the shards first check that they all
reached the same collective (``divergence.py``).
"""
from __future__ import annotations

import numpy as np

from functrans.core.axis_env import axis_size
from functrans.core.shard_env import current_shard

from .divergence import fingerprint


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def device_collective(name: str, args, params) -> list:
    """Evaluate collective ``name`` for the shard the calling thread runs."""
    names = _names(params["axis_name"])
    ctx = current_shard()
    if ctx is None or any(n not in ctx.sizes for n in names):
        for n in names:
            axis_size(n)  # raises the unbound-axis NameError when the name is not in scope
        raise NameError(f"{name} over {params['axis_name']!r}: the axis is bound by tracing "
                        "but no pmap/shard_map is running it on devices")
    if name == "axis_index":
        return [np.asarray(ctx.position(names), np.int32)]
    fp = fingerprint(name, names, args, params)
    if ctx.rendezvous.call is not None:
        return _across_processes(name, names, args, params, ctx, fp)
    # Several operands (psum of a pytree) share one exchange.
    values = ctx.exchange(args, fp)
    group = ctx.group(names)
    me = group.index(ctx.global_index)
    rest = {k: v for k, v in params.items() if k != "axis_name"}
    return [_COMBINE[name]([values[g][k] for g in group], me, x, **rest)
            for k, x in enumerate(args)]


def _across_processes(name, names, args, params, ctx, fp) -> list:
    args = tuple(np.asarray(a) for a in args)
    rendezvous = ctx.rendezvous
    publish = rendezvous.plans.get(fp)
    if publish is None:  # worked out once per collective of the call
        from .mpi_buffers import publisher
        publish = rendezvous.plans[fp] = publisher(
            name, params, _all_groups(ctx, names), rendezvous.owners, rendezvous.call,
            _COMBINE, args)
    return ctx.exchange(args, fp, publish)[ctx.global_index]


def _all_groups(ctx, names) -> list:
    """Every group of global shards that a collective over ``names`` spans (each ordered by
    position along ``names``), in the order of their first shard: the same on every process."""
    memo = ctx.rendezvous.memo
    groups = memo.get(names)
    if groups is None:
        others = [n for n in ctx.sizes if n not in names]
        by_rest: dict = {}
        for g, c in enumerate(ctx.all_coords):
            by_rest.setdefault(tuple(c[n] for n in others), []).append(g)
        groups = memo[names] = [sorted(m, key=lambda g: ctx.position(names, ctx.all_coords[g]))
                                for m in by_rest.values()]
    return groups


def _psum(xs, me, x):
    # Summed in group order, so every member gets the same bits; no stacked copy.
    if len(xs) == 1:
        return np.array(xs[0], dtype=x.dtype)
    total = np.asarray(np.add(xs[0], xs[1], dtype=x.dtype))  # (0-d: a NumPy scalar)
    for v in xs[2:]:
        np.add(total, v, out=total)
    return total


def _pmax(xs, me, x):
    return np.max(np.stack(xs), axis=0)


def _pmin(xs, me, x):
    return np.min(np.stack(xs), axis=0)


def _all_gather(xs, me, x, *, axis, tiled):
    return np.concatenate(xs, axis) if tiled else np.stack(xs, axis)


def _psum_scatter(xs, me, x, *, scatter_dimension, tiled):
    total = _psum(xs, me, x)
    if tiled:
        return np.ascontiguousarray(np.split(total, len(xs), scatter_dimension)[me])
    return np.ascontiguousarray(np.take(total, me, axis=scatter_dimension))


def _ppermute(xs, me, x, *, perm):
    for src, dst in perm:
        if dst == me:
            return xs[src]
    return np.zeros_like(x)


def _all_to_all(xs, me, x, *, split_axis, concat_axis, tiled):
    n = len(xs)
    if tiled:
        parts = [np.split(v, n, split_axis)[me] for v in xs]
        return np.concatenate(parts, concat_axis)
    parts = [np.take(v, me, axis=split_axis) for v in xs]
    return np.stack(parts, concat_axis)


_COMBINE = {"psum": _psum, "pmax": _pmax, "pmin": _pmin, "all_gather": _all_gather,
            "psum_scatter": _psum_scatter, "ppermute": _ppermute, "all_to_all": _all_to_all}
