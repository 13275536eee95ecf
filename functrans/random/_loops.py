"""Samplers that need rejection loops: gamma and what is built from it (loggamma, beta,
dirichlet, chisquare, t, f), and the counting distributions (poisson, binomial,
multinomial).

Each element gets its own key (``split`` into one key per element) and runs its own
``while_loop`` under ``vmap``, so results do not depend on how elements are batched and jit
gives the eager values. The algorithms are the classic published ones (Marsaglia & Tsang 2000
for gamma; Hörmann 1993's transformed rejection, PTRS and BTRS, for large Poisson and binomial
means; waiting-time inversion for small ones). They are not bit-identical to ``jax.random``:
the same distributions, different streams.

Gamma samples differentiate with respect to ``a`` by implicit reparameterization
(Figurnov et al. 2018): ``dx/da = -(dP(a, x)/da) / p(x; a)`` with ``P`` the regularized
incomplete gamma function, whose ``a``-derivative comes from differentiating its series.

Known limitation: under ``jit`` these samplers currently fail to compile (Numba's SSA pass
recurses too deeply on the kernel of a vmapped rejection loop); they work eagerly and under
``vmap`` and ``grad``.

    >>> x = random.gamma(random.key(0), 2.0, (4,))
    >>> x.shape, bool((x > 0).all())
    ((4,), True)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core import dtypes
from ..core.trace import get_aval
from ..transforms.autodiff import custom_jvp
from ..transforms.batching import vmap
from ._continuous import (_exponential, _normal, _std_uniform, as_array, check_safe_cast,
                          float_dtype, result_shape, sample_shape)
from ._prng import canonical_shape, check_key, split_key

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f", "poisson",
           "binomial", "multinomial"]


def _keys(key, n):
    keys = split_key(key, (n,))
    return [lax.index_in_dim(keys, i, keepdims=False) for i in range(n)]


def _per_element(fn, key, shape, dtype, *params):
    """``fn(key, *scalar_params)`` for every element of ``shape``, each with its own key."""
    size = math.prod(shape)
    if size == 0:
        return fnp.zeros(shape, dtype)
    keys = split_key(key, (size,))
    flat = [fnp.reshape(fnp.broadcast_to(p, shape), (size,)) for p in params]
    return fnp.reshape(vmap(fn)(keys, *flat), shape)


# ---- gamma ----------------------------------------------------------------------------------------
def _log_gamma_one(key, a):
    """log of one Gamma(a, 1) sample (Marsaglia & Tsang; a < 1 is boosted to a + 1 and
    multiplied by u**(1/a), done in log space so tiny ``a`` does not underflow)."""
    dt = get_aval(a).dtype
    one = dt.type(1)
    boost = a < 1
    alpha = fnp.where(boost, a + one, a)
    d = alpha - dt.type(1 / 3)
    c = one / fnp.sqrt(dt.type(9) * d)
    k_loop, k_boost = _keys(key, 2)

    def cond(s):
        return ~s[2]

    def body(s):
        k, _, _ = s
        k, k_z, k_u = _keys(k, 3)
        z = _normal(k_z, (), dt)
        v = (one + c * z) ** 3
        u = _std_uniform(k_u, (), dt)
        v_safe = fnp.where(v > 0, v, one)
        # Squeeze test first (cheap, accepts ~98%), then the exact log test.
        accept = (v > 0) & ((u < one - dt.type(0.0331) * z ** 4)
                            | (fnp.log(u) < dt.type(0.5) * z * z + d - d * v_safe
                               + d * fnp.log(v_safe)))
        return k, v_safe, accept

    _, v, _ = lax.while_loop(cond, body, (k_loop, one, fnp.asarray(False)))
    log_boost = fnp.where(boost, -_exponential(k_boost, (), dt) / a, dt.type(0))
    return fnp.log(d) + fnp.log(v) + log_boost


@custom_jvp
def _reparam_log(a, log_x):
    return log_x


def _reparam_log_jvp(primals, tangents):
    # d(log x)/da = -(dP/da)(a, x) / (x p(x; a)), with x p(x; a) = exp(a log x - x - lgamma a).
    a, log_x = primals
    a_dot, _ = tangents
    x = fnp.exp(log_x)
    dp_da = lax.igamma_grad_a(a, x)
    x_pdf = fnp.exp(a * log_x - x - lax.lgamma(a))
    return log_x, -dp_da / x_pdf * a_dot


_reparam_log.defjvp(_reparam_log_jvp)


def _loggamma(key, a, shape, dtype):
    a = fnp.broadcast_to(lax.convert_element_type(as_array(a), dtype), shape)
    raw = _per_element(_log_gamma_one, key, shape, dtype, lax.stop_gradient(a))
    return _reparam_log(a, lax.stop_gradient(raw))


def _check_a(name, key, a, shape, dtype):
    key = check_key(name, key)
    dtype = float_dtype(name, dtype)
    shape = result_shape(name, None if shape is None else canonical_shape(name, shape), a=a)
    check_safe_cast(name, dtype, a=a)
    return key, shape, dtype


def loggamma(key, a, shape=None, dtype=None):
    """``log`` of Gamma(``a``, 1) samples, computed in log space: finite even where the
    samples themselves underflow (``a`` below ~0.01 in float32).

        >>> bool(fnp.isfinite(random.loggamma(random.key(0), 1e-4, (3,), "float32")).all())
        True
    """
    key, shape, dtype = _check_a("loggamma", key, a, shape, dtype)
    return _loggamma(key, a, shape, dtype)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(``a``, 1) samples (scale them for other rates); ``shape`` defaults to
    ``a``'s shape. Differentiable with respect to ``a`` (implicit reparameterization).

        >>> random.gamma(random.key(0), fnp.array([0.5, 5.0])).shape
        (2,)
        >>> g = ft.grad(lambda a: random.gamma(random.key(1), a))(2.0)
        >>> bool(g > 0)
        True
    """
    key, shape, dtype = _check_a("gamma", key, a, shape, dtype)
    return fnp.exp(_loggamma(key, a, shape, dtype))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square samples with ``df`` degrees of freedom: ``2 * gamma(df / 2)``.

        >>> random.chisquare(random.key(0), 3.0, (2,)).shape
        (2,)
    """
    key, shape, dtype = _check_a("chisquare", key, df, shape, dtype)
    half = lax.convert_element_type(as_array(df), dtype) / dtype.type(2)
    return dtype.type(2) * fnp.exp(_loggamma(key, half, shape, dtype))


def t(key, df, shape=None, dtype=None):
    """Student's t samples: ``normal * sqrt(df / chisquare(df))``.

        >>> random.t(random.key(0), 5.0, (3,)).shape
        (3,)
    """
    key, shape, dtype = _check_a("t", key, df, shape, dtype)
    k_n, k_g = _keys(key, 2)
    half = lax.convert_element_type(as_array(df), dtype) / dtype.type(2)
    g = fnp.exp(_loggamma(k_g, half, shape, dtype))
    return _normal(k_n, shape, dtype) * fnp.sqrt(half / g)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F samples: ``(chisquare(dfnum) / dfnum) / (chisquare(dfden) / dfden)``.

        >>> bool((random.f(random.key(0), 2.0, 3.0, (4,)) > 0).all())
        True
    """
    key = check_key("f", key)
    dtype = float_dtype("f", dtype)
    shape = result_shape("f", None if shape is None else canonical_shape("f", shape),
                         dfnum=dfnum, dfden=dfden)
    check_safe_cast("f", dtype, dfnum=dfnum, dfden=dfden)
    k1, k2 = _keys(key, 2)
    num, den = (lax.convert_element_type(as_array(v), dtype) for v in (dfnum, dfden))
    two = dtype.type(2)
    # The gamma scale factors 2 cancel: (2 g1 / num) / (2 g2 / den).
    g1 = fnp.exp(_loggamma(k1, num / two, shape, dtype))
    g2 = fnp.exp(_loggamma(k2, den / two, shape, dtype))
    return (g1 / num) / (g2 / den)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(``a``, ``b``) samples as ``ga / (ga + gb)`` of two gamma samples, combined in log
    space so tiny ``a`` and ``b`` still give values in [0, 1]. Differentiable in ``a``, ``b``.

        >>> x = random.beta(random.key(0), 2.0, 3.0, (5,))
        >>> bool(((x >= 0) & (x <= 1)).all())
        True
    """
    key = check_key("beta", key)
    dtype = float_dtype("beta", dtype)
    shape = result_shape("beta", None if shape is None else canonical_shape("beta", shape),
                         a=a, b=b)
    check_safe_cast("beta", dtype, a=a, b=b)
    k_a, k_b = _keys(key, 2)
    la = _loggamma(k_a, a, shape, dtype)
    lb = _loggamma(k_b, b, shape, dtype)
    m = fnp.maximum(la, lb)
    ea, eb = fnp.exp(la - m), fnp.exp(lb - m)
    return ea / (ea + eb)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet samples over ``alpha``'s last axis: shape ``shape + alpha.shape[-1:]``, where
    ``shape`` must broadcast with ``alpha.shape[:-1]``.

        >>> x = random.dirichlet(random.key(0), fnp.array([1.0, 2.0, 3.0]), (2,))
        >>> x.shape, bool(fnp.allclose(x.sum(-1), 1.0))
        ((2, 3), True)
    """
    key = check_key("dirichlet", key)
    dtype = float_dtype("dirichlet", dtype)
    alpha = as_array(alpha)
    a_shape = get_aval(alpha).shape
    if not a_shape:
        raise ValueError("dirichlet: alpha must have at least one dimension (the categories), "
                         "got a scalar")
    batch = a_shape[:-1]
    shape = sample_shape("dirichlet", shape, batch, f"alpha.shape[:-1] = {batch}")
    check_safe_cast("dirichlet", dtype, alpha=alpha)
    lg = _loggamma(key, alpha, shape + a_shape[-1:], dtype)
    lg = lg - lax.stop_gradient(fnp.max(lg, axis=-1, keepdims=True))
    e = fnp.exp(lg)
    return e / fnp.sum(e, axis=-1, keepdims=True)


