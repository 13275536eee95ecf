"""``functrans.test_util``: JAX's derivative checks (``jax.test_util``): automatic
derivatives against central finite differences, in one random direction.

    >>> check_grads(fnp.sin, (0.5,), order=2)                   # passes silently
    >>> check_jvp(fnp.exp, functools.partial(ft.jvp, fnp.exp), (0.5,))
    >>> check_vjp(fnp.exp, functools.partial(ft.vjp, fnp.exp), (0.5,))

A mismatch raises AssertionError (``numpy.testing``'s message, labelled with which check and
which order failed). Default tolerances depend on the dtypes compared: 1e-5 for float64,
2e-3 for float32, 1e-2 for float16 (1e-5 and 1e-3 for complex128 and complex64), 0 for
integers; ``atol``/``rtol`` may be a number or a dict from dtype to tolerance. Both are
multiplied by the number of elements of the compared leaf, as in JAX.
"""
from __future__ import annotations

import functools  # noqa: F401  (the examples above use it)

from .transforms.autodiff.jax_check import check_grads, check_jvp, check_vjp  # noqa: F401

__all__ = ["check_grads", "check_jvp", "check_vjp"]
