"""Reductions (reduce_sum/max/min/prod/and/or, argmax/argmin) and cumulative ops
(cumsum/cumprod/cummax/cummin/cumlogsumexp), built by the :func:`reducer` and
:func:`cumulative` category factories.

    >>> reduce_sum_p.bind1(np.ones((2, 3)), axes=(1,))
    Array([3., 3.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.dtypes import kind as dtype_kind
from ..core.trace import Primitive
from . import complex_order
from .elementwise import check_dtypes
from .structural import _check_axes


def _identity(ufunc, dtype):
    """The reduction's identity: what reducing an empty axis gives (XLA semantics)."""
    k = dtype_kind(dtype)
    if k == "c" and ufunc in (np.maximum, np.minimum):
        return complex_order.identity(ufunc is np.maximum, dtype)
    if ufunc is np.maximum:
        return -np.inf if k == "f" else (False if k == "b" else np.iinfo(dtype).min)
    if ufunc is np.minimum:
        return np.inf if k == "f" else (True if k == "b" else np.iinfo(dtype).max)
    if ufunc is np.bitwise_and:
        return True if k == "b" else -1 if k == "i" else np.iinfo(dtype).max
    return {np.add: 0, np.multiply: 1, np.bitwise_or: 0}[ufunc]


def reducer(name, ufunc, kinds) -> Primitive:
    """A reduction primitive over ``axes`` with the monoid ``ufunc``."""
    def abstract_eval(x, *, axes):
        _check_axes(name, axes, x.ndim)
        d = check_dtypes(name, [x], kinds)
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, d, x.weak_type)]

    def impl(x, *, axes):
        if x.dtype.kind == "c" and ufunc in (np.maximum, np.minimum):
            return [complex_order.reduce(x, axes, ufunc is np.maximum)]
        with np.errstate(all="ignore"):
            if ufunc is np.add or ufunc is np.multiply:
                return [ufunc.reduce(x, axis=axes, dtype=x.dtype)]
            return [ufunc.reduce(x, axis=axes, initial=_identity(ufunc, x.dtype))]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"reduction"})


reduce_sum_p = reducer("reduce_sum", np.add, "iufc")
reduce_prod_p = reducer("reduce_prod", np.multiply, "iufc")
# Complex values reduce in JAX's lexicographic order (primitives/complex_order.py).
reduce_max_p = reducer("reduce_max", np.maximum, "iufbc")
reduce_min_p = reducer("reduce_min", np.minimum, "iufbc")
reduce_and_p = reducer("reduce_and", np.bitwise_and, "iub")
reduce_or_p = reducer("reduce_or", np.bitwise_or, "iub")


def _arg_reducer(name, np_fn):
    def abstract_eval(x, *, axes, index_dtype):
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        _check_axes(name, axes, x.ndim)
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: cannot reduce the empty axis {axes[0]} of {x.str_short()}")
        if dtype_kind(np.dtype(index_dtype)) not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        check_dtypes(name, [x], "iufb")  # JAX's argmax/argmin refuse complex numbers too
        shape = tuple(s for i, s in enumerate(x.shape) if i != axes[0])
        return [ShapedArray(shape, np.dtype(index_dtype))]

    def impl(x, *, axes, index_dtype):
        return [np_fn(x, axis=axes[0]).astype(index_dtype)]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"reduction"})


argmax_p = _arg_reducer("argmax", np.argmax)
argmin_p = _arg_reducer("argmin", np.argmin)


def cumulative(name, accumulate, kinds, reversible=False) -> Primitive:
    """A scan along ``axis`` (optionally ``reverse``) with a NumPy accumulate function
    (``reversible``: one that takes ``reverse`` itself)."""
    def abstract_eval(x, *, axis, reverse):
        _check_axes(name, (axis,), x.ndim, "axis")
        check_dtypes(name, [x], kinds)
        return [x]

    def impl(x, *, axis, reverse):
        with np.errstate(all="ignore"):
            if reversible:
                return [accumulate(x, axis, reverse)]
            if reverse:
                return [np.flip(accumulate(np.flip(x, axis), axis), axis)]
            return [accumulate(x, axis)]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"cumulative"})


