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
(``batch_dim_rule`` and ``batch`` are not consulted). ``in_avals``/``out_aval`` may name
high-level types (``hijax.HiType``): inside transformations such an argument is its arrays and
tangent carrier (``core/hivalues.py``); ``expand`` gets the value's class (``raise_val``), the
rules get it as a traced value, and a rule's cotangent for it is of its tangent type. As in JAX, eager differentiation runs ``expand`` and
the rules on the values at hand (Python control flow on them works); under ``jit`` it raises
``TracerBoolConversionError``.
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.hivalues import (HiStagingTrace, HiVal, _type_str, as_hival, hi_type_of,
                                     is_hi_type, is_hi_value, staged_hi_calls,
                                     tangent_carrier_aval)
from functrans.core.pytree import flatten_up_to
from functrans.core.tree import tree_flatten, tree_map, tree_unflatten
from functrans.core.trace import EvalTrace, current_trace, get_aval
from functrans.custom_derivatives import SymbolicZero, custom_jvp, custom_vjp

__all__ = ["GradAccum", "NullAccum", "ValAccum", "VJPHiPrimitive"]


def _zeros(aval):
    return Array._wrap(np.zeros(aval.shape, aval.dtype))


def _aval_of(x):
    return get_aval(x)


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
        leaves, tree = tree_flatten(tuple(args), is_leaf=is_hi_value)
        if tree != self.in_tree:
            raise TypeError(f"{self!r}: called with arguments of structure {tree}, made for "
                            f"{self.in_tree}")
        trace = current_trace()
        if type(trace) is HiStagingTrace:  # the program as JAX shows it: one equation
            return tree_unflatten(self.out_tree, trace.stage_hi(self, leaves))
        if not isinstance(trace, EvalTrace):
            staged_hi_calls[0] += 1
        items = [self._item(a, x, i) for i, (a, x) in enumerate(zip(self.in_avals_flat, leaves))]
        if isinstance(current_trace(), EvalTrace) and not any(type(x) is HiVal
                                                              for x in leaves):
            return self.expand(*args)
        return self._unpack_out(self._rule_function()(*items))

    # Inside transformations the rules below run on *items*, one per argument leaf: an array,
    # or for a high-level value the pair (its arrays, its tangent carrier): see
    # core/hivalues.py. Rules see high-level arguments as HiVals, expand sees the values'
    # class (raise_val of the arrays).

    def _item(self, aval, x, i):
        if is_hi_type(aval):
            if not is_hi_value(x):
                raise TypeError(f"{self!r}: argument {i} should be a value of type "
                                f"{_type_str(aval)}, got {type(x).__name__}")
            if type(x) is not HiVal and isinstance(current_trace(), EvalTrace):
                return x  # (run eagerly: expand takes it as it is)
            h = as_hival(x)
            return (tuple(h.lo), h.carrier)
        if is_hi_value(x):
            raise TypeError(f"{self!r}: argument {i} should be an array of type "
                            f"{_type_str(aval)}, got a value of type "
                            f"{_type_str(hi_type_of(x))}")
        return x

    def _args(self, items, value=lambda v: v):
        """The arguments (a tree like in_avals) the items stand for, high-level ones as
        HiVals (``value`` takes each leaf's value: CustomVJPPrimal's)."""
        args = []
        for a, it in zip(self.in_avals_flat, items):
            if is_hi_type(a):
                car = it[1]
                args.append(HiVal(a, [value(v) for v in it[0]],
                                  None if car is None else value(car)))
            else:
                args.append(value(it))
        return tree_unflatten(self.in_tree, args)

    def _primal(self, *items):
        args = [a.raise_val(*it[0]) if is_hi_type(a) else it
                for a, it in zip(self.in_avals_flat, items)]
        return self._pack_out(self.expand(*tree_unflatten(self.in_tree, args)))

    def _pack_out(self, out) -> list:
        outs = flatten_up_to(self.out_tree, out, f"{self!r} output")
        items = []
        for a, o in zip(self.out_avals_flat, outs):
            if not is_hi_type(a):
                items.append(o)
                continue
            if type(o) is HiVal:
                lo, car = o.lo, o.carrier
            else:
                lo, car = a.lower_val(o), None
            if car is None and tangent_carrier_aval(a) is not None:
                car = _zeros(tangent_carrier_aval(a))
            items.append((tuple(lo), car))
        return items

    def _unpack_out(self, items):
        return tree_unflatten(self.out_tree, [
            HiVal(a, it[0], it[1]) if is_hi_type(a) else it
            for a, it in zip(self.out_avals_flat, items)])

    def _rule_function(self):
        cls = type(self)
        fun = custom_jvp(self._primal) if cls.vjp_fwd is VJPHiPrimitive.vjp_fwd or \
            cls.jvp is not VJPHiPrimitive.jvp or cls.lin is not VJPHiPrimitive.lin else None
        if cls.jvp is not VJPHiPrimitive.jvp:
            fun.defjvp(lambda ps, ts: self._jvp_items(ps, ts, self.jvp))
        elif cls.lin is not VJPHiPrimitive.lin:
            fun.defjvp(lambda ps, ts: self._jvp_items(ps, ts, self._jvp_from_lin))
        elif fun is not None:
            fun.defjvp(self._no_rule)
        else:
            fun = custom_vjp(self._primal)
            fun.defvjp(self._fwd, self._bwd, symbolic_zeros=True)
        return fun

    def _jvp_items(self, primals, tangents, rule):
        args = tuple(self._args(primals))
        tans = tuple(tree_unflatten(self.in_tree, [
            (it[1] if it[1] is not None else _zeros(tangent_carrier_aval(a)))
            if is_hi_type(a) else it for a, it in zip(self.in_avals_flat, tangents)]))
        out, t_out = rule(args, tans)
        t_leaves = flatten_up_to(self.out_tree, t_out, f"{self!r} output tangent")
        t_items = []
        for a, o, t in zip(self.out_avals_flat, self._pack_out(out), t_leaves):
            if is_hi_type(a):
                t_items.append((tuple(_zeros(_aval_of(v)) for v in o[0]),
                                None if o[1] is None else t))
            else:
                t_items.append(t)
        return self._pack_out(out), t_items

    def _jvp_from_lin(self, primals, tangents):
        # lin gives the output and the residuals; linearized maps tangents with them.
        out, res = self.lin(tuple(True for _ in primals), *primals)
        return out, self.linearized(res, *tangents)

    def _no_rule(self, primals, tangents):
        raise NotImplementedError(f"for differentiation, subclass {type(self)} must implement "
                                  "`jvp`, or `vjp_fwd` and `vjp_bwd_retval` (or `vjp_bwd`)")

    def _fwd(self, *items):
        nzs = []
        for a, it in zip(self.in_avals_flat, items):
            if is_hi_type(a):
                nzs.append(bool(it[1] is not None and it[1].perturbed))
            else:
                nzs.append(bool(it.perturbed))
        args = self._args(items, lambda p: p.value)
        out = self.vjp_fwd(tree_unflatten(self.in_tree, nzs), *args)
        return self._pack_out(out[0]), out[1]  # (a third entry, the outputs' nonzero flags,
        # is not needed)

    def _bwd(self, res, g_items):
        gs = []
        for a, g in zip(self.out_avals_flat, g_items):
            if is_hi_type(a):
                g, t = g[1], tangent_carrier_aval(a)
                gs.append(_zeros(t) if g is None or isinstance(g, SymbolicZero) else g)
            else:
                gs.append(_zeros(g.aval) if isinstance(g, SymbolicZero) else g)
        g = tree_unflatten(self.out_tree, gs)
        if type(self).vjp_bwd_retval is not VJPHiPrimitive.vjp_bwd_retval:
            cts = tuple(self.vjp_bwd_retval(res, g))
        else:
            accums = tree_map(lambda _: ValAccum(), tuple(self.in_avals))
            self.vjp_bwd(res, g, *accums)
            cts = tuple(tree_map(lambda a: a.value, accums,
                                 is_leaf=lambda a: isinstance(a, GradAccum)))
        cts = flatten_up_to(self.in_tree, cts, f"{self!r} cotangents")
        out = []
        for a, c in zip(self.in_avals_flat, cts):
            if is_hi_type(a):
                lo = tuple(None for _ in a.lo_ty())
                out.append((lo, c if tangent_carrier_aval(a) is not None else None))
            else:
                out.append(c)
        return tuple(out)

    def __repr__(self):
        return f"{type(self).__name__}[{self.params}]"

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.params.items()), self.effects))

    def __eq__(self, other):
        return (type(self) is type(other) and self.params == other.params
                and self.effects == other.effects)
