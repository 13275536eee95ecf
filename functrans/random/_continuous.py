"""Continuous samplers: uniform and the distributions derived from it by inversion.

Each follows JAX's algorithm step for step. ``uniform`` is bit-identical to JAX (including
XLA's fused multiply-add in the scaling step), and so are ``normal`` and
``truncated_normal`` up to rare last-bit differences, since they reproduce XLA's ``erf`` and
``erf_inv`` (see ``_xla_math``). Samplers applying ``log``, ``exp`` or ``tan`` agree with JAX
to a few ulps: those come from different math libraries.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core import dtypes
from ..core.trace import get_aval
from ._prng import UINT_DTYPES, canonical_shape, check_key, random_bits, split_key
from ._xla_math import erf, erf_inv, fma

__all__ = ["uniform", "normal", "truncated_normal", "exponential", "laplace", "logistic",
           "cauchy", "gumbel", "lognormal", "pareto", "rayleigh", "weibull_min", "maxwell",
           "double_sided_maxwell", "triangular", "wald"]


# ---- argument helpers (shared with the discrete samplers) ----------------------------------------
def float_dtype(name: str, dtype) -> np.dtype:
    d = dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype,
                                  what=f"{name}: dtype")
    if dtypes.kind(d) != "f":
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {d}")
    return d


def as_array(x):
    """Lists and tuples become arrays; everything else (scalars, arrays, tracers) is kept."""
    return fnp.asarray(x) if isinstance(x, (list, tuple)) else x


def param_shape(x) -> tuple:
    return get_aval(as_array(x)).shape


def check_shape(name: str, shape: tuple, **params) -> None:
    """Parameters must broadcast to exactly ``shape`` (JAX's rule for ``shape=`` arguments)."""
    for pname, p in params.items():
        pshape = param_shape(p)
        try:
            ok = np.broadcast_shapes(shape, pshape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name}: {pname} of shape {pshape} is not broadcast-compatible "
                             f"with shape {shape} (broadcasting must give exactly {shape})")


def sample_shape(name: str, shape, batch: tuple, of: str) -> tuple:
    """The samples' batch shape: ``batch`` when ``shape`` is None, else ``shape``, which
    ``batch`` (the parameters' batch shape, described by ``of``) must broadcast to."""
    if shape is None:
        return batch
    shape = canonical_shape(name, shape)
    try:
        ok = np.broadcast_shapes(shape, batch) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name}: shape {shape} must be broadcast-compatible with {of}")
    return shape


def result_shape(name: str, shape, **params) -> tuple:
    """``shape`` checked against the parameters, or their broadcast shape when it is None."""
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*(param_shape(p) for p in params.values())))
        except ValueError:
            shown = ", ".join(f"{k} {param_shape(v)}" for k, v in params.items())
            raise ValueError(f"{name}: parameter shapes do not broadcast: {shown}") from None
    shape = canonical_shape(name, shape)
    check_shape(name, shape, **params)
    return shape


def check_safe_cast(name: str, dtype: np.dtype, **params) -> None:
    """Strongly typed parameters must not lose precision when cast to ``dtype`` (as JAX)."""
    for pname, p in params.items():
        aval = get_aval(as_array(p))
        if not aval.weak_type and dtypes.promote_types(aval.dtype, dtype) != dtype:
            raise TypeError(f"{name}: cannot safely cast {pname} of dtype {aval.dtype} to {dtype}; "
                            f"pass {pname} as {dtype} or request dtype={aval.dtype}")


def as_param(x, dtype: np.dtype, shape: tuple):
    """``x`` converted to ``dtype``; rank-0 values stay scalars, others broadcast to ``shape``.

    Python and NumPy scalars become NumPy scalars, so static values stay visible (see
    ``_is_const``)."""
    if type(x) in (bool, int, float) or isinstance(x, np.generic):
        return _c(x, dtype)
    x = lax.convert_element_type(as_array(x), dtype)
    return x if not get_aval(x).shape else fnp.broadcast_to(x, shape)


