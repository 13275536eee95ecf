"""JAX's names for the narrow floating-point and integer types (``fnp.bfloat16``,
``fnp.float8_e4m3fn``, ``fnp.int4``, ...), the types of the ``ml_dtypes`` package, present
when it is installed (an optional dependency, as JAX's libraries need it).

bfloat16 and the float8/float4 types compute as in JAX on CPU (each operation in float32, its
result rounded: see ``functrans.core.dtypes.narrow_floats``); values of the narrow integer
types (int2, int4, uint2, uint4) are refused by name (``UnsupportedDtypeError``) wherever they
enter a computation: their names exist for dtype comparisons. ml_dtypes is imported when
one of these names is first asked for (its import costs more than half of functrans' own).

    >>> import functrans.numpy as fnp
    >>> str(fnp.dtype(fnp.bfloat16)) if hasattr(fnp, "bfloat16") else "bfloat16"
    'bfloat16'
"""
from __future__ import annotations

NAMES = ("bfloat16", "float4_e2m1fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
         "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
         "float8_e8m0fnu", "int2", "int4", "uint2", "uint4")

_types = None


def types() -> dict:
    """Name -> type of those of :data:`NAMES` that the installed ml_dtypes has (none without
    it), importing it on the first call."""
    global _types
    if _types is None:
        try:
            import ml_dtypes
        except ImportError:  # without it these names are missing, as any unknown name is
            ml_dtypes = None
        _types = {n: getattr(ml_dtypes, n) for n in NAMES if hasattr(ml_dtypes, n)}
    return _types
