"""Discrete samplers: integers, booleans, categories, permutations and choices (JAX's
algorithms, so results are bit-identical to ``jax.random`` for the same key)."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core import dtypes
from ..core.trace import get_aval
from ._continuous import (_gumbel, _std_uniform, as_array, check_shape, result_shape,
                          sample_shape, uniform)
from ._prng import UINT_DTYPES, canonical_shape, check_key, random_bits, split_key

__all__ = ["randint", "bernoulli", "rademacher", "categorical", "permutation", "choice",
           "geometric"]


def _int_dtype(name: str, dtype) -> np.dtype:
    d = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype,
                                  what=f"{name}: dtype")
    if dtypes.kind(d) not in "iu":
        raise TypeError(f"{name} only accepts integer dtypes, got {d}")
    return d


def _split2(key):
    keys = split_key(key, (2,))
    return lax.index_in_dim(keys, 0, keepdims=False), lax.index_in_dim(keys, 1, keepdims=False)


def _bcast(x, shape):
    return x if not get_aval(x).shape else fnp.broadcast_to(x, shape)


# ---- randint --------------------------------------------------------------------------------------
def _int_bound(name: str, what: str, v):
    """A randint bound as an integer array: Python ints are int64 (as ``jnp.asarray``), floats
    are truncated toward zero."""
    if type(v) is int:
        if not -2**63 <= v < 2**63:
            raise OverflowError(f"{name}: {what}={v} does not fit in int64; pass it as a "
                                "uint64 array instead")
        return np.int64(v) if dtypes.default_int_dtype() == np.int64 else np.int32(v)
    v = fnp.asarray(v)
    if dtypes.kind(get_aval(v).dtype) not in "iu":
        v = lax.convert_element_type(v, dtypes.default_int_dtype())
    return v


def _convert_and_clip(val, dtype: np.dtype):
    """``val`` converted to the integer ``dtype``, saturating instead of wrapping."""
    vdt = get_aval(val).dtype
    lo = max(np.iinfo(dtype).min, np.iinfo(vdt).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(vdt).max)
    return lax.convert_element_type(lax.clamp(vdt.type(lo), val, vdt.type(hi)), dtype)


def _randint(key, shape, minval, maxval, dtype):
    # JAX's algorithm: two words of random bits reduced modulo the span (slightly biased when
    # the span is not a power of two; the second word makes the bias negligible).
    nbits = 8 * dtype.itemsize
    unsigned = UINT_DTYPES[nbits]
    mdt = get_aval(maxval).dtype
    dmax = mdt.type(min(np.iinfo(dtype).max, np.iinfo(mdt).max))
    maxval_out_of_range = _bcast(lax.gt(maxval, dmax), shape)
    minval = _bcast(_convert_and_clip(minval, dtype), shape)
    maxval = _bcast(_convert_and_clip(maxval, dtype), shape)

    k1, k2 = _split2(key)
    higher_bits = random_bits(k1, nbits, shape)
    lower_bits = random_bits(k2, nbits, shape)

    one = unsigned.type(1)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    # maxval <= minval: span 1, so minval is returned.
    span = fnp.where(lax.le(maxval, minval), one, span)
    # A maxval above the dtype's range means "up to and including the maximum".
    span = fnp.where(fnp.logical_and(maxval_out_of_range, lax.gt(maxval, minval)),
                     lax.add(span, one), span)
    # The full range wraps span to 0. XLA's x % 0 == x then makes the result lower_bits; NumPy's
    # fmod would give 0, so that case is selected explicitly.
    full_range = lax.eq(span, unsigned.type(0))
    safe = fnp.where(full_range, one, span)
    multiplier = lax.rem(fnp.full_like(safe, 2 ** (nbits // 2)), safe)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), safe)
    offset = lax.add(lax.mul(lax.rem(higher_bits, safe), multiplier), lax.rem(lower_bits, safe))
    offset = fnp.where(full_range, lower_bits, lax.rem(offset, safe))
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (``minval`` where ``maxval <= minval``).

    Bounds are clipped to ``dtype``'s range; a ``maxval`` above it includes the dtype's maximum.
    8- and 16-bit dtypes are sampled as int32 and cast, as in JAX.

        >>> random.randint(random.key(0), (5,), 0, 10)
        Array([5, 1, 5, 7, 3], dtype=int64)
        >>> random.randint(random.key(0), (3,), 0, 256, "uint8").dtype
        dtype('uint8')
    """
    key = check_key("randint", key)
    dtype = _int_dtype("randint", dtype)
    shape = canonical_shape("randint", shape)
    minval = _int_bound("randint", "minval", minval)
    maxval = _int_bound("randint", "maxval", maxval)
    check_shape("randint", shape, minval=minval, maxval=maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:
        i32 = np.dtype(np.int32)
        minval = lax.clamp(np.int32(info.min), lax.convert_element_type(minval, i32),
                           np.int32(info.max))
        maxval = lax.clamp(np.int32(info.min), lax.convert_element_type(maxval, i32),
                           np.int32(info.max + 1))
        return lax.convert_element_type(_randint(key, shape, minval, maxval, i32), dtype)
    return _randint(key, shape, minval, maxval, dtype)


# ---- Bernoulli and Rademacher ---------------------------------------------------------------------
def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p`` (``u < p`` with ``u`` uniform in p's dtype).

    ``mode="high"`` adds a second uniform below the first's resolution, for tiny ``p``.

        >>> random.bernoulli(random.key(0), 0.5, (4,))
        Array([ True,  True, False, False], dtype=bool)
    """
    if shape is not None:
        shape = canonical_shape("bernoulli", shape)
    if mode not in ("high", "low"):
        raise ValueError(f"bernoulli: mode must be 'high' or 'low', got {mode!r}")
    key = check_key("bernoulli", key)
    p = as_array(p)
    dtype = get_aval(p).dtype
    if dtypes.kind(dtype) != "f":
        raise TypeError(f"bernoulli: probability p must have a floating dtype, got {dtype}")
    shape = result_shape("bernoulli", shape, p=p)
    p = lax.convert_element_type(p, dtype)
    if mode == "high":
        u = _std_uniform(key, (2,) + shape, dtype)
        u1, u2 = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        u2 = lax.mul(u2, np.asarray(2.0 ** -np.finfo(dtype).nmant, dtype)[()])
        return fnp.less(u2, fnp.subtract(p, u1))
    return fnp.less(_std_uniform(key, shape, dtype), p)


def rademacher(key, shape=(), dtype=None):
    """Random signs: -1 or +1 with equal probability, as ``dtype`` (default int64).

        >>> random.rademacher(random.key(0), (4,))
        Array([ 1,  1, -1, -1], dtype=int64)
    """
    key = check_key("rademacher", key)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype,
                                      what="rademacher: dtype")
    shape = canonical_shape("rademacher", shape)
    b = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.sub(lax.mul(np.asarray(2, dtype)[()], b), np.asarray(1, dtype)[()])


# ---- categories -----------------------------------------------------------------------------------
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Category indices drawn with probabilities ``softmax(logits, axis)`` (Gumbel-max trick;
    Gumbel top-k without replacement).

    The result has shape ``shape`` (default: ``logits.shape`` without ``axis``); leading extra
    dimensions of ``shape`` are independent draws.

        >>> random.categorical(random.key(0), fnp.log(fnp.array([0.1, 0.2, 0.7])), shape=(5,))
        Array([2, 2, 2, 1, 1], dtype=int64)
    """
    key = check_key("categorical", key)
    logits = fnp.asarray(logits)
    laval = get_aval(logits)
    if dtypes.kind(laval.dtype) != "f":
        raise ValueError(f"categorical: logits must have a floating dtype, got {laval.dtype}")
    if laval.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    axis = operator.index(axis)
    if not -laval.ndim <= axis < laval.ndim:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of rank "
                         f"{laval.ndim}")
    batch_shape = tuple(np.delete(laval.shape, axis).tolist())
    shape = sample_shape("categorical", shape, batch_shape,
                         f"the logits' batch shape {batch_shape}")
    if mode is not None and mode not in ("highest", "high", "low"):
        raise ValueError(f"categorical: mode must be 'low', 'high' or 'highest', got {mode!r}")
    mode = mode or "low"
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        axis = axis - laval.ndim if axis >= 0 else axis
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % laval.ndim, laval.shape[axis])
        g = _gumbel(key, (*prefix, *logits_shape), laval.dtype, mode)
        return fnp.argmax(fnp.add(g, lax.expand_dims(logits, tuple(range(len(prefix))))),
                          axis=axis)
    logits = fnp.add(logits, _gumbel(key, laval.shape, laval.dtype, mode))
    k = math.prod(prefix)
    if k > laval.shape[axis]:
        raise ValueError(f"categorical: number of samples without replacement ({k}) cannot "
                         f"exceed the number of categories ({laval.shape[axis]})")
    _, indices = lax.top_k(fnp.moveaxis(logits, axis, -1), k)
    nd = len(get_aval(indices).shape)
    return lax.reshape(indices, shape, (nd - 1, *range(nd - 1)))


