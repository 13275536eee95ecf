"""Testing helpers: hypothesis strategies for arrays, dtypes, shapes and axes
(``strategies.py``); :func:`check_against`, which compares a functrans function with a NumPy
(or SciPy) oracle eagerly *and* traced (``make_jaxpr`` -> ``check_jaxpr`` -> ``eval_jaxpr``;
``oracle.py``); ``check_grads`` (``transforms/autodiff/check.py``); and
:func:`check_transforms` (``transforms/laws.py``), which checks that a function's jit, vmap
and derivatives agree (the laws user-written derivative and batching rules must keep).

    >>> from hypothesis import given
    >>> @given(arrays(dtypes=float_dtypes()))
    ... def test_sin(x):
    ...     check_against(fnp.sin, np.sin, x)
    >>> @given(float_arrays(shape=(3,), positive=True))
    ... def test_log_transforms(x):
    ...     check_transforms(fnp.log, x)
"""
from __future__ import annotations

from ..transforms.autodiff.check import check_grads  # noqa: F401
from ..transforms.laws import (LAWS, LawResult, TransformLawError,  # noqa: F401
                               TransformReport, check_transforms)
from .oracle import _leaves, assert_close, check_against, eps, raises_like  # noqa: F401
from .strategies import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES,  # noqa: F401
                         SIGNED_DTYPES, SPECIAL_FLOATS, UNSIGNED_DTYPES, all_dtypes, arrays,
                         axes, broadcastable_shapes, dtypes_from, elements_for, float_arrays,
                         float_dtypes, float_elements, int_dtypes, int_elements,
                         numeric_dtypes, python_scalars, shapes)

__all__ = ["ALL_DTYPES", "FLOAT_DTYPES", "INT_DTYPES", "LAWS", "LawResult", "NUMERIC_DTYPES",
           "SIGNED_DTYPES", "SPECIAL_FLOATS", "TransformLawError", "TransformReport",
           "UNSIGNED_DTYPES", "all_dtypes", "arrays", "assert_close", "axes",
           "broadcastable_shapes", "check_against", "check_grads", "check_transforms",
           "dtypes_from", "elements_for", "eps", "float_arrays", "float_dtypes",
           "float_elements", "int_dtypes", "int_elements", "numeric_dtypes", "python_scalars",
           "raises_like", "shapes"]
