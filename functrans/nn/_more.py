"""More of ``jax.nn``: identity, sparse_sigmoid, log1mexp, logmeanexp, dot_product_attention."""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ..numpy._core import asarray, convert, inexact_dtype
from ..scipy.special import logsumexp


def identity(x):
    """``x`` itself (as an array).

    >>> identity(fnp.array([1.0, -2.0]))
    Array([ 1., -2.], dtype=float64)
    """
    return asarray(x)


def sparse_sigmoid(x):
    """0 below -1, 1 above 1, ``(x + 1) / 2`` between: the derivative of ``sparse_plus``.

    >>> sparse_sigmoid(fnp.array([-2.0, 0.0, 0.5, 2.0]))
    Array([0.  , 0.5 , 0.75, 1.  ], dtype=float64)
    """
    x = _float(x)
    return fnp.clip((x + 1.0) / 2.0, 0.0, 1.0)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x`` (``log(-expm1(-x))``
    below ``log 2``, ``log1p(-exp(-x))`` above).

    >>> log1mexp(fnp.array([10.0]))
    Array([-4.54009604e-05], dtype=float64)
    """
    x = _float(x)
    c = math.log(2.0)
    return fnp.where(x < c, fnp.log(-fnp.expm1(-x)), fnp.log1p(-fnp.exp(-x)))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x)))`` along ``axis``: ``logsumexp`` less the log of the count.

    >>> logmeanexp(fnp.array([1.0, 2.0, 3.0]))
    Array(2.30899368, dtype=float64)
    """
    x = _float(x)
    total = logsumexp(x, axis=axis, b=where, keepdims=keepdims) if where is not None else \
        logsumexp(x, axis=axis, keepdims=keepdims)
    if where is None:
        shape = get_aval(x).shape
        axes = range(len(shape)) if axis is None else \
            [a % len(shape) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        count = math.prod(shape[a] for a in axes)
        return total - math.log(count)
    count = fnp.sum(fnp.broadcast_to(fnp.asarray(where), get_aval(x).shape), axis=axis,
                    keepdims=keepdims)
    return total - fnp.log(convert(count, get_aval(total).dtype))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """Scaled dot-product attention, ``softmax(q k^T * scale + bias, masked) v``, as JAX's.

    ``query`` is ``[B, T, N, H]`` (or ``[T, N, H]``), ``key``/``value`` ``[B, S, K, H]`` with
    ``K`` dividing ``N`` (grouped-query attention); ``bias`` and the boolean ``mask`` (True:
    attend) broadcast to ``[B, N, T, S]``. Logits are computed and normalized in float32 at
    least; masked logits get a large negative value (a fully masked row is uniform, as in JAX).

    >>> q = fnp.ones((1, 2, 1, 4)); v = fnp.arange(8.0).reshape(1, 2, 1, 4)
    >>> dot_product_attention(q, q, v, is_causal=True)[0, :, 0]
    Array([[0., 1., 2., 3.],
           [2., 3., 4., 5.]], dtype=float64)
    """
    if implementation not in (None, "xla"):
        raise ValueError(f"dot_product_attention: implementation {implementation!r} is not "
                         "available; functrans computes attention from ordinary operations "
                         "(implementation=None or 'xla')")
    if return_residual:
        raise NotImplementedError("dot_product_attention(return_residual=True) is not "
                                  "supported by functrans")
    query, key, value = asarray(query), asarray(key), asarray(value)
    batched = get_aval(query).ndim == 4
    if not batched:
        query, key, value = query[None], key[None], value[None]
    for name, x in (("query", query), ("key", key), ("value", value)):
        if get_aval(x).ndim != 4:
            raise ValueError(f"dot_product_attention: {name} must have rank 3 or 4 with the "
                             f"others, got shape {get_aval(x).shape}")
    B, T, N, H = get_aval(query).shape
    _, S, K, Hk = get_aval(key).shape
    if get_aval(value).shape != get_aval(key).shape or Hk != H or N % K:
        raise ValueError("dot_product_attention: key and value must have the same shape "
                         f"[B, S, K, H] with K dividing the {N} query heads and H = {H}; got "
                         f"query {get_aval(query).shape}, key {get_aval(key).shape}, value "
                         f"{get_aval(value).shape}")
    dtype = get_aval(query).dtype
    G = N // K
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    work = np.promote_types(dtype, np.float32)
    q = convert(query, work).reshape(B, T, K, G, H)
    logits = fnp.einsum("btkgh,bskh->bkgts", q, convert(key, work)) * scale
    if bias is not None:
        logits = logits + _grouped(convert(asarray(bias), work), B, N, T, S, K, G)
    keep = _attention_mask(mask, is_causal, query_seq_lengths, key_value_seq_lengths,
                           local_window_size, B, N, T, S, K, G)
    if keep is not None:
        logits = fnp.where(keep, logits, -0.7 * float(np.finfo(work).max))
    probs = convert(_softmax_last(logits), dtype)
    out = fnp.einsum("bkgts,bskh->btkgh", probs, value).reshape(B, T, N, H)
    return out if batched else out[0]


def _float(x):
    x = asarray(x)
    return convert(x, inexact_dtype(get_aval(x).dtype))


def _softmax_last(x):
    m = lax.stop_gradient(fnp.max(x, axis=-1, keepdims=True))
    e = fnp.exp(x - m)
    return e / fnp.sum(e, axis=-1, keepdims=True)


def _grouped(x, B, N, T, S, K, G):
    """``x`` broadcast to ``[B, N, T, S]`` and split into ``[B, K, G, T, S]``."""
    try:
        x = fnp.broadcast_to(x, (B, N, T, S))
    except ValueError:
        raise ValueError(f"dot_product_attention: bias/mask of shape {get_aval(x).shape} does "
                         f"not broadcast to [B, N, T, S] = {(B, N, T, S)}") from None
    return x.reshape(B, K, G, T, S)


def _attention_mask(mask, is_causal, q_lengths, kv_lengths, window, B, N, T, S, K, G):
    keep = None

    def both(a, b):
        return b if a is None else a & b

    if mask is not None:
        keep = _grouped(asarray(mask).astype(bool), B, N, T, S, K, G)
    rows = lax.broadcasted_iota(np.int32, (T, S), 0)
    cols = lax.broadcasted_iota(np.int32, (T, S), 1)
    if is_causal:
        keep = both(keep, cols <= rows)
    if window is not None:
        left, right = (window, window) if isinstance(window, int) else window
        keep = both(keep, (rows - cols <= left) & (cols - rows <= right))
    if q_lengths is not None:
        q = asarray(q_lengths).reshape(B, 1, 1, 1, 1)
        keep = both(keep, rows < q)
    if kv_lengths is not None:
        kv = asarray(kv_lengths).reshape(B, 1, 1, 1, 1)
        keep = both(keep, cols < kv)
    return keep
