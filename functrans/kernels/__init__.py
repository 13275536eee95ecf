"""Users' own kernels, written in Python and compiled by Numba, inside functrans programs
(and, in ``callbacks.py``, host Python called from them: ``pure_callback``, ``io_callback``).

``numba_call`` runs an array kernel (operands in, results written in place) as a step of a
program: eagerly, under ``jit`` (called from the compiled program, no Python per call),
``vmap`` (``vmap_method``), ``grad`` (rules given with ``numba_kernel``), ``pmap`` and
``shard_map``. ``numba_vectorize`` makes a scalar function an elementwise operation that
broadcasts like a ufunc and fuses into ``jit``'s loops.

    >>> def pair_sum(x, out):
    ...     for i in range(x.shape[0]):
    ...         for j in range(x.shape[0]):
    ...             out[0] += x[i] * x[j]
    >>> ft.numba_call(pair_sum, ft.ShapeDtypeStruct((1,), "float32"), fnp.ones(3, "float32"))
    Array([9.], dtype=float32)
"""
from .calls import NumbaKernel, numba_call, numba_kernel  # noqa: F401
from .vectorize import NumbaVectorized, numba_vectorize  # noqa: F401

__all__ = ["numba_call", "numba_kernel", "NumbaKernel", "numba_vectorize", "NumbaVectorized"]
