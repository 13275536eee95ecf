"""Parameter initializers with ``jax.nn.initializers``'s names and signatures: each factory
returns ``init(key, shape, dtype=...)``, a pure function of a PRNG key.

    >>> from functrans.nn import initializers
    >>> w = initializers.glorot_uniform()(random.key(0), (3, 4))
    >>> w.shape, w.dtype
    ((3, 4), dtype('float64'))

Fans follow JAX: ``in_axis=-2`` and ``out_axis=-1`` by default, the remaining non-batch axes
form the receptive field (so a ``(3, 3, 16, 32)`` convolution kernel has fan-in 3*3*16).
Default dtypes are the default float dtype (float64 with ``enable_x64``, as ``jnp.float_``).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import numpy as fnp
from .. import random
from ..core import dtypes

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal",
           "Initializer"]


@runtime_checkable
class Initializer(Protocol):
    """The type of what every factory here returns: ``init(key, shape, dtype=...)``
    (libraries annotate their parameters with it).

        >>> isinstance(zeros, Initializer)
        True
    """

    def __call__(self, key: Any, shape: Any, dtype: Any = None) -> Any:
        ...


def _dtype(dtype):
    d = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype,
                                  what="initializer dtype")
    return d


def _shape(shape):
    try:
        return tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list))
                                                 else (shape,)))
    except TypeError:
        raise TypeError(f"initializer shape must be a tuple of ints, got {shape!r}") from None


def zeros(key, shape, dtype=None):
    """All zeros (``key`` is ignored).

    >>> zeros(random.key(0), (2,))
    Array([0., 0.], dtype=float64)
    """
    return fnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    """All ones (``key`` is ignored).

    >>> ones(random.key(0), (2,), "float32")
    Array([1., 1.], dtype=float32)
    """
    return fnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """An initializer filling with ``value``.

    >>> constant(-7.0)(random.key(0), (2,))
    Array([-7., -7.], dtype=float64)
    """
    def init(key, shape, dtype=dtype):
        return fnp.full(_shape(shape), value, _dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform on ``[0, scale)``.

    >>> bool((uniform(0.5)(random.key(0), (100,)) < 0.5).all())
    True
    """
    def init(key, shape, dtype=dtype):
        return random.uniform(key, _shape(shape), _dtype(dtype)) * scale
    return init


def normal(stddev=1e-2, dtype=None):
    """Normal with mean 0 and standard deviation ``stddev``.

    >>> normal(1.0)(random.key(0), (2, 3)).shape
    (2, 3)
    """
    def init(key, shape, dtype=dtype):
        return random.normal(key, _shape(shape), _dtype(dtype)) * stddev
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """``stddev`` times a standard normal truncated to ``(lower, upper)``; ``stddev`` is that
    of the untruncated normal (no variance correction, as JAX).

    >>> bool((fnp.abs(truncated_normal(1.0)(random.key(0), (100,))) < 2).all())
    True
    """
    def init(key, shape, dtype=dtype):
        d = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), d) * stddev
    return init


def _axes_size(shape, axes, what):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    try:
        return math.prod(shape[a] for a in axes)
    except IndexError:
        raise ValueError(f"variance_scaling: {what}={axes} is out of range for a weight of "
                         f"shape {shape}") from None


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if len(shape) <= 1:
        raise ValueError(f"variance_scaling: cannot compute fan-in and fan-out of a weight of "
                         f"shape {shape}; it must have at least 2 dimensions")
    in_size = _axes_size(shape, in_axis, "in_axis")
    out_size = _axes_size(shape, out_axis, "out_axis")
    batch_size = _axes_size(shape, batch_axis, "batch_axis")
    receptive = math.prod(shape) / (in_size * out_size * batch_size) if math.prod(shape) else 0
    return in_size * receptive, out_size * receptive