cumsum_p = cumulative("cumsum", lambda x, a: np.cumsum(x, a, dtype=x.dtype), "iufc")
cumprod_p = cumulative("cumprod", lambda x, a: np.cumprod(x, a, dtype=x.dtype), "iufc")


def _running(ufunc, is_max):
    def run(x, axis, reverse):
        if x.dtype.kind == "c":  # JAX's lexicographic order (primitives/complex_order.py)
            return complex_order.accumulate(x, axis, reverse, is_max)
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis), axis)
        return ufunc.accumulate(x, axis)
    return run


cummax_p = cumulative("cummax", _running(np.maximum, True), "iufc", reversible=True)
cummin_p = cumulative("cummin", _running(np.minimum, False), "iufc", reversible=True)
cumlogsumexp_p = cumulative("cumlogsumexp", lambda x, a: np.logaddexp.accumulate(x, a), "f")


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.jvp import jvp_flat  # noqa: E402
from ..transforms.autodiff.rules import (Zero, defjvp, defjvp_zero, deflinear,  # noqa: E402
                                         instantiate, is_zero, jvp_rules)
from . import elementwise as E  # noqa: E402
from . import structural as S  # noqa: E402


def _expand_back(x, in_shape, axes):
    """Broadcast a reduced value back over the reduced axes."""
    kept = tuple(d for d in range(len(in_shape)) if d not in axes)
    return S.broadcast_in_dim_p.bind1(x, shape=tuple(in_shape), broadcast_dimensions=kept)


def _reduce_sum_transpose(cts, x, *, axes):
    ct = cts[0]
    return [Zero(x.aval) if is_zero(ct) else _expand_back(ct, x.aval.shape, axes)]


deflinear(reduce_sum_p, _reduce_sum_transpose)
for _p in (argmax_p, argmin_p, reduce_and_p, reduce_or_p):
    defjvp_zero(_p)


def _extremum_jvp(g, ans, x, *, axes):
    # Ties share the tangent evenly (the mean of the tied elements' tangents), as in JAX.
    shape = get_aval(x).shape
    hit = E.convert_element_type_p.bind1(
        E.eq_p.bind1(x, _expand_back(ans, shape, axes)), new_dtype=get_aval(g).dtype,
        weak_type=False)
    num = reduce_sum_p.bind1(E.mul_p.bind1(g, hit), axes=axes)
    return E.div_p.bind1(num, reduce_sum_p.bind1(hit, axes=axes))


defjvp(reduce_max_p, _extremum_jvp)
defjvp(reduce_min_p, _extremum_jvp)


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod = sum_i t_i * prod_{j != i} x_j, with the exclusive products from a left and a
    # right cumulative product: exact when some x_j are zero (no division).
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind1(x, axes=axes)
    if is_zero(t):
        return [ans], [Zero(get_aval(ans))]
    aval = get_aval(x)
    kept = [d for d in range(aval.ndim) if d not in axes]
    perm = tuple(kept + list(axes))
    n = int(np.prod([aval.shape[a] for a in axes])) if axes else 1
    lead = tuple(aval.shape[d] for d in kept)
    flat = lambda v: S.reshape_p.bind1(S.transpose_p.bind1(v, permutation=perm),  # noqa: E731
                                       new_sizes=lead + (n,))
    xf, tf = flat(x), flat(t)
    one = np.ones((), aval.dtype)[()]
    pad_lo = tuple([(0, 0, 0)] * len(lead) + [(1, -1, 0)])
    pad_hi = tuple([(0, 0, 0)] * len(lead) + [(-1, 1, 0)])
    ax = len(lead)
    left = S.pad_p.bind1(cumprod_p.bind1(xf, axis=ax, reverse=False), one, padding_config=pad_lo)
    right = S.pad_p.bind1(cumprod_p.bind1(xf, axis=ax, reverse=True), one, padding_config=pad_hi)
    others = E.mul_p.bind1(left, right)
    return [ans], [reduce_sum_p.bind1(E.mul_p.bind1(tf, others), axes=(ax,))]


