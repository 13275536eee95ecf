"""``pmap``: map a function over an axis, one slice per device, in parallel (JAX's signature).
The per-shard program is traced once per argument signature and bound as the ``shard_map``
primitive on a one-axis mesh of the devices; repeated calls with arrays of a seen signature
take a fast path (as jit's).

    >>> ft.pmap(lambda x: x * 2)(fnp.arange(2.0))
    Array([0., 2.], dtype=float64)
"""
from __future__ import annotations

import functools

import numpy as np

from functrans.core.api_util import fun_name, match_prefix, merge_static, split_static
from functrans.core.array import Array
from functrans.core.avals import ShapedArray
from functrans.core.axis_env import _env as _axis_env
from functrans.core.config import config
from functrans.core.devices import devices as all_devices, local_devices, processes
from functrans.core.mesh import Mesh, NamedSharding, PartitionSpec
from functrans.core.trace import EVAL_TRACE, _state, get_aval
from functrans.core.tree import tree_flatten, tree_unflatten
from functrans.primitives.shard_map import shard_map_p
from functrans.primitives.structural import squeeze_p
from functrans.transforms import ops
from functrans.transforms.batching import (_axis_size, _check_axes_spec, _leaf_labels,
                                           _normalize_in_axis)
from functrans.transforms.jit.api import _fast_key as _jit_fast_key

from .per_shard import TraceCache, replicated, trace_per_shard

__all__ = ["pmap"]


class _AnonymousAxis:
    """The axis of a pmap without ``axis_name``: no collective can name it."""

    def __repr__(self):
        return "<anonymous pmap axis>"


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
    """Map ``fun`` over a leading (or ``in_axes``) axis, one slice per device, in parallel.

    The mapped size must not exceed the number of (local) devices; collectives over
    ``axis_name`` communicate between the devices. The result is sharded over them.

    >>> ft.pmap(lambda x: x * 2)(fnp.arange(2.0))
    Array([0., 2.], dtype=float64)
    """
    what = f"pmap({fun_name(fun)})"
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, what, "in_axes")
    _check_axes_spec(out_axes, what, "out_axes")
    if backend not in (None, "cpu"):
        from functrans.core.devices import check_backend
        check_backend(backend)
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    name = axis_name if axis_name is not None else _AnonymousAxis()
    cache = TraceCache()
    fast: dict = {}  # positional array arguments seen before -> runner (as jit's fast path)
    simple_axes = all(a in (0, None) for a in tree_flatten(
        in_axes, is_leaf=lambda x: x is None)[0]) and not static

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        if not kwargs and simple_axes and _state.trace is EVAL_TRACE:
            key = _fast_key(args)
            runner = fast.get(key) if key is not None else None
            if runner is not None:
                return runner(args)
        dyn_args, dyn_kwargs, static_args, _ = split_static(args, kwargs, static, ())
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        axes = match_prefix((in_axes, 0), (dyn_args, dyn_kwargs), what, "in_axes", "arguments")
        labels = _leaf_labels(fun, dyn_args, dyn_kwargs)
        axes = [_normalize_in_axis(a, x, lab, what) for a, x, lab in zip(axes, leaves, labels)]
        n = _axis_size(leaves, axes, labels, axis_size, what)
        devs, local_io = _pmap_devices(devices, n, what)
        mesh = Mesh(np.array(devs, dtype=object), (name,))
        xs = [x if a is None else ops.moveaxis(x, a, 0) if a else x
              for x, a in zip(leaves, axes)]
        avals = [get_aval(x) for x in xs]
        blocks = [a if ax is None else ShapedArray((1,) + tuple(a.shape[1:]), a.dtype,
                                                   a.weak_type) for a, ax in zip(avals, axes)]
        key = (in_tree, tuple(avals), tuple(a is None for a in axes), static_args,
               config.key(), _axis_env.frames, mesh)
        out_store = {}

        def body(*bs):
            ins = [b if ax is None else squeeze_p.bind1(b, dimensions=(0,))
                   for b, ax in zip(bs, axes)]
            a, k = tree_unflatten(in_tree, ins)
            out = fun(*merge_static(a, static_args), **k)
            out_leaves, tree = tree_flatten(out)
            o_axes = match_prefix(out_axes, out, what, "out_axes", "outputs")
            out_store["tree"], out_store["axes"] = tree, o_axes
            return [o if ax is None else ops.broadcast(o, (1,) + get_aval(o).shape, tuple(
                range(1, get_aval(o).ndim + 1))) for o, ax in zip(out_leaves, o_axes)]

        def make():
            jaxpr, consts = trace_per_shard(body, blocks, mesh, f"pmap({fun_name(fun)})")
            return jaxpr, consts, out_store["tree"], out_store["axes"]

        # Under another transformation the function is traced afresh, as JAX's pmap is (its
        # Python side effects run again: haiku's summaries record module calls then).
        jaxpr, consts, out_tree, o_axes = cache.get(key, make) if _state.trace is EVAL_TRACE \
            else make()
        in_specs = [replicated(c) for c in consts] + [
            replicated(x) if ax is None else ((name,),) + ((),) * (get_aval(x).ndim - 1)
            for x, ax in zip(xs, axes)]
        out_specs = [((),) * a.ndim if ax is None else ((name,),) + ((),) * (a.ndim - 1)
                     for a, ax in zip(jaxpr.out_avals, o_axes)]
        params = dict(jaxpr=jaxpr, mesh=mesh, in_specs=tuple(in_specs),
                      out_specs=tuple(out_specs), name=f"pmap({fun_name(fun)})",
                      local_io=local_io)
        finish = _outputs(o_axes, out_tree, NamedSharding(mesh, PartitionSpec(name)), what)
        if (not kwargs and simple_axes and not consts and _state.trace is EVAL_TRACE
                and len(leaves) == len(args) and len(fast) < config.jit_cache_size):
            key = _fast_key(args)
            if key is not None:
                fast[key] = lambda a: finish(shard_map_p.bind_all(*a, **params))
        return finish(shard_map_p.bind_all(*consts, *xs, **params))

    return pmapped


