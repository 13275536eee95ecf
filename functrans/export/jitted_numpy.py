"""The ``jax.numpy`` functions JAX defines as ``jit``-wrapped functions (``PjitFunction`` in
JAX 0.10.2), which ``export`` takes as they are (``export(jnp.cos)``); functrans's
``functrans.numpy`` functions of these names are exported through ``jit``.

    >>> "cos" in JITTED_IN_JAX and "sum" not in JITTED_IN_JAX
    True
"""
from __future__ import annotations

JITTED_IN_JAX = frozenset("""
abs absolute acos acosh allclose angle append arccos arccosh arcsin arcsinh arctan arctan2
arctanh argpartition argsort around asin asinh atan atan2 atanh atleast_1d atleast_2d
atleast_3d bitwise_count bitwise_invert bitwise_left_shift bitwise_not bitwise_right_shift
block cbrt ceil clip conjugate convolve copysign corrcoef correlate cos cosh count_nonzero cov
cross cumprod cumsum deg2rad diagonal diff digitize divmod dot ediff1d equal exp exp2 expm1
fabs float_power floor floor_divide fmax fmin fmod frexp gcd gradient greater greater_equal
heaviside hypot i0 imag inner invert isclose iscomplex isfinite isinf isnan isreal kron lcm
ldexp left_shift less less_equal lexsort log log10 log1p log2 logical_not matmul matvec median
modf nan_to_num nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod
nanquantile nanstd nansum nanvar nextafter not_equal outer packbits partition percentile poly
polyadd polyder polyfit polyint polysub polyval positive put_along_axis quantile rad2deg ravel
real reciprocal remainder resize right_shift rint rollaxis rot90 round searchsorted sign
signbit sin sinc sinh sort sort_complex spacing sqrt square swapaxes take_along_axis tan tanh
trace trapezoid tril triu true_divide trunc unpackbits unstack unwrap vander vdot vecmat
""".split())


def is_jitted_in_jax(fun) -> bool:
    """Whether ``fun`` is the ``functrans.numpy`` function of a name JAX jit-wraps."""
    module = getattr(fun, "__module__", None) or ""
    name = getattr(fun, "__name__", None)
    if not (module == "functrans.numpy" or module.startswith("functrans.numpy.")):
        return False
    if name not in JITTED_IN_JAX:
        return False
    import sys  # the package is loaded whenever one of its functions exists
    return getattr(sys.modules["functrans.numpy"], name, None) is fun
