"""Testing helpers: hypothesis strategies for arrays, dtypes and shapes.

    >>> from hypothesis import given
    >>> @given(arrays(dtypes=float_dtypes()))
    ... def test_sin(x): ...
"""
from __future__ import annotations

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # hypothesis is a dev dependency
    st = hnp = None

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
ALL_DTYPES = ("bool",) + INT_DTYPES + FLOAT_DTYPES


def _need_hypothesis():
    if st is None:
        raise ImportError("functrans.testing strategies need hypothesis: pip install hypothesis")


def dtypes_from(names):
    """A strategy drawing one of the named dtypes."""
    _need_hypothesis()
    return st.sampled_from([np.dtype(n) for n in names])


def float_dtypes():
    return dtypes_from(FLOAT_DTYPES)


def int_dtypes():
    return dtypes_from(INT_DTYPES)


def all_dtypes():
    return dtypes_from(ALL_DTYPES)


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes (small by default, including empty and rank-0)."""
    _need_hypothesis()
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtypes=None, shape=None, elements=None, finite=True, **shape_kwargs):
    """NumPy arrays with the given dtype strategy and shape (strategy or tuple).

    ``finite=True`` keeps floats finite and moderate (|x| <= 1e3) so oracles are stable.
    """
    _need_hypothesis()
    dtypes = all_dtypes() if dtypes is None else dtypes
    shape = shapes(**shape_kwargs) if shape is None else shape

    def build(dt):
        el = elements
        if el is None and dt.kind == "f" and finite:
            el = st.floats(-1e3, 1e3, allow_nan=False, width=8 * dt.itemsize)
        return hnp.arrays(dt, shape, elements=el)

    return dtypes.flatmap(build)