# ---- permutations and choices ---------------------------------------------------------------------
def _shuffle(key, x, axis):
    # Sort by random 32-bit keys; repeating with fresh keys makes ties (which would bias the
    # result) negligible: JAX's static round count for 3 * log(n) bits of sort keys.
    size = math.prod(get_aval(x).shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, subkey = _split2(key)
        sort_keys = random_bits(subkey, 32, get_aval(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def _normalize_axis(name, axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``.

    With ``independent=True`` every slice along ``axis`` is shuffled separately.

        >>> random.permutation(random.key(0), 5)
        Array([0, 1, 4, 3, 2], dtype=int64)
    """
    key = check_key("permutation", key)
    x = fnp.asarray(x)
    aval = get_aval(x)
    axis = _normalize_axis("permutation", axis, aval.ndim or 1)
    if not aval.ndim:
        if dtypes.kind(aval.dtype) not in "iu":
            raise TypeError(f"permutation: x must be an integer or at least 1-dimensional, got "
                            f"{aval.str_short()}")
        return _shuffle(key, fnp.arange(operator.index(x)), axis)
    if independent or aval.ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, fnp.arange(aval.shape[axis]), 0)
    return fnp.take(x, ind, axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples of ``a`` (an array, or ``arange(a)`` for an int) along ``axis``.

    ``p`` gives the probability of each entry; without replacement the sample size must not
    exceed the population.

        >>> random.choice(random.key(0), 10, (3,), replace=False).shape
        (3,)
        >>> random.choice(random.key(0), fnp.array([1.0, 2.0]), (2,), p=fnp.array([0.0, 1.0]))
        Array([2., 2.], dtype=float64)
    """
    key = check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"choice: shape must be a sequence of ints, got {shape!r}")
    shape = canonical_shape("choice", shape)
    arr = fnp.asarray(a)
    aval = get_aval(arr)
    if aval.ndim == 0:
        if dtypes.kind(aval.dtype) not in "iu":
            raise TypeError(f"choice: a must be an integer or an array, got {aval.str_short()}")
        n_inputs = operator.index(arr)
    else:
        axis = _normalize_axis("choice", axis, aval.ndim)
        n_inputs = aval.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return fnp.zeros(shape, aval.dtype)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"choice: cannot take a larger sample (size {n_draws}) than the "
                         f"population (size {n_inputs}) when replace=False")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if aval.ndim == 0 else fnp.take(arr, ind, axis)
        else:
            perm = permutation(key, n_inputs if aval.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis if aval.ndim else 0)
    else:
        p_arr = fnp.asarray(p)
        if dtypes.kind(get_aval(p_arr).dtype) != "f":
            p_arr = lax.convert_element_type(p_arr, dtypes.default_float_dtype())
        if get_aval(p_arr).shape != (n_inputs,):
            raise ValueError(f"choice: p must be None or a 1-D vector with the same size as "
                             f"a.shape[axis]; p has shape {get_aval(p_arr).shape} and "
                             f"a.shape[axis] is {n_inputs}")
        pdt = get_aval(p_arr).dtype
        if replace:
            p_cuml = fnp.cumsum(p_arr)
            total = lax.index_in_dim(p_cuml, n_inputs - 1, keepdims=False)
            r = fnp.multiply(total, fnp.subtract(1, uniform(key, shape, pdt)))
            ind = fnp.searchsorted(p_cuml, r).astype(dtypes.default_int_dtype())
        else:
            if mode is not None and mode not in ("highest", "high", "low"):
                raise ValueError(f"choice: mode must be 'low', 'high' or 'highest', got {mode!r}")
            g = fnp.add(_gumbel(key, (n_inputs,), pdt, mode or "low"), fnp.log(p_arr))
            ind = lax.top_k(g, n_draws)[1].astype(dtypes.default_int_dtype())
        result = ind if aval.ndim == 0 else fnp.take(arr, ind, axis)
    out_shape = shape if aval.ndim == 0 else aval.shape[:axis] + shape + aval.shape[axis + 1:]
    return fnp.reshape(result, out_shape)


def geometric(key, p, shape=None, dtype=None):
    """Geometric samples: the number of Bernoulli(``p``) trials up to the first success.

        >>> bool((random.geometric(random.key(0), 0.5, (6,)) >= 1).all())
        True
    """
    key = check_key("geometric", key)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype,
                                      what="geometric: dtype")
    if dtypes.kind(dtype) not in "iu":
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = result_shape("geometric", shape, p=p)
    p = fnp.asarray(p)
    if dtypes.kind(get_aval(p).dtype) != "f":
        p = lax.convert_element_type(p, dtypes.default_float_dtype())
    pdt = get_aval(p).dtype
    u = _std_uniform(key, shape, pdt)
    # u == 0 would give log(0); JAX maps it to 1 (keeping samples for other keys unchanged).
    u = fnp.where(lax.eq(u, np.asarray(0, pdt)[()]), np.asarray(1, pdt)[()], u)
    log_one_minus_p = fnp.broadcast_to(fnp.log1p(fnp.negative(p)), shape)
    g = fnp.add(fnp.floor(fnp.divide(lax.log(u), log_one_minus_p)), 1)
    return g.astype(dtype)
