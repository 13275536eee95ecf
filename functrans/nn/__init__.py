"""Neural-network helpers with ``jax.nn``'s names: activations, softmax, one_hot.

    >>> relu(fnp.array([-1.0, 2.0]))
    Array([0., 2.], dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ..numpy._core import asarray, convert, inexact_dtype
from ..scipy.special import _log_softmax, _softmax
from ..scipy.special import logsumexp  # noqa: F401  (jax.nn.logsumexp)
from ..transforms.autodiff import custom_jvp
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "silu", "swish", "gelu", "softplus",
           "soft_sign", "elu", "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "glu", "softmax", "log_softmax", "one_hot", "standardize",
           "logsumexp", "tanh", "sparse_plus", "squareplus", "mish"]


def _float(x):
    x = asarray(x)
    return convert(x, inexact_dtype(get_aval(x).dtype), get_aval(x).weak_type)


@custom_jvp
def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0, as in JAX (not max's tie split of 1/2).

    >>> relu(fnp.array([-1.0, 2.0]))
    Array([0., 2.], dtype=float64)
    >>> ft.grad(relu)(0.0)
    Array(0., dtype=float64, weak_type=True)
    """
    x = asarray(x)
    return fnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative is 0 at both kinks, as in JAX.

    >>> relu6(fnp.array([-1.0, 7.0]))
    Array([0., 6.], dtype=float64)
    """
    return fnp.minimum(fnp.maximum(asarray(x), 0), 6)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


def sigmoid(x):
    """Logistic function ``1 / (1 + exp(-x))``.

    >>> sigmoid(fnp.array([0.0]))
    Array([0.5], dtype=float64)
    """
    return lax.logistic(_float(x))


def log_sigmoid(x):
    """``log(sigmoid(x))`` computed stably as ``-softplus(-x)``.

    >>> log_sigmoid(fnp.array([-1000.0]))
    Array([-1000.], dtype=float64)
    """
    return -softplus(-_float(x))


def silu(x):
    """``x * sigmoid(x)`` (also called swish).

    >>> silu(fnp.array([0.0]))
    Array([0.], dtype=float64)
    """
    x = _float(x)
    return x * sigmoid(x)


swish = silu


def gelu(x, approximate=True):
    """Gaussian error linear unit ``x * Phi(x)``: with ``approximate`` (the default, as in
    JAX) ``Phi(x) ~ (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``, else the exact normal CDF.

    Both are evaluated without cancellation for negative x: ``(1 + tanh(z)) / 2`` as
    ``sigmoid(2z)`` and ``(1 + erf(x/sqrt 2)) / 2`` as ``erfc(-x/sqrt 2) / 2``.

    >>> gelu(fnp.array([1.0]), approximate=False)
    Array([0.84134475], dtype=float64)
    """
    x = _float(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return x * lax.logistic(2 * c * (x + 0.044715 * (x * x * x)))
    return 0.5 * x * lax.erfc(x * (-1 / math.sqrt(2)))


def softplus(x):
    """``log(1 + exp(x))`` computed stably.

    >>> softplus(fnp.array([0.0, 1000.0]))
    Array([6.93147181e-01, 1.00000000e+03], dtype=float64)
    """
    return fnp.logaddexp(_float(x), 0.0)


def sparse_plus(x):
    """0 below -1, ``x`` above 1, ``(x + 1)^2 / 4`` between.

    >>> sparse_plus(fnp.array([-2.0, 0.0, 2.0]))
    Array([0.  , 0.25, 2.  ], dtype=float64)
    """
    x = _float(x)
    return fnp.where(x <= -1, 0.0, fnp.where(x >= 1, x, (x + 1) ** 2 / 4))


def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2``; for negative x as ``b / (2 (sqrt(x^2 + b) - x))``, the
    same value without cancellation.

    >>> squareplus(fnp.array([0.0]))
    Array([1.], dtype=float64)
    """
    x = _float(x)
    r = fnp.sqrt(x * x + b)
    return fnp.where(x >= 0, (x + r) / 2, b / (2 * (r - x)))


def mish(x):
    """``x * tanh(softplus(x))``.

    >>> mish(fnp.array([0.0]))
    Array([0.], dtype=float64)
    """
    x = _float(x)
    return x * fnp.tanh(softplus(x))


def soft_sign(x):
    """``x / (|x| + 1)``.

    >>> soft_sign(fnp.array([1.0]))
    Array([0.5], dtype=float64)
    """
    x = _float(x)
    return x / (fnp.abs(x) + 1)


def elu(x, alpha=1.0):
    """``x`` for positive x, else ``alpha * (exp(x) - 1)``.

    >>> elu(fnp.array([-1.0, 1.0]))
    Array([-0.63212056,  1.        ], dtype=float64)
    """
    x = _float(x)
    safe = fnp.where(x > 0, 0.0, x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(safe))


def selu(x):
    """Scaled ELU with the self-normalizing constants.

    >>> selu(fnp.array([1.0]))
    Array([1.05070099], dtype=float64)
    """
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    >>> celu(fnp.array([-1.0]))
    Array([-0.63212056], dtype=float64)
    """
    x = _float(x)
    return fnp.maximum(x, 0.0) + alpha * fnp.expm1(fnp.minimum(x, 0.0) / alpha)


def leaky_relu(x, negative_slope=0.01):
    """``x`` for ``x >= 0``, else ``negative_slope * x``.

    >>> leaky_relu(fnp.array([-2.0]))
    Array([-0.02], dtype=float64)
    """
    x = _float(x)
    return fnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """``x`` clipped to [-1, 1].

    >>> hard_tanh(fnp.array([-3.0, 0.5]))
    Array([-1. ,  0.5], dtype=float64)
    """
    return fnp.clip(_float(x), -1.0, 1.0)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``.

    >>> hard_sigmoid(fnp.array([0.0]))
    Array([0.5], dtype=float64)
    """
    return relu6(_float(x) + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard_swish).

    >>> hard_silu(fnp.array([3.0]))
    Array([3.], dtype=float64)
    """
    x = _float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def tanh(x):
    """Hyperbolic tangent.

    >>> tanh(fnp.array([0.0]))
    Array([0.], dtype=float64)
    """
    return fnp.tanh(x)


def glu(x, axis=-1):
    """Gated linear unit: first half times sigmoid of the second half along ``axis``.

    >>> glu(fnp.array([2.0, 0.0]))
    Array([1.], dtype=float64)
    """
    a, b = fnp.split(asarray(x), 2, axis)
    return a * sigmoid(b)


def softmax(x, axis=-1, where=None, initial=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (shifted by the max for stability).

    >>> softmax(fnp.array([0.0, 0.0]))
    Array([0.5, 0.5], dtype=float64)
    """
    return _softmax(_float(x), axis, where)  # (scipy.special.softmax's too)


def log_softmax(x, axis=-1, where=None, initial=None):
    """``x - logsumexp(x)`` along ``axis`` (``-inf`` where ``where`` is False, as JAX).

    >>> log_softmax(fnp.array([0.0, 0.0]))
    Array([-0.69314718, -0.69314718], dtype=float64)
    """
    return _log_softmax(_float(x), axis, where)  # (scipy.special.log_softmax's too)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``.

    >>> standardize(fnp.array([1.0, 3.0]), epsilon=0.0)
    Array([-1.,  1.], dtype=float64)
    """
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
    from ..core import dtypes
    x = asarray(x)
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    xd = get_aval(x).dtype
    if dtype_kind(xd) == "b" or (dtype_kind(xd) in "iu" and np.iinfo(xd).max < num_classes - 1):
        x = convert(x, dtypes.default_int_dtype())  # class numbers must fit the iota's dtype
    nd = get_aval(x).ndim + 1
    ax = axis % nd
    shape = list(get_aval(x).shape)
    shape.insert(ax, num_classes)
    classes = lax.broadcasted_iota(get_aval(x).dtype, tuple(shape), ax)
    return convert(fnp.expand_dims(x, ax) == classes, dtype)


from ._more import (dot_product_attention, identity, log1mexp, logmeanexp,  # noqa: E402,F401
                    sparse_sigmoid)
from . import initializers  # noqa: E402,F401  (jax.nn.initializers; needs functrans.random)