# The standard deviation of a standard normal truncated to (-2, 2): dividing by it makes the
# truncated samples have the requested variance.
_TRUNC_STD = 0.87962566103423978


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with variance ``scale / n`` where ``n`` is the fan-in (``mode="fan_in"``),
    fan-out, their mean (``"fan_avg"``) or geometric mean (``"fan_geo_avg"``);
    ``distribution`` is ``"truncated_normal"`` (truncated at two standard deviations and
    rescaled), ``"normal"`` or ``"uniform"``.

    >>> w = variance_scaling(2.0, "fan_in", "normal")(random.key(0), (400, 300))
    >>> round(float(w.var() * 400), 1)
    2.0
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"variance_scaling: invalid mode {mode!r}; use 'fan_in', 'fan_out', "
                         "'fan_avg' or 'fan_geo_avg'")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: invalid distribution {distribution!r}; use "
                         "'truncated_normal', 'normal' or 'uniform'")

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        d = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        variance = scale / denominator
        if distribution == "truncated_normal":
            std = math.sqrt(variance) / _TRUNC_STD
            return random.truncated_normal(key, -2.0, 2.0, shape, d) * np.asarray(std, d)
        if distribution == "normal":
            return random.normal(key, shape, d) * np.asarray(math.sqrt(variance), d)
        limit = math.sqrt(3 * variance)
        return random.uniform(key, shape, d, -limit, limit)
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot/Xavier uniform: ``variance_scaling(1.0, "fan_avg", "uniform")``.

    >>> glorot_uniform()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot/Xavier normal: ``variance_scaling(1.0, "fan_avg", "truncated_normal")``.

    >>> glorot_normal()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun uniform: ``variance_scaling(1.0, "fan_in", "uniform")``.

    >>> lecun_uniform()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun normal: ``variance_scaling(1.0, "fan_in", "truncated_normal")``.

    >>> lecun_normal()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He/Kaiming uniform: ``variance_scaling(2.0, "fan_in", "uniform")``.

    >>> he_uniform()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He/Kaiming normal: ``variance_scaling(2.0, "fan_in", "truncated_normal")``.

    >>> he_normal()(random.key(0), (2, 2)).shape
    (2, 2)
    """
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (semi-)orthogonal matrix, reshaped: the weight flattened to ``(rows, columns)`` with
    ``columns = shape[column_axis]`` has orthonormal rows or columns (whichever are fewer),
    times ``scale``; uniformly distributed (Haar) over such matrices.

    >>> w = orthogonal()(random.key(0), (3, 3))
    >>> bool(fnp.allclose(w @ w.T, fnp.eye(3)))
    True
    """
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        d = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2D shape, got {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        tall = (max(n_rows, n_cols), min(n_rows, n_cols))
        q, r = fnp.linalg.qr(random.normal(key, tall, d))
        q = q * fnp.sign(fnp.diagonal(r))  # R's diagonal positive: Haar-distributed Q
        if n_rows < n_cols:
            q = q.T
        q = fnp.reshape(q, tuple(np.delete(shape, column_axis % len(shape))) + (n_cols,))
        return fnp.moveaxis(q, -1, column_axis) * np.asarray(scale, d)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """For convolution kernels of shape ``(*spatial, in, out)`` with ``in <= out`` and 1-3
    odd-sized spatial dimensions: zero except an orthogonal ``(in, out)`` matrix at the
    spatial center (Xiao et al. 2018), so the convolution is norm-preserving at init.

    >>> w = delta_orthogonal()(random.key(0), (3, 2, 3))
    >>> bool(fnp.allclose(w[1] @ w[1].T, fnp.eye(2)))
    True
    """
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        d = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("delta_orthogonal initializer requires a 3D, 4D or 5D shape, got "
                             f"{shape}")
        if shape[-2] > shape[-1]:
            raise ValueError(f"delta_orthogonal: `fan_in` ({shape[-2]}) must not exceed "
                             f"`fan_out` ({shape[-1]})")
        if any(s % 2 == 0 for s in shape[:-2]):
            raise ValueError(f"delta_orthogonal: spatial dimensions must be odd, got {shape}")
        ortho = orthogonal(scale, column_axis, d)(key, shape[-2:])
        center = tuple(s // 2 for s in shape[:-2])
        return fnp.zeros(shape, d).at[center].set(ortho)
    return init
