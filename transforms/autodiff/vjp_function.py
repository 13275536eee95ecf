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

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue", "VJP"]


class GradValue:
    """``with_refs`` marker: return this argument's cotangent as a value."""

    def __repr__(self):
        return "GradValue()"


class DontWant:
    """``with_refs`` marker: this argument's cotangent is not wanted (it comes back as
    :class:`DidntWant`)."""

    def __repr__(self):
        return "DontWant()"


class DidntWant:
    """What ``with_refs`` returns for an argument marked :class:`DontWant`."""

    def __repr__(self):
        return "DidntWant()"


class GradRef:
    """What ``with_refs`` returns for an argument whose cotangent went into a Ref."""

    def __repr__(self):
        return "GradRef()"


class VJP:
    """``f_vjp(cotangent)``: the inputs' cotangents, computed from the residuals (the
    pytree's leaves) by the backward pass (its structure's static data)."""

    __slots__ = ("residuals", "_apply")

    def __init__(self, residuals, apply):
        self.residuals = list(residuals)
        self._apply = apply

    def __call__(self, ct):
        return self._apply(self.residuals, ct)

    def with_refs(self, *targets):
        """``f_vjp`` sending each argument's cotangent where its target says: a Ref (added
        into it; :class:`GradRef` is returned in its place), :class:`GradValue` (returned) or
        :class:`DontWant` (:class:`DidntWant` returned). One target per argument of the
        function differentiated.

            >>> import functrans as ft, functrans.numpy as fnp
            >>> _, f_vjp = ft.vjp(lambda a, b: a * b, 2.0, 3.0)
            >>> acc = ft.new_ref(10.0)
            >>> f_vjp.with_refs(acc, DontWant())(1.0), float(acc[...])
            ((GradRef(), DidntWant()), 13.0)
        """
        for t in targets:
            if not isinstance(t, (GradValue, DontWant)) and not hasattr(t, "__setitem__"):
                raise TypeError(f"with_refs: each target must be a Ref, GradValue() or "
                                f"DontWant(), got {type(t).__name__}")

        def f_vjp(ct):
            grads = self(ct)
            if len(grads) != len(targets):
                raise TypeError(f"with_refs: got {len(targets)} targets for a function of "
                                f"{len(grads)} arguments")
            out = []
            for t, g in zip(targets, grads):
                if isinstance(t, GradValue):
                    out.append(g)
                elif isinstance(t, DontWant):
                    out.append(DidntWant())
                else:
                    t[...] = t[...] + g
                    out.append(GradRef())
            return tuple(out)
        return f_vjp

    def __repr__(self):
        return f"VJP({len(self.residuals)} residuals)"


register_pytree_node(VJP, lambda f: (f.residuals, f._apply),
                     lambda apply, residuals: VJP(residuals, apply))
# What with_refs returns in place of a cotangent holds no value: an empty node, as in JAX
# (so a function returning them can be traced or jitted).
for _marker in (DidntWant, GradRef):
    register_pytree_node(_marker, lambda m: ((), None), lambda _, __, cls=_marker: cls())
