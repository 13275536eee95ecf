"""``dimension_as_value``: a dimension size (possibly symbolic) as a scalar integer array, so
programs traced with symbolic shapes can compute with ``x.shape[0]`` (JAX's ``dim_as_value``).
Its only param is the dimension; it has no inputs, so every transformation treats it as a
constant. An export specialized to concrete sizes replaces it by a literal
(``functrans.export.shape_poly.specialize``), so no backend compiles it.

    >>> import functrans as ft
    >>> from functrans.core.shape_poly import symbolic_shape
    >>> n, = symbolic_shape("n")
    >>> ft.make_jaxpr(lambda x: x.shape[0] + x)(ft.ShapeDtypeStruct((n,), "int64"))
    { lambda ; a:i64[n]. let
        b:i64[] = dimension_as_value[dim=n dtype=int64]
        c:i64[] = convert_element_type[new_dtype=int64 weak_type=False] b
        d:i64[n] = add c a
      in (d,) }
"""
from __future__ import annotations

import numpy as np

from ..core import shape_poly
from ..core.avals import ShapedArray
from ..core.dtypes import default_int_dtype
from ..core.trace import Primitive


def _abstract_eval(*, dim, dtype):
    if not (shape_poly.is_symbolic_dim(dim) or shape_poly.is_constant_dim(dim)):
        raise TypeError(f"dimension_as_value: dim must be an integer or a symbolic dimension, "
                        f"got {dim!r}")
    return [ShapedArray((), dtype, weak_type=True)]


def _impl(*, dim, dtype):
    if shape_poly.is_symbolic_dim(dim):
        raise shape_poly.InconclusiveDimensionOperation(
            f"Symbolic dimension '{dim}' has no value outside a traced program")
    return [np.asarray(dim, dtype=dtype)]


dimension_as_value_p = Primitive("dimension_as_value", impl=_impl, abstract_eval=_abstract_eval)


def dimension_as_value(d):
    """``d`` as a value: an int stays an int, a symbolic dimension becomes a weakly typed
    scalar integer array of the program (JAX's ``core.dimension_as_value``).

        >>> dimension_as_value(3)
        3
    """
    if not shape_poly.is_symbolic_dim(d):
        return d
    return dimension_as_value_p.bind1(dim=d, dtype=default_int_dtype())


shape_poly.dimension_as_value_hook = dimension_as_value
