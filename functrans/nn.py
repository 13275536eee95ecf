"""Neural-network helpers with ``jax.nn``'s names: activations, softmax, one_hot.

    >>> relu(fnp.array([-1.0, 2.0]))
    Array([0., 2.], dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from . import lax
from . import numpy as fnp
from .core.trace import get_aval
from .numpy._core import asarray, convert, inexact_dtype
from .scipy.special import logsumexp  # noqa: F401  (jax.nn.logsumexp)

__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "silu", "swish", "gelu", "softplus",
           "soft_sign", "elu", "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "glu", "softmax", "log_softmax", "one_hot", "standardize",
           "logsumexp", "tanh", "sparse_plus", "squareplus", "mish"]


def _float(x):
    x = asarray(x)
    return convert(x, inexact_dtype(get_aval(x).dtype), get_aval(x).weak_type)


def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0, as in JAX."""
    x = asarray(x)
    return fnp.maximum(x, 0)


def relu6(x):
    """``min(max(x, 0), 6)``."""
    return fnp.minimum(fnp.maximum(asarray(x), 0), 6)


def sigmoid(x):
    """Logistic function ``1 / (1 + exp(-x))``."""
    return lax.logistic(_float(x))


def log_sigmoid(x):
    """``log(sigmoid(x))`` computed stably as ``-softplus(-x)``."""
    return -softplus(-_float(x))


def silu(x):
    """``x * sigmoid(x)``."""
    x = _float(x)
    return x * sigmoid(x)


swish = silu


def gelu(x, approximate=True):
    """Gaussian error linear unit (tanh approximation by default, as in JAX)."""
    x = _float(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + fnp.tanh(c * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1 + lax.erf(x * (1 / math.sqrt(2))))


def softplus(x):
    """``log(1 + exp(x))`` computed stably."""
    return fnp.logaddexp(_float(x), 0.0)


def sparse_plus(x):
    x = _float(x)
    return fnp.where(x <= -1, 0.0, fnp.where(x >= 1, x, (x + 1) ** 2 / 4))


def squareplus(x, b=4):
    x = _float(x)
    return (x + fnp.sqrt(x * x + b)) / 2


def mish(x):
    x = _float(x)
    return x * fnp.tanh(softplus(x))


def soft_sign(x):
    x = _float(x)
    return x / (fnp.abs(x) + 1)


def elu(x, alpha=1.0):
    x = _float(x)
    safe = fnp.where(x > 0, 0.0, x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(safe))


def selu(x):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def celu(x, alpha=1.0):
    x = _float(x)
    return fnp.maximum(x, 0.0) + alpha * fnp.expm1(fnp.minimum(x, 0.0) / alpha)


def leaky_relu(x, negative_slope=0.01):
    x = _float(x)
    return fnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    return fnp.clip(_float(x), -1.0, 1.0)


def hard_sigmoid(x):
    return relu6(_float(x) + 3.0) / 6.0


def hard_silu(x):
    x = _float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def tanh(x):
    return fnp.tanh(x)


def glu(x, axis=-1):
    """Gated linear unit: first half times sigmoid of the second half along ``axis``."""
    a, b = fnp.split(asarray(x), 2, axis)
    return a * sigmoid(b)


def softmax(x, axis=-1, where=None, initial=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (shifted by the max for stability).

    >>> softmax(fnp.array([0.0, 0.0]))
    Array([0.5, 0.5], dtype=float64)
    """
    x = _float(x)
    m = lax.stop_gradient(fnp.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf
                                  if where is not None else None))
    e = fnp.exp(x - m)
    if where is not None:
        e = fnp.where(where, e, 0.0)
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1, where=None, initial=None):
    """``x - logsumexp(x)`` along ``axis``."""
    x = _float(x)
    m = lax.stop_gradient(fnp.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf
                                  if where is not None else None))
    shifted = x - m
    e = fnp.exp(shifted)
    if where is not None:
        e = fnp.where(where, e, 0.0)
    return shifted - fnp.log(fnp.sum(e, axis=axis, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``."""
    x = _float(x)
    if mean is None:
        mean = fnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        variance = fnp.mean(fnp.square(x - mean), axis, keepdims=True, where=where)
    return (x - mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encoding of integer ``x`` with ``num_classes`` classes (new axis ``axis``).

    >>> one_hot(fnp.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float64)
    """
    from .core import dtypes
    x = asarray(x)
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    nd = get_aval(x).ndim + 1
    ax = axis % nd
    shape = list(get_aval(x).shape)
    shape.insert(ax, num_classes)
    classes = lax.broadcasted_iota(get_aval(x).dtype, tuple(shape), ax)
    return convert(fnp.expand_dims(x, ax) == classes, dtype)