jvp_rules[reduce_prod_p] = _reduce_prod_jvp


def _cumsum_transpose(cts, x, *, axis, reverse):
    ct = cts[0]
    return [Zero(x.aval) if is_zero(ct) else cumsum_p.bind1(ct, axis=axis, reverse=not reverse)]


deflinear(cumsum_p, _cumsum_transpose)


def associative_scan(combine, x, axis, reverse=False):
    """Inclusive scan of ``combine`` along ``axis`` by recursive doubling (Hillis-Steele),
    written with slices and pads so every transformation can see through it."""
    if reverse:
        x = S.rev_p.bind1(x, dimensions=(axis,))
    n = get_aval(x).shape[axis]
    ndim = get_aval(x).ndim
    shift = 1
    while shift < n:
        lo = [0] * ndim
        hi = list(get_aval(x).shape)
        hi[axis] = n - shift
        head = S.slice_p.bind1(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=None)
        lo2 = [0] * ndim
        lo2[axis] = shift
        tail = S.slice_p.bind1(x, start_indices=tuple(lo2), limit_indices=tuple(get_aval(x).shape),
                               strides=None)
        first = S.slice_p.bind1(x, start_indices=tuple([0] * ndim),
                                limit_indices=tuple(shift if d == axis else s
                                                    for d, s in enumerate(get_aval(x).shape)),
                                strides=None)
        x = S.concatenate_p.bind1(first, combine(head, tail), dimension=axis)
        shift *= 2
    if reverse:
        x = S.rev_p.bind1(x, dimensions=(axis,))
    return x


def _logaddexp(a, b):
    m = E.max_p.bind1(a, b)
    d = E.neg_p.bind1(E.abs_p.bind1(E.sub_p.bind1(a, b)))
    safe_d = E.select_n_p.bind1(E.eq_p.bind1(a, b), d, np.zeros((), get_aval(d).dtype)[()])
    return E.add_p.bind1(m, E.log1p_p.bind1(E.exp_p.bind1(safe_d)))


_COMBINE = {cumprod_p: lambda a, b: E.mul_p.bind1(a, b),
            cummax_p: lambda a, b: E.max_p.bind1(a, b),
            cummin_p: lambda a, b: E.min_p.bind1(a, b),
            cumlogsumexp_p: _logaddexp}


def _cumulative_jvp(prim):
    # Differentiate the scan written as a composite; its primal value is the primitive's own.
    def rule(primals, tangents, *, axis, reverse):
        ans = prim.bind1(primals[0], axis=axis, reverse=reverse)
        _, (t_out,) = jvp_flat(lambda v: [associative_scan(_COMBINE[prim], v, axis, reverse)],
                               primals, tangents)
        return [ans], [instantiate(t_out)]
    return rule


for _p in _COMBINE:
    jvp_rules[_p] = _cumulative_jvp(_p)


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, moveaxis  # noqa: E402


def _reducer_batch(prim):
    def rule(axis, vals, dims, **params):
        (x,), (d,) = vals, dims
        params = dict(params, axes=tuple(a + 1 for a in params["axes"]))
        return [prim.bind1(moveaxis(x, d, 0), **params)], [0]
    return rule


def _cumulative_batch(prim):
    def rule(axis_data, vals, dims, *, axis, reverse):
        (x,), (d,) = vals, dims
        return [prim.bind1(moveaxis(x, d, 0), axis=axis + 1, reverse=reverse)], [0]
    return rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
           argmax_p, argmin_p):
    batching_rules[_p] = _reducer_batch(_p)
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    batching_rules[_p] = _cumulative_batch(_p)