# ---- counts ---------------------------------------------------------------------------------------
def _poisson_small(key, lam):
    """Count unit-rate exponential arrivals in [0, lam] (expected lam + 1 iterations)."""
    dt = get_aval(lam).dtype

    def cond(s):
        return s[1] <= lam

    def body(s):
        k, total, count = s
        k, sub = _keys(k, 2)
        return k, total + _exponential(sub, (), dt), count + 1

    zero = fnp.zeros((), dt)
    _, _, count = lax.while_loop(cond, body, (key, zero, zero - 1))
    return count


def _poisson_ptrs(key, lam):
    """Hörmann's PTRS transformed rejection (for lam >= 10; ~1.1 iterations on average)."""
    dt = get_aval(lam).dtype
    c = dt.type
    slam, loglam = fnp.sqrt(lam), fnp.log(lam)
    b = c(0.931) + c(2.53) * slam
    a = c(-0.059) + c(0.02483) * b
    inv_alpha = c(1.1239) + c(1.1328) / (b - c(3.4))
    v_r = c(0.9277) - c(3.6224) / (b - c(2))

    def body(s):
        k, _, _ = s
        k, k_u, k_v = _keys(k, 3)
        u = _std_uniform(k_u, (), dt) - c(0.5)
        v = _std_uniform(k_v, (), dt)
        us = c(0.5) - fnp.abs(u)
        n = fnp.floor((c(2) * a / us + b) * u + lam + c(0.43))
        fast = (us >= c(0.07)) & (v <= v_r)
        reject = (n < 0) | ((us < c(0.013)) & (v > us))
        log_ok = (fnp.log(v) + fnp.log(inv_alpha) - fnp.log(a / (us * us) + b)
                  <= -lam + n * loglam - lax.lgamma(n + c(1)))
        return k, n, fast | (~reject & log_ok)

    _, n, _ = lax.while_loop(lambda s: ~s[2], body, (key, fnp.zeros((), dt), fnp.asarray(False)))
    return n


