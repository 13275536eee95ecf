"""``numba_vectorize``: a scalar Python function as an elementwise operation on arrays.

    >>> import math
    >>> @ft.numba_vectorize
    ... def softplus(x):
    ...     return math.log1p(math.exp(-abs(x))) + max(x, 0.0)
    >>> softplus(fnp.array([-1.0, 0.0, 2.0])).round(4)
    Array([0.3133, 0.6931, 2.1269], dtype=float64)
"""
from __future__ import annotations

import functools

import numpy as np

from functrans import numpy as fnp
from functrans.core.ir import source_info
from functrans.core.trace import get_aval
from functrans.primitives.numba_elementwise import ScalarCode, numba_vectorize_p

__all__ = ["numba_vectorize", "NumbaVectorized"]

_PY_SCALARS = (bool, int, float, complex)


class NumbaVectorized:
    """A scalar kernel applied elementwise (made by :func:`numba_vectorize`)."""

    def __init__(self, fn, derivatives=None):
        if not callable(fn):
            raise TypeError(f"numba_vectorize: expected a scalar function, got "
                            f"{type(fn).__name__}")
        if derivatives is not None:
            try:
                derivatives = tuple(derivatives)
            except TypeError:  # a lone function: say what is expected, not "not iterable"
                raise TypeError("numba_vectorize: derivatives must be a sequence of "
                                "callables, one per operand (a tuple even for one operand), "
                                f"got {type(derivatives).__name__}") from None
            bad = [d for d in derivatives if d is not None and not callable(d)]
            if bad:
                raise TypeError("numba_vectorize: derivatives must be callables (scalar "
                                "kernels or functrans functions), one per operand")
        self.fn = fn
        self.code = ScalarCode(fn, derivatives)
        functools.update_wrapper(self, fn)

    def defderivs(self, *derivatives) -> "NumbaVectorized":
        """The same kernel with a partial derivative per operand (each a scalar kernel made
        by ``numba_vectorize`` or a functrans function of the operands)."""
        return NumbaVectorized(self.fn, derivatives)

    def __call__(self, *args):
        if not args:
            raise TypeError(f"numba_vectorize ({self.code.name}) needs at least one operand")
        arrays = [a for a in args if not isinstance(a, _PY_SCALARS)]
        # Python numbers take the dtype they would have beside the array operands (NEP 50),
        # as in a ufunc: a float32 array and 2.0 compile the kernel for float32.
        ops = [fnp.asarray(a, dtype=fnp.result_type(*arrays, a)) if arrays and
               isinstance(a, _PY_SCALARS) else fnp.asarray(a) for a in args]
        shapes = [get_aval(a).shape for a in ops]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"numba_vectorize ({self.code.name}): operands of shapes "
                             f"{', '.join(map(str, shapes))} do not broadcast") from None
        ops = [a if s in (shape, ()) else fnp.broadcast_to(a, shape) for a, s in zip(ops, shapes)]
        src = source_info()
        self.code.out_dtype([get_aval(a).dtype for a in ops], src and str(src))
        return numba_vectorize_p.bind1(*ops, code=self.code)

    def __repr__(self):
        return f"numba_vectorize({self.code.name})"


def numba_vectorize(fn=None, *, derivatives=None):
    """Make scalar function ``fn`` (compiled by Numba) an elementwise function on arrays.

    The result broadcasts like a NumPy ufunc; its dtype is what Numba infers for the
    operands' dtypes (Python numbers take the dtype they would have beside the arrays), in
    the operands' precision when both are floating. Numba types Python float constants in
    the function as float64, so a float32 kernel computes in float64 where it uses them:
    ``np.float32`` constants keep its loop in float32 (a piecewise huber fused into a chain
    over 1e6 float32: 1.33x the same math in ``functrans.numpy`` with ``0.5``, 1.04x with
    ``np.float32(0.5)``).
    Under ``jit`` it fuses into the generated loops (inlined and vectorized with the
    operations around it); under ``vmap`` it batches by construction. ``derivatives`` gives
    one partial derivative per operand, each a scalar kernel (another ``numba_vectorize``)
    or a functrans function of the operands; then ``grad``, ``jvp``, ``jacfwd``... work (and
    ``hessian`` when the derivatives have derivatives). Usable as a decorator, with or
    without arguments::

        >>> import math
        >>> dgauss = ft.numba_vectorize(lambda x: -2 * x * math.exp(-x * x))
        >>> gauss = ft.numba_vectorize(lambda x: math.exp(-x * x), derivatives=(dgauss,))
        >>> ft.grad(lambda x: gauss(x).sum())(fnp.array([0.5, 1.0])).round(4)
        Array([-0.7788, -0.7358], dtype=float64)
    """
    if fn is None:
        return lambda f: NumbaVectorized(f, derivatives)
    return NumbaVectorized(fn, derivatives)
