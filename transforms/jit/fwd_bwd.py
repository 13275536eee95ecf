"""``fwd_and_bwd``: a function's forward pass (its value and ``vjp``'s function, a pytree of
residuals) and backward pass as two functions, jitted by default, so the backward one
compiles once however many times it is applied (JAX's ``jax.fwd_and_bwd``).

    >>> import functrans as ft, functrans.numpy as fnp
    >>> fwd, bwd = fwd_and_bwd(lambda x, W: x @ W, argnums=(0, 1))
    >>> y, res = fwd(fnp.ones((2, 3)), fnp.ones((3, 4)))
    >>> [g.shape for g in bwd(res, fnp.ones((2, 4)))]
    [(2, 3), (3, 4)]
"""
from __future__ import annotations

from functrans.core.api_util import normalize_argnums
from functrans.transforms.autodiff.api import vjp

from .api import jit

__all__ = ["fwd_and_bwd"]


def fwd_and_bwd(fun, argnums, has_aux: bool = False, jitted: bool = True):
    """``(fwd, bwd)``: ``fwd(*args)`` is ``vjp`` of ``fun`` in the arguments ``argnums``
    (``(out, f_vjp)``, or ``(out, f_vjp, aux)`` with ``has_aux``); ``bwd(f_vjp, ct)`` their
    cotangents (one, for an int ``argnums``, else a tuple)."""
    if not callable(fun):
        raise TypeError(f"fwd_and_bwd: expected a callable, got {type(fun).__name__}")

    def fwd(*args):
        nums = normalize_argnums(argnums, len(args), "fwd_and_bwd")

        def partial_fun(*dyn):
            full = list(args)
            for i, a in zip(nums, dyn):
                full[i] = a
            return fun(*full)
        return vjp(partial_fun, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, int) else g

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)
