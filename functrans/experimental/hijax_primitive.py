"""``VJPHiPrimitive``: JAX's *hijax primitive*, an operation defined by a Python class with
its implementation (``expand``) and optional derivative rules (``jvp``; ``lin`` with
``linearized``; ``vjp_fwd`` with ``vjp_bwd_retval`` or ``vjp_bwd``), called on arguments of the types it was made for::

    >>> import functrans as ft, functrans.numpy as fnp
    >>> class Square(VJPHiPrimitive):
    ...     def __init__(self, x_aval):
    ...         self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
    ...         super().__init__()
    ...     def expand(self, x):
    ...         return x * x
    ...     def vjp_fwd(self, nzs_in, x):
    ...         return self(x), x
    ...     def vjp_bwd_retval(self, x, g):
    ...         return (2.0 * x * g,)
    >>> ft.grad(lambda x: Square(ft.typeof(x))(x))(3.0)
    Array(6., dtype=float64, weak_type=True)

functrans builds one on its custom-derivative primitives: with ``jvp`` (or ``lin``) defined,
the call is a ``custom_jvp`` (forward mode uses it; reverse mode transposes it), otherwise with
``vjp_fwd`` a ``custom_vjp`` (reverse mode only, as in JAX), otherwise differentiating it
raises ``NotImplementedError`` as JAX's does. ``vmap`` batches the implementation and the rules
(``batch_dim_rule`` is not consulted). As in JAX, eager differentiation runs ``expand`` and
the rules on the values at hand (Python control flow on them works); under ``jit`` it raises
``TracerBoolConversionError``.
"""
from __future__ import annotations

import numpy as np

from functrans.core.tree import tree_flatten, tree_map, tree_unflatten
from functrans.core.trace import EvalTrace, current_trace
from functrans.custom_derivatives import SymbolicZero, custom_jvp, custom_vjp

__all__ = ["GradAccum", "NullAccum", "ValAccum", "VJPHiPrimitive"]


class GradAccum:
    """Where a ``vjp_bwd`` rule adds an input's cotangent (``accum(value)``)."""

    def accum(self, value) -> None:
        raise NotImplementedError


class ValAccum(GradAccum):
    """An accumulator holding the sum of what was accumulated (``value``; None if nothing)."""

    def __init__(self):
        self.value = None

    def accum(self, value) -> None:
        self.value = value if self.value is None else self.value + value


class NullAccum(GradAccum):
    """The accumulator of an input whose cotangent is not wanted: accumulating is a no-op."""

    def accum(self, value) -> None:
        return None


class VJPHiPrimitive:
    """Base class of a hijax primitive. A subclass's ``__init__`` sets ``in_avals`` (a tuple,
    one type per argument), ``out_aval`` and ``params`` (static parameters, also readable as
    attributes), then calls ``super().__init__()``; it defines ``expand(*args)``."""

    params: dict
    effects = frozenset()

    def __init__(self):
        for name in ("in_avals", "out_aval", "params"):
            if not hasattr(self, name):
                raise AttributeError(f"subclass __init__ should set `self.{name}`")
        cls = type(self)
        if (cls.vjp_bwd is not VJPHiPrimitive.vjp_bwd
                and cls.vjp_bwd_retval is not VJPHiPrimitive.vjp_bwd_retval):
            raise AttributeError(f"subclass {cls} should not override both `vjp_bwd` and "
                                 "`vjp_bwd_retval`")
        self.in_avals_flat, self.in_tree = tree_flatten(tuple(self.in_avals))
        self.out_avals_flat, self.out_tree = tree_flatten(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                                  "`vjp_fwd`")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        grads = self.vjp_bwd_retval(res, outgrad)
        tree_map(lambda acc, v: isinstance(acc, GradAccum) and acc.accum(v), arg_accums,
                 tuple(grads), is_leaf=lambda x: isinstance(x, GradAccum))

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                                  "`vjp_bwd` or `vjp_bwd_retval`")

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement "
                                  "`jvp`")

    def lin(self, nzs_in, *primals):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must "
                                  "implement `lin` and `linearized`")

    def linearized(self, residuals, *tangents):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must "
                                  "implement `lin` and `linearized`")

    def check(self, *arg_tys):
        """Optional checks of the argument types (a subclass's)."""

    def __call__(self, *args):
        leaves, tree = tree_flatten(tuple(args))
        if tree != self.in_tree:
            raise TypeError(f"{self!r}: called with arguments of structure {tree}, made for "
                            f"{self.in_tree}")
        if isinstance(current_trace(), EvalTrace):
            return self.expand(*args)
        return self._rule_function()(*args)

    def _rule_function(self):
        cls = type(self)
        if cls.jvp is not VJPHiPrimitive.jvp:
            fun = custom_jvp(self.expand)
            fun.defjvp(lambda primals, tangents: self.jvp(tuple(primals), tuple(tangents)))
            return fun
        if cls.lin is not VJPHiPrimitive.lin:
            fun = custom_jvp(self.expand)
            fun.defjvp(self._jvp_from_lin)
            return fun
        if cls.vjp_fwd is VJPHiPrimitive.vjp_fwd:
            fun = custom_jvp(self.expand)
            fun.defjvp(self._no_rule)
            return fun
        fun = custom_vjp(self.expand)
        fun.defvjp(self._fwd, self._bwd, symbolic_zeros=True)
        return fun

    def _jvp_from_lin(self, primals, tangents):
        # lin gives the output and the residuals; linearized maps tangents with them.
        out, res = self.lin(tuple(True for _ in primals), *primals)
        return out, self.linearized(res, *tangents)

    def _no_rule(self, primals, tangents):
        raise NotImplementedError(f"for differentiation, subclass {type(self)} must implement "
                                  "`jvp`, or `vjp_fwd` and `vjp_bwd_retval` (or `vjp_bwd`)")

    def _fwd(self, *args):
        leaves, tree = tree_flatten(args)
        nzs = tree_unflatten(tree, [p.perturbed for p in leaves])
        values = tree_unflatten(tree, [p.value for p in leaves])
        out = self.vjp_fwd(nzs, *values)
        return out[0], out[1]  # (a third entry, the outputs' nonzero flags, is not needed)

    def _bwd(self, res, g):
        g = tree_map(lambda t: np.zeros(t.aval.shape, t.aval.dtype)
                     if isinstance(t, SymbolicZero) else t, g,
                     is_leaf=lambda t: isinstance(t, SymbolicZero))
        if type(self).vjp_bwd_retval is not VJPHiPrimitive.vjp_bwd_retval:
            return tuple(self.vjp_bwd_retval(res, g))
        accums = tree_map(lambda _: ValAccum(), tuple(self.in_avals))
        self.vjp_bwd(res, g, *accums)
        return tuple(tree_map(lambda a: a.value, accums,
                              is_leaf=lambda a: isinstance(a, GradAccum)))

    def __repr__(self):
        return f"{type(self).__name__}[{self.params}]"

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.params.items()), self.effects))

    def __eq__(self, other):
        return (type(self) is type(other) and self.params == other.params
                and self.effects == other.effects)
