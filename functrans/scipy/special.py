"""``functrans.scipy.special``: logsumexp and special functions with SciPy's names.

    >>> logsumexp(fnp.array([0.0, 0.0]))
    Array(0.69314718, dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ..numpy._core import asarray, convert, inexact_dtype

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "gammaln", "digamma", "expit", "logit",
           "xlogy", "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "softmax", "log_softmax",
           "gamma", "betaln", "multigammaln", "sinc", "exp1", "polygamma"]


def _float(x):
    x = asarray(x)
    return convert(x, inexact_dtype(get_aval(x).dtype), get_aval(x).weak_type)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably (shifted by the max).

    >>> logsumexp(fnp.array([1000.0, 1000.0]))
    Array(1000.69314718, dtype=float64)
    """
    a = _float(a)
    if b is not None:
        a, b = fnp.broadcast_arrays(a, _float(b))
    amax = fnp.max(a, axis=axis, keepdims=True, where=where,
                   initial=-np.inf if where is not None else None)
    amax = lax.stop_gradient(fnp.where(fnp.isfinite(amax), amax, 0.0))
    e = fnp.exp(a - amax)
    if b is not None:
        e = e * b
    if where is not None:
        e = fnp.where(where, e, 0.0)
    s = fnp.sum(e, axis=axis, keepdims=True)
    sign = fnp.sign(s)
    out = fnp.log(fnp.abs(s)) + amax
    if not keepdims:
        axes = tuple(range(get_aval(a).ndim)) if axis is None else axis
        out = fnp.squeeze(out, axes)
        sign = fnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    return out


def erf(x):
    return lax.erf(_float(x))


def erfc(x):
    return lax.erfc(_float(x))


def erfinv(x):
    return lax.erf_inv(_float(x))


def gammaln(x):
    return lax.lgamma(_float(x))


def gamma(x):
    x = _float(x)
    sign = fnp.where((x > 0) | (fnp.floor(x) % 2 == 0), 1.0, -1.0)
    return sign * fnp.exp(lax.lgamma(x))


def digamma(x):
    return lax.digamma(_float(x))


def polygamma(n, x):
    if n != 0:
        raise NotImplementedError("polygamma is only supported for n=0 (digamma)")
    return digamma(x)


def betaln(a, b):
    a, b = _float(a), _float(b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def multigammaln(a, d):
    a = _float(a)
    out = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        out = out + gammaln(a - j / 2)
    return out


def expit(x):
    return lax.logistic(_float(x))


def logit(x):
    x = _float(x)
    return fnp.log(x / (1 - x))


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0``."""
    x, y = _float(x), _float(y)
    safe_y = fnp.where(x == 0, 1.0, y)
    return fnp.where(x == 0, 0.0, x * fnp.log(safe_y))


def xlog1py(x, y):
    x, y = _float(x), _float(y)
    safe_y = fnp.where(x == 0, 0.0, y)
    return fnp.where(x == 0, 0.0, x * fnp.log1p(safe_y))


def entr(x):
    x = _float(x)
    return fnp.where(x > 0, -xlogy(x, x), fnp.where(x == 0, 0.0, -np.inf))


def ndtr(x):
    x = _float(x)
    return 0.5 * lax.erfc(-x * (1 / math.sqrt(2)))


def ndtri(p):
    return math.sqrt(2) * lax.erf_inv(2 * _float(p) - 1)


def log_ndtr(x):
    x = _float(x)
    return fnp.log(ndtr(x))


def softmax(x, axis=None):
    from ..nn import softmax as nn_softmax
    return nn_softmax(x, axis=-1 if axis is None else axis)


def log_softmax(x, axis=None):
    from ..nn import log_softmax as nn_log_softmax
    return nn_log_softmax(x, axis=-1 if axis is None else axis)


def sinc(x):
    return fnp.sinc(x)


def exp1(x):
    raise NotImplementedError("exp1 is not supported yet")
