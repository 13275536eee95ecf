"""The function ``vjp`` returns: a pytree whose leaves are the residuals the backward pass
reads (as JAX's ``VJP``), so it can cross ``jit``'s boundary and ``make_jaxpr`` of a function
returning it lists what the forward pass saves::

    >>> import functrans as ft, functrans.numpy as fnp
    >>> _, f_vjp = ft.jit(lambda x: ft.vjp(fnp.sin, x))(0.5)
    >>> [float(r) for r in ft.tree_util.tree_leaves(f_vjp)] == [float(fnp.cos(0.5))]
    True
    >>> f_vjp(2.0)
    (Array(1.75516512, dtype=float64, weak_type=True),)

An eager ``vjp`` keeps its residuals on its tape: its ``VJP`` has no leaves.
"""
from __future__ import annotations

from functrans.core.tree import register_pytree_node

__all__ = ["VJP"]


class VJP:
    """``f_vjp(cotangent)``: the inputs' cotangents, computed from the residuals (the
    pytree's leaves) by the backward pass (its structure's static data)."""

    __slots__ = ("residuals", "_apply")

    def __init__(self, residuals, apply):
        self.residuals = list(residuals)
        self._apply = apply

    def __call__(self, ct):
        return self._apply(self.residuals, ct)

    def __repr__(self):
        return f"VJP({len(self.residuals)} residuals)"


register_pytree_node(VJP, lambda f: (f.residuals, f._apply),
                     lambda apply, residuals: VJP(residuals, apply))