def _outputs(o_axes, out_tree, sharding, what):
    """Put each output's mapped axis where out_axes says and rebuild the output tree."""
    def finish(outs):
        result = []
        for o, ax in zip(outs, o_axes):
            if ax is not None:
                nd = get_aval(o).ndim
                if not -nd <= ax < nd:
                    raise ValueError(f"{what}: out_axes {ax} is out of range for an output "
                                     f"of rank {nd}")
                if ax % nd:
                    o = ops.moveaxis(o, 0, ax % nd)
                elif type(o) is Array:
                    o = o._with_sharding(sharding)
            result.append(o)
        return tree_unflatten(out_tree, result)
    return finish


def _fast_key(args):
    """jit's cheap signature of positional arrays, plus what decides the devices."""
    key = _jit_fast_key(args)
    return None if key is None else key + (config.num_cpu_devices, processes.count)


def _pmap_devices(devices, n, what):
    """The devices to map over, and whether arguments hold only this process's blocks."""
    if devices is not None:
        devs = list(devices)
        if len(devs) != n:
            raise ValueError(f"{what}: the mapped axis has size {n} but {len(devs)} devices "
                             "were given; they must match")
        return devs, False
    devs = local_devices()
    if processes.count > 1 and n == len(devs):
        # As in JAX: across processes each passes its local devices' slices and the
        # collectives span every process's devices.
        return all_devices(), True
    if n > len(devs):
        raise ValueError(f"{what}: the mapped axis has size {n}, more than the {len(devs)} "
                         f"available devices; use a size <= {len(devs)} (vmap inside pmap "
                         "for more), or raise ft.config.update('num_cpu_devices', n)")
    if n < 1:
        raise ValueError(f"{what}: the mapped axis has size 0; pmap needs at least one slice")
    return devs[:n], False