def _c(value, dtype):
    return np.asarray(value, dtype)[()]


# ---- uniform --------------------------------------------------------------------------------------
def uniform_bits_to_float(key, shape: tuple, dtype: np.dtype, minval, maxval):
    """JAX's uniform: random mantissa bits with exponent 0 give [1, 2); shift and scale."""
    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    udt = UINT_DTYPES[nbits]
    # Types with fewer than 8 mantissa bits (bfloat16, float8) draw 8 random bits, as JAX.
    rng_bits = 8 if nmant < 8 else nbits
    bits = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, udt)
    float_bits = lax.bitwise_or(lax.shift_right_logical(bits, _c(rng_bits - nmant, udt)),
                                np.array(1.0, dtype).view(udt)[()])
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), _c(1.0, dtype))
    if _is_const(minval, 0.0) and _is_const(maxval, 1.0):
        return floats  # max(0, floats * 1 + 0) is floats: skip three passes over the array
    if _is_scalar(minval) and _is_scalar(maxval):
        with np.errstate(all="ignore"):
            span = maxval - minval  # static, so fma can see a power-of-two span
    else:
        span = lax.sub(maxval, minval)
    return lax.max(minval, fma(floats, span, minval, dtype))


def _is_scalar(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic)) and x.shape == ()