def _poisson_one(key, lam):
    small = lam < 10
    k1, k2 = _keys(key, 2)
    lo = _poisson_small(k1, fnp.where(small, lam, 0.0))
    hi = _poisson_ptrs(k2, fnp.where(small, 10.0, lam))
    out = fnp.where(small, lo, hi)
    return fnp.where((lam >= 0), out, -1.0)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(``lam``) counts as integers (default int dtype); -1 marks a negative or NaN
    ``lam``.

        >>> random.poisson(random.key(0), fnp.array([0.5, 50.0])).dtype
        dtype('int64')
    """
    key = check_key("poisson", key)
    dtype = dtypes.canonicalize_dtype(dtypes.default_int_dtype() if dtype is None else dtype,
                                      what="poisson: dtype")
    if dtypes.kind(dtype) not in "iu":
        raise ValueError(f"dtype argument to `poisson` must be an int dtype, got {dtype}")
    shape = result_shape("poisson", None if shape is None else canonical_shape("poisson", shape),
                         lam=lam)
    lam = as_array(lam)
    fdt = get_aval(lam).dtype if dtypes.kind(get_aval(lam).dtype) == "f" else \
        dtypes.default_float_dtype()
    lam = lax.stop_gradient(lax.convert_element_type(lam, fdt))
    return _per_element(_poisson_one, key, shape, fdt, lam).astype(dtype)


def _binomial_inversion(key, n, p):
    """Successes among n trials by summing geometric waiting times (expected n p + 1
    iterations)."""
    dt = get_aval(p).dtype
    log_q = fnp.log1p(-p)

    def cond(s):
        return s[1] <= n

    def body(s):
        k, trials, count = s
        k, sub = _keys(k, 2)
        u = _std_uniform(sub, (), dt, np.finfo(dt).tiny, 1.0)
        wait = fnp.ceil(fnp.log(u) / log_q)
        return k, trials + fnp.maximum(wait, dt.type(1)), count + 1

    zero = fnp.zeros((), dt)
    _, _, count = lax.while_loop(cond, body, (key, zero, zero - 1))
    return count


def _binomial_btrs(key, n, p):
    """Hörmann's BTRS transformed rejection (for n p >= 10, p <= 1/2)."""
    dt = get_aval(p).dtype
    c = dt.type
    q = c(1) - p
    spq = fnp.sqrt(n * p * q)
    b = c(1.15) + c(2.53) * spq
    a = c(-0.0873) + c(0.0248) * b + c(0.01) * p
    cc = n * p + c(0.5)
    v_r = c(0.92) - c(4.2) / b
    alpha = (c(2.83) + c(5.1) / b) * spq
    lpq = fnp.log(p / q)
    m = fnp.floor((n + c(1)) * p)
    h = lax.lgamma(m + c(1)) + lax.lgamma(n - m + c(1))

    def body(s):
        k, _, _ = s
        k, k_u, k_v = _keys(k, 3)
        u = _std_uniform(k_u, (), dt) - c(0.5)
        v = _std_uniform(k_v, (), dt)
        us = c(0.5) - fnp.abs(u)
        x = fnp.floor((c(2) * a / us + b) * u + cc)
        inside = (x >= 0) & (x <= n)
        fast = (us >= c(0.07)) & (v <= v_r)
        log_v = fnp.log(v * alpha / (a / (us * us) + b))
        log_ok = log_v <= h - lax.lgamma(x + c(1)) - lax.lgamma(n - x + c(1)) + (x - m) * lpq
        return k, x, inside & (fast | log_ok)

    _, x, _ = lax.while_loop(lambda s: ~s[2], body, (key, fnp.zeros((), dt), fnp.asarray(False)))
    return x


