"""Collectives over named axes: psum, pmax, pmin, psum_scatter, all_gather, axis_index,
ppermute, all_to_all.

They only mean something inside ``vmap(..., axis_name=...)``, ``pmap`` or ``shard_map``: under
vmap the batching rule of the trace that owns the name evaluates them across the batch; in a
shard running on a device their impl exchanges values with the other shards (the SPMD
runtime's ``transforms.parallel.collectives``, reached through ``core.shard_env``). Outside,
their type rule raises an unbound-axis error::

    >>> ft.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(fnp.arange(3.0))
    Array([3., 3., 3.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core import shard_env
from ..core.avals import ShapedArray
from ..core.axis_env import axis_size
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.rules import Zero, defjvp, deflinear, is_zero
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis
from . import elementwise as E
from . import reductions as R
from . import structural as S
from .indexing import gather_p


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _device_impl(name):
    def impl(*args, **params):  # a shard on a device evaluates it (unbound names raise)
        return shard_env.collective(name, args, params)
    return impl


def _collective(name, abstract_eval):
    prim = Primitive(name, impl=_device_impl(name), abstract_eval=abstract_eval)
    prim.named_axis_rule = True  # the batch trace must see it even for unbatched operands
    prim.host_only = True  # shards exchange values through the host, between kernels
    return prim


def _same_type(*avals, axis_name, **params):
    for n in _names(axis_name):
        axis_size(n)
    return list(avals)


psum_p = _collective("psum", _same_type)
psum_p.multiple_results = True  # one sum per operand (lax.psum binds the leaves at once)
pmax_p = _collective("pmax", _same_type)
pmin_p = _collective("pmin", _same_type)
ppermute_p = _collective("ppermute", _same_type)


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled):
    n = axis_size(axis_name)
    shape = list(x.shape)
    if tiled:
        shape[axis] *= n
    else:
        shape.insert(axis, n)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


all_gather_p = _collective("all_gather", _all_gather_abstract_eval)


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled):
    n = axis_size(axis_name)
    shape = list(x.shape)
    if tiled:
        if shape[scatter_dimension] % n:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of {x.str_short()} is "
                             f"not divisible by the axis size {n}")
        shape[scatter_dimension] //= n
    else:
        if shape[scatter_dimension] != n:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of {x.str_short()} "
                             f"must equal the axis size {n} (or pass tiled=True)")
        del shape[scatter_dimension]
    return [ShapedArray(shape, x.dtype, x.weak_type)]


psum_scatter_p = _collective("psum_scatter", _psum_scatter_abstract_eval)


def _axis_index_abstract_eval(*, axis_name):
    axis_size(axis_name)
    return [ShapedArray((), np.dtype(np.int32))]


axis_index_p = _collective("axis_index", _axis_index_abstract_eval)


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, tiled):
    """tiled: the split axis shrinks n-fold and the concat axis grows n-fold; untiled: the
    split axis (of size n) is removed and a new axis of size n appears at concat_axis."""
    n = axis_size(axis_name)
    shape = list(x.shape)
    if tiled:
        if shape[split_axis] % n:
            raise ValueError(f"all_to_all: split_axis {split_axis} of {x.str_short()} must be "
                             f"divisible by the axis size {n}")
        shape[split_axis] //= n
        shape[concat_axis] *= n
    else:
        if shape[split_axis] != n:
            raise ValueError(f"all_to_all: split_axis {split_axis} of {x.str_short()} must "
                             f"have the axis size {n} (or pass tiled=True)")
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


all_to_all_p = _collective("all_to_all", _all_to_all_abstract_eval)


# ---- batching: where the collectives are actually computed ---------------------------------------
def _rest(names, axis):
    return tuple(n for n in names if n != axis.name)


def _reduce_rule(prim, reducer, unbatched):
    def rule(axis, vals, dims, *, axis_name):
        names = _names(axis_name)
        outs, out_dims = [], []
        for x, d in zip(vals, dims):
            if axis.name not in names:  # another (outer) axis: elementwise over this batch
                outs.append(prim.bind1(x, axis_name=axis_name))
                out_dims.append(d)
                continue
            y = reducer.bind1(x, axes=(d,)) if d is not None else unbatched(x, axis.size)
            rest = _rest(names, axis)
            outs.append(prim.bind1(y, axis_name=rest) if rest else y)
            out_dims.append(None)
        return outs, out_dims
    return rule


def _times_size(x, n):
    return E.mul_p.bind1(x, np.asarray(n, get_aval(x).dtype)[()])


batching_rules[psum_p] = _reduce_rule(psum_p, R.reduce_sum_p, _times_size)
batching_rules[pmax_p] = _reduce_rule(pmax_p, R.reduce_max_p, lambda x, n: x)
batching_rules[pmin_p] = _reduce_rule(pmin_p, R.reduce_min_p, lambda x, n: x)


def _all_gather_rule(axis_data, vals, dims, **params):
    (x,), (d,) = vals, dims
    names = _names(params["axis_name"])
    pos, tiled = params["axis"], params["tiled"]
    if axis_data.name not in names:  # another (outer) axis: gather each batch member
        if d is None:
            return [all_gather_p.bind1(x, **params)], [None]
        # `axis` counts the unbatched dims: with the batch dim in front it is one further.
        x = bdim_at_front(x, d, axis_data.size)
        return [all_gather_p.bind1(x, **dict(params, axis=pos + 1))], [0]
    if len(names) > 1:
        raise NotImplementedError("all_gather over several axis names at once")
    x = bdim_at_front(x, d, axis_data.size)
    y = moveaxis(x, 0, pos)
    if tiled:
        shape = list(get_aval(y).shape)
        merged = shape[:pos] + [shape[pos] * shape[pos + 1]] + shape[pos + 2:]
        y = S.reshape_p.bind1(y, new_sizes=tuple(merged))
    return [y], [None]


batching_rules[all_gather_p] = _all_gather_rule


def _psum_scatter_rule(axis, vals, dims, *, axis_name, scatter_dimension, tiled):
    (x,), (d,) = vals, dims
    names = _names(axis_name)
    if axis.name not in names:  # another (outer) axis: scatter each batch member
        if d is None:
            return [psum_scatter_p.bind1(x, axis_name=axis_name,
                                         scatter_dimension=scatter_dimension, tiled=tiled)], [None]
        x = bdim_at_front(x, d, axis.size)  # the scatter dimension is one further
        return [psum_scatter_p.bind1(x, axis_name=axis_name,
                                     scatter_dimension=scatter_dimension + 1, tiled=tiled)], [0]
    x = bdim_at_front(x, d, axis.size)
    total = R.reduce_sum_p.bind1(x, axes=(0,))  # every member's sum
    n = axis.size
    sd = scatter_dimension
    if tiled:  # member i keeps chunk i of the summed array
        shape = list(get_aval(total).shape)
        split = shape[:sd] + [n, shape[sd] // n] + shape[sd + 1:]
        total = S.reshape_p.bind1(total, new_sizes=tuple(split))
    return [moveaxis(total, sd, 0)], [0]


batching_rules[psum_scatter_p] = _psum_scatter_rule


def _axis_index_rule(axis, vals, dims, *, axis_name):
    if axis.name != axis_name:
        return [axis_index_p.bind1(axis_name=axis_name)], [None]
    return [S.iota_p.bind1(dtype=np.dtype(np.int32), shape=(axis.size,), dimension=0)], [0]


batching_rules[axis_index_p] = _axis_index_rule


def _ppermute_rule(axis, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if axis.name != axis_name:
        return [ppermute_p.bind1(x, axis_name=axis_name, perm=perm)], [d]
    n = axis.size
    source = np.full(n, -1)
    for src, dst in perm:
        source[dst] = src
    x = bdim_at_front(x, d, n)
    idx = np.asarray(np.where(source < 0, 0, source), np.int64)
    moved = gather_p.bind1(x, idx, axes=(0,), mode="clip", fill_value=None)
    if (source >= 0).all():
        return [moved], [0]
    keep = S.broadcast_in_dim_p.bind1(np.asarray(source >= 0), shape=get_aval(moved).shape,
                                      broadcast_dimensions=(0,))
    zeros = S.broadcast_in_dim_p.bind1(np.zeros((), get_aval(x).dtype)[()],
                                       shape=get_aval(moved).shape, broadcast_dimensions=())
    return [E.select_n_p.bind1(keep, zeros, moved)], [0]


batching_rules[ppermute_p] = _ppermute_rule


def _all_to_all_rule(axis, vals, dims, *, axis_name, split_axis, concat_axis, tiled):
    (x,), (d,) = vals, dims
    n = axis.size
    x = bdim_at_front(x, d, n)
    if axis.name != axis_name:
        out = all_to_all_p.bind1(x, axis_name=axis_name, split_axis=split_axis + 1,
                                 concat_axis=concat_axis + 1, tiled=tiled)
        return [out], [0]
    # x is (n_src, *member shape). Member dst receives chunk dst of every source.
    if tiled:
        shape = list(get_aval(x).shape)
        sa = split_axis + 1
        split = shape[:sa] + [n, shape[sa] // n] + shape[sa + 1:]
        y = moveaxis(S.reshape_p.bind1(x, new_sizes=tuple(split)), sa, 0)
        # (n_dst, n_src, *member shape with the split axis now one chunk): sources go just
        # before the concat axis and merge with it.
        y = moveaxis(y, 1, 1 + concat_axis)
        shp = list(get_aval(y).shape)
        c = 1 + concat_axis
        merged = shp[:c] + [shp[c] * shp[c + 1]] + shp[c + 2:]
        return [S.reshape_p.bind1(y, new_sizes=tuple(merged))], [0]
    y = moveaxis(x, 1 + split_axis, 0)  # (n_dst, n_src, *member shape without the split axis)
    return [moveaxis(y, 1, 1 + concat_axis)], [0]


batching_rules[all_to_all_p] = _all_to_all_rule


# ---- differentiation ---------------------------------------------------------------------------
def _psum_transpose(cts, *xs, axis_name):
    live = [ct for ct in cts if not is_zero(ct)]
    sums = iter(psum_p.bind_all(*live, axis_name=axis_name) if live else [])
    return [Zero(x.aval) if is_zero(ct) else next(sums) for ct, x in zip(cts, xs)]


def _all_gather_transpose(cts, x, *, axis_name, axis, tiled):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [psum_scatter_p.bind1(ct, axis_name=axis_name, scatter_dimension=axis, tiled=tiled)]


def _psum_scatter_transpose(cts, x, *, axis_name, scatter_dimension, tiled):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [all_gather_p.bind1(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled)]


def _ppermute_transpose(cts, x, *, axis_name, perm):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [ppermute_p.bind1(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))]


def _all_to_all_transpose(cts, x, *, axis_name, split_axis, concat_axis, tiled):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [all_to_all_p.bind1(ct, axis_name=axis_name, split_axis=concat_axis,
                               concat_axis=split_axis, tiled=tiled)]


def _pextremum_jvp(g, ans, x, *, axis_name):
    # Ties share the tangent evenly across the members holding the extremum, like the
    # reduce_max/reduce_min rule that vmap turns pmax/pmin into.
    hit = E.convert_element_type_p.bind1(E.eq_p.bind1(x, ans), new_dtype=get_aval(g).dtype,
                                         weak_type=False)
    num = psum_p.bind1(E.mul_p.bind1(g, hit), axis_name=axis_name)
    return E.div_p.bind1(num, psum_p.bind1(hit, axis_name=axis_name))


defjvp(pmax_p, _pextremum_jvp)
defjvp(pmin_p, _pextremum_jvp)
deflinear(psum_p, _psum_transpose)
deflinear(all_gather_p, _all_gather_transpose)
deflinear(psum_scatter_p, _psum_scatter_transpose)
deflinear(ppermute_p, _ppermute_transpose)
deflinear(all_to_all_p, _all_to_all_transpose)