def _is_const(x, value) -> bool:
    return _is_scalar(x) and x == value


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` (``minval`` everywhere if ``maxval <= minval``).

        >>> random.uniform(random.key(0), (3,))
        Array([0.41845711, 0.21629545, 0.96532146], dtype=float64)
        >>> random.uniform(random.key(0), (2,), "float32", -1.0, 1.0).dtype
        dtype('float32')
    """
    key = check_key("uniform", key)
    dtype = float_dtype("uniform", dtype)
    shape = canonical_shape("uniform", shape)
    check_shape("uniform", shape, minval=minval, maxval=maxval)
    return uniform_bits_to_float(key, shape, dtype, as_param(minval, dtype, shape),
                                 as_param(maxval, dtype, shape))


def _std_uniform(key, shape, dtype, minval=0.0, maxval=1.0):
    return uniform_bits_to_float(key, shape, dtype, _c(minval, dtype), _c(maxval, dtype))


# ---- normal family --------------------------------------------------------------------------------
def _normal(key, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform_bits_to_float(key, shape, dtype, lo, _c(1.0, dtype))
    return lax.mul(_c(np.sqrt(2), dtype), erf_inv(u, dtype))


def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse-CDF of a uniform in (-1, 1), as JAX).

        >>> random.normal(random.key(0), (3,))
        Array([-0.20584214, -0.78476578,  1.81608667], dtype=float64)
    """
    key = check_key("normal", key)
    shape = canonical_shape("normal", shape)
    if (dtype is not None
            and dtypes.kind(dtypes.canonicalize_dtype(dtype, what="normal: dtype")) == "c"):
        # As JAX: independent real and imaginary parts of variance 1/2 (E|z|^2 = 1).
        d = dtypes.canonicalize_dtype(dtype)
        real = dtypes.real_dtype(d)
        k_re, k_im = (lax.index_in_dim(split_key(key, (2,)), i, keepdims=False) for i in (0, 1))
        z = lax.complex(_normal(k_re, shape, real), _normal(k_im, shape, real))
        return lax.mul(z, _c(1 / np.sqrt(2), d))
    dtype = float_dtype("normal", dtype)
    return _normal(key, shape, dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal samples conditioned on ``lower < x < upper`` (open interval).

        >>> x = random.truncated_normal(random.key(0), -1.0, 1.0, (1000,))
        >>> bool((x > -1).all() and (x < 1).all())
        True
    """
    key = check_key("truncated_normal", key)
    dtype = float_dtype("truncated_normal", dtype)
    shape = result_shape("truncated_normal", shape, lower=lower, upper=upper)
    sqrt2 = _c(np.sqrt(2), dtype)
    lower = lax.convert_element_type(as_array(lower), dtype)
    upper = lax.convert_element_type(as_array(upper), dtype)
    a = erf(lax.div(lower, sqrt2), dtype)
    b = erf(lax.div(upper, sqrt2), dtype)
    a, b = (x if not get_aval(x).shape else fnp.broadcast_to(x, shape) for x in (a, b))
    out = lax.mul(sqrt2, erf_inv(uniform_bits_to_float(key, shape, dtype, a, b), dtype))
    # Rounding (or u landing exactly on a) may leave the open interval: clamp just inside it.
    lo = lax.nextafter(lax.stop_gradient(lower), _c(np.inf, dtype))
    hi = lax.nextafter(lax.stop_gradient(upper), _c(-np.inf, dtype))
    return fnp.minimum(hi, fnp.maximum(lo, out))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """``exp(sigma * normal)``.

        >>> bool((random.lognormal(random.key(0), 0.5, (4,)) > 0).all())
        True
    """
    key = check_key("lognormal", key)
    dtype = float_dtype("lognormal", dtype)
    shape = result_shape("lognormal", shape, sigma=sigma)
    check_safe_cast("lognormal", dtype, sigma=sigma)
    sigma = lax.convert_element_type(as_array(sigma), dtype)
    return fnp.exp(fnp.multiply(_normal(key, shape, dtype), sigma))


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell samples: the norm of three standard normals.

        >>> random.maxwell(random.key(0), (2,)).shape
        (2,)
    """
    key = check_key("maxwell", key)
    dtype = float_dtype("maxwell", dtype)
    shape = canonical_shape("maxwell", shape)
    return fnp.linalg.norm(_normal(key, shape + (3,), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Maxwell samples with a random sign, scaled by ``scale`` and shifted by ``loc``; the
    result has shape ``shape + broadcast(loc, scale).shape``.

        >>> random.double_sided_maxwell(random.key(0), 0.0, 1.0, (3,)).shape
        (3,)
    """
    key = check_key("double_sided_maxwell", key)
    dtype = float_dtype("double_sided_maxwell", dtype)
    shape = canonical_shape("double_sided_maxwell", shape)
    params = result_shape("double_sided_maxwell", None, loc=loc, scale=scale)
    shape = (shape or params) + params
    k_maxwell, k_sign = split_key(key, (2,))
    from ._discrete import rademacher
    r = fnp.linalg.norm(_normal(k_maxwell, shape + (3,), dtype), axis=-1)
    sign = rademacher(k_sign, shape, dtype)
    return fnp.add(fnp.multiply(fnp.multiply(sign, r), as_array(scale)), as_array(loc))


# ---- inversions of exp/log ------------------------------------------------------------------------
def _exponential(key, shape, dtype):
    # log1p(-u) rather than log(1 - u): u in [0, 1) maps onto (0, 1] without rounding.
    return lax.neg(lax.log1p(lax.neg(_std_uniform(key, shape, dtype))))


def exponential(key, shape=(), dtype=None):
    """Exponential samples with rate 1.

        >>> bool((random.exponential(random.key(0), (5,)) >= 0).all())
        True
    """
    key = check_key("exponential", key)
    dtype = float_dtype("exponential", dtype)
    return _exponential(key, canonical_shape("exponential", shape), dtype)


def laplace(key, shape=(), dtype=None):
    """Laplace samples (density ``exp(-|x|) / 2``).

        >>> random.laplace(random.key(0), (2, 2)).shape
        (2, 2)
    """
    key = check_key("laplace", key)
    dtype = float_dtype("laplace", dtype)
    shape = canonical_shape("laplace", shape)
    u = _std_uniform(key, shape, dtype, -1.0 + np.finfo(dtype).epsneg, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Logistic samples: ``log(u) - log1p(-u)``.

        >>> random.logistic(random.key(0), (3,), "float32").dtype
        dtype('float32')
    """
    key = check_key("logistic", key)
    dtype = float_dtype("logistic", dtype)
    shape = canonical_shape("logistic", shape)
    x = _std_uniform(key, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples: ``tan(pi * (u - 1/2))``.

        >>> random.cauchy(random.key(0), (3,)).shape
        (3,)
    """
    key = check_key("cauchy", key)
    dtype = float_dtype("cauchy", dtype)
    shape = canonical_shape("cauchy", shape)
    u = _std_uniform(key, shape, dtype, np.finfo(dtype).eps, 1.0)
    return lax.tan(lax.mul(_c(np.pi, dtype), lax.sub(u, _c(0.5, dtype))))


def _clz32(x):
    """Count leading zeros of uint32 ``x`` by binary search (32 for zero)."""
    n = lax.full_like(x, 0)
    for s in (16, 8, 4, 2, 1):
        top_zero = lax.lt(x, np.uint32(1 << (32 - s)))
        n = lax.select(top_zero, lax.add(n, np.uint32(s)), n)
        x = lax.select(top_zero, lax.shift_left(x, np.uint32(s)), x)
    return lax.add(n, lax.convert_element_type(lax.eq(x, np.uint32(0)), np.uint32))


def _u64_bits_to_f32(hi, lo):
    """The 64-bit fixed-point fraction ``hi:lo`` as a float32 in (0, 1), keeping the leading
    significant bits wherever they are (JAX's ``_safe_int_to_float``)."""
    info = np.finfo(np.float32)
    u32 = np.uint32
    hiclz, loclz = _clz32(hi), _clz32(lo)
    hi_all_zero = lax.eq(hiclz, u32(32))
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        lax.select(hi_all_zero, lax.shift_left(lo, loclz),
                   lax.shift_right_logical(lo, lax.sub(u32(32), hiclz))))
    mantissa = lax.shift_right_logical(mantissa, u32(info.bits - info.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, u32((1 << info.nmant) - 1))
    lead = lax.select(hi_all_zero, lax.add(loclz, u32(32)), hiclz)
    exp = lax.shift_left(lax.sub(u32(-info.minexp), lead), u32(info.nmant))
    exp = lax.bitwise_and(exp, u32((1 << (info.bits - 2)) - (1 << (info.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


def _gumbel(key, shape, dtype, mode):
    info = np.finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        bits = random_bits(key, 32, (2,) + shape)
        b_hi, b_lo = (lax.index_in_dim(bits, i, keepdims=False) for i in (0, 1))
        # 1 - bits as a 64-bit fixed-point number: complement, then add one with carry.
        n_hi, n_lo = lax.bitwise_not(b_hi), lax.bitwise_not(b_lo)
        carry = lax.convert_element_type(lax.eq(n_lo, np.uint32(0xFFFFFFFF)), np.uint32)
        n_hi, n_lo = lax.add(n_hi, carry), lax.add(n_lo, np.uint32(1))
        flip = lax.lt(b_hi, np.uint32(1 << 31))
        x = _u64_bits_to_f32(lax.select(flip, b_hi, n_hi), lax.select(flip, b_lo, n_lo))
        # log1p for x in (0, 1/2) and log for [1/2, 1): both keep full relative precision.
        small = lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
        large = lax.neg(lax.log(lax.neg(lax.log(x))))
        return lax.select(flip, small, large)
    if mode in ("high", "highest"):
        u = _std_uniform(key, (2,) + shape, dtype)
        high, low = (lax.index_in_dim(u, i, keepdims=False) for i in (0, 1))
        fine = lax.add(lax.add(high, lax.mul(_c(2.0 ** -info.nmant, dtype), low)),
                       _c(info.tiny, dtype))
        x = lax.select(lax.ge(high, _c(0.5, dtype)), high, fine)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _std_uniform(key, shape, dtype, info.tiny, 1.0)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel samples: ``-log(-log(u))``.

    ``mode="high"`` uses two uniforms per sample for a wider tail, ``"highest"`` (float32) a
    64-bit fixed-point uniform; the default is ``"low"``, as in JAX.

        >>> random.gumbel(random.key(0), (3,), mode="high").shape
        (3,)
    """
    key = check_key("gumbel", key)
    dtype = float_dtype("gumbel", dtype)
    shape = canonical_shape("gumbel", shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    return _gumbel(key, shape, dtype, mode)


def pareto(key, b, shape=None, dtype=None):
    """Pareto samples with shape parameter ``b`` on ``[1, inf)``: ``exp(exponential / b)``.

        >>> bool((random.pareto(random.key(0), 2.0, (4,)) >= 1).all())
        True
    """
    key = check_key("pareto", key)
    dtype = float_dtype("pareto", dtype)
    shape = result_shape("pareto", shape, b=b)
    check_safe_cast("pareto", dtype, b=b)
    b = lax.convert_element_type(as_array(b), dtype)
    return fnp.exp(fnp.divide(_exponential(key, shape, dtype), b))


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples: ``scale * sqrt(-2 log u)``.

        >>> random.rayleigh(random.key(0), 1.0, (2,)).shape
        (2,)
    """
    key = check_key("rayleigh", key)
    dtype = float_dtype("rayleigh", dtype)
    shape = result_shape("rayleigh", shape, scale=scale)
    check_safe_cast("rayleigh", dtype, scale=scale)
    u = _std_uniform(key, shape, dtype)
    scale = as_param(scale, dtype, shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _c(-2, dtype))))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples: ``(-log1p(-u)) ** (1 / concentration) * scale``.

        >>> random.weibull_min(random.key(0), 1.0, 2.0, (3,)).shape
        (3,)
    """
    key = check_key("weibull_min", key)
    dtype = float_dtype("weibull_min", dtype)
    shape = canonical_shape("weibull_min", shape)
    u = _std_uniform(key, shape, dtype)
    e = fnp.negative(fnp.log1p(fnp.negative(u)))
    return fnp.multiply(fnp.power(e, fnp.divide(1.0, as_array(concentration))), as_array(scale))


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on ``[left, right]`` with peak at ``mode`` (inverse CDF).

        >>> x = random.triangular(random.key(0), 0.0, 1.0, 3.0, (100,))
        >>> bool((x >= 0).all() and (x <= 3).all())
        True
    """
    key = check_key("triangular", key)
    dtype = float_dtype("triangular", dtype)
    shape = result_shape("triangular", shape, left=left, mode=mode, right=right)
    check_safe_cast("triangular", dtype, left=left, mode=mode, right=right)
    left, mode, right = (fnp.broadcast_to(lax.convert_element_type(as_array(v), dtype), shape)
                         for v in (left, mode, right))
    fc = lax.div(lax.sub(mode, left), lax.sub(right, left))
    u = _std_uniform(key, shape, dtype)
    width = lax.sub(right, left)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(_c(1, dtype), u), width),
                                           lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with the given ``mean`` and unit shape parameter.

        >>> bool((random.wald(random.key(0), 1.0, (5,)) > 0).all())
        True
    """
    key = check_key("wald", key)
    dtype = float_dtype("wald", dtype)
    shape = result_shape("wald", shape, mean=mean)
    check_safe_cast("wald", dtype, mean=mean)
    k1, k2 = (lax.index_in_dim(split_key(key, (2,)), i, keepdims=False) for i in (0, 1))
    mean = fnp.broadcast_to(lax.convert_element_type(as_array(mean), dtype), shape)
    v = _normal(k1, shape, dtype)
    z = _std_uniform(k2, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(_c(4, dtype), mean), y), lax.mul(mean_sq, y_sq)))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), _c(2, dtype))),
                lax.mul(lax.div(mean, _c(2, dtype)), sqrt_term))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))