def _binomial_one(key, n, p):
    flip = p > 0.5
    pp = fnp.where(flip, 1 - p, p)
    small = n * pp < 10
    k1, k2 = _keys(key, 2)
    lo = _binomial_inversion(k1, fnp.where(small, n, 0.0), fnp.where(small, pp, 0.5))
    hi = _binomial_btrs(k2, fnp.where(small, 100.0, n), fnp.where(small, 0.5, pp))
    x = fnp.where(small, lo, hi)
    x = fnp.where(flip, n - x, x)
    bad = (n < 0) | (p < 0) | (p > 1) | fnp.isnan(n) | fnp.isnan(p)
    return fnp.where(bad, np.nan, x)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(``n``, ``p``) counts, as floats (like ``jax.random.binomial``); NaN for
    ``n < 0`` or ``p`` outside [0, 1].

        >>> x = random.binomial(random.key(0), 20.0, fnp.array([0.1, 0.9]))
        >>> x.dtype, bool(((x >= 0) & (x <= 20)).all())
        (dtype('float64'), True)
    """
    key = check_key("binomial", key)
    dtype = float_dtype("binomial", dtype)
    shape = result_shape("binomial",
                         None if shape is None else canonical_shape("binomial", shape), n=n, p=p)
    check_safe_cast("binomial", dtype, n=n, p=p)
    n, p = (lax.stop_gradient(lax.convert_element_type(as_array(v), dtype)) for v in (n, p))
    return _per_element(_binomial_one, key, shape, dtype, n, p)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of ``n`` draws over the categories on ``p``'s last axis (``p`` should sum to
    1), as floats: shape ``shape + p.shape[-1:]``, ``shape`` defaulting to the broadcast of
    ``n``'s shape and ``p.shape[:-1]``. Sampled as a chain of conditional binomials.

        >>> x = random.multinomial(random.key(0), 10.0, fnp.array([0.2, 0.3, 0.5]))
        >>> x.shape, float(x.sum())
        ((3,), 10.0)
    """
    del unroll  # accepted for JAX compatibility; the category loop is a scan either way
    key = check_key("multinomial", key)
    dtype = float_dtype("multinomial", dtype)
    p = lax.stop_gradient(lax.convert_element_type(as_array(p), dtype))
    n = lax.stop_gradient(lax.convert_element_type(as_array(n), dtype))
    p_shape = get_aval(p).shape
    if not p_shape:
        raise ValueError("multinomial: p must have at least one dimension (the categories)")
    k = p_shape[-1]
    batch = np.broadcast_shapes(get_aval(n).shape, p_shape[:-1])
    shape = sample_shape("multinomial", shape, batch,
                         f"the batch shape {batch} of n and p.shape[:-1]")
    p = fnp.broadcast_to(p, shape + (k,))
    n = fnp.broadcast_to(n, shape)
    keys = split_key(key, (k,))

    def step(carry, xs):
        remaining_n, remaining_p = carry
        key_i, p_i = xs
        cond_p = fnp.clip(p_i / fnp.where(remaining_p > 0, remaining_p, 1.0), 0.0, 1.0)
        count = _per_element(_binomial_one, key_i, shape, dtype, remaining_n, cond_p)
        return (remaining_n - count, remaining_p - p_i), count

    (rest, _), counts = lax.scan(step, (n, fnp.ones(shape, dtype)),
                                 (keys[:-1], fnp.moveaxis(p[..., :-1], -1, 0)))
    return fnp.concatenate([fnp.moveaxis(counts, 0, -1), rest[..., None]], axis=-1)
