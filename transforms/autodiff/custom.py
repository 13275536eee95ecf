"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules as higher-order primitives.

    >>> @ft.custom_jvp
    ... def f(x):
    ...     return fnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return fnp.sin(x), 2.0 * t          # a deliberately custom derivative
    >>> ft.grad(f)(0.0)
    Array(2., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from functrans.core.api_util import fun_name
from functrans.core.eval import eval_jaxpr
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.array import Array
from functrans.core.contexts import ensure_compile_time_eval
from functrans.core.errors import ConcretizationTypeError
from functrans.core.trace import (EvalTrace, Primitive, Tracer, concrete_of, current_trace,
                                  get_aval)
from functrans.core.tree import (tree_flatten, tree_leaves, tree_map, tree_structure,
                                 tree_unflatten)

from .jvp import SymbolicZero, Zero, instantiate, is_zero, jvp_rules
from .transpose import is_undefined, transpose_jaxpr, transpose_rules
from functrans.core.dtypes import kind as dtype_kind


def _resolve_args(fun, args, kwargs):
    """Keyword arguments become positional (custom rules see positional args, as in JAX)."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fun_name(fun)}: {e}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _split_nondiff(args, nondiff_argnums):
    nondiff = tuple(args[i] for i in nondiff_argnums)
    dyn = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return nondiff, dyn


def _merge_nondiff(dyn, nondiff, nondiff_argnums):
    out, d, n = [], iter(dyn), iter(nondiff)
    for i in range(len(dyn) + len(nondiff)):
        out.append(next(n) if i in nondiff_argnums else next(d))
    return out


def _trace_call(fun, nondiff, nondiff_argnums, leaves, in_tree, what):
    store = {}

    def flat(*xs):
        dyn = tree_unflatten(in_tree, xs)
        out = fun(*_merge_nondiff(dyn, nondiff, nondiff_argnums))
        out_leaves, store["tree"] = tree_flatten(out)
        return out_leaves

    avals = [get_aval(x) for x in leaves]
    try:
        jaxpr = trace_to_jaxpr(flat, avals, name=what)
    except ConcretizationTypeError:
        values = _known_values(leaves, avals)
        if values is None:
            raise

        # The arguments' values are known (eager differentiation runs on concrete values),
        # and JAX runs custom rules on the values at hand: the function is traced at these
        # values, its Python control flow decided by them, for this call only.
        def at_values(*_):
            with ensure_compile_time_eval():
                return flat(*values)
        jaxpr = trace_to_jaxpr(at_values, avals, name=what)
    jaxpr, consts = hoist_tracer_consts(jaxpr)
    return jaxpr, consts, store["tree"]


def _known_values(leaves, avals):
    """The leaves' concrete values (as Arrays), or None if one is not known now."""
    out = []
    for x, a in zip(leaves, avals):
        v = x.concrete_value() if isinstance(x, Tracer) else concrete_of(x)
        if v is None:
            return None
        out.append(Array._wrap(np.asarray(v, a.dtype), a.weak_type))
    return out


def _check_outputs(what, kind, got_tree, want_tree, got, want_avals):
    if got_tree != want_tree:
        raise TypeError(f"{what}: the custom {kind} rule must return outputs with the same "
                        f"pytree structure as the function ({want_tree}), got {got_tree}")
    for i, (x, a) in enumerate(zip(got, want_avals)):
        xa = x.aval if type(x) is SymbolicZero else get_aval(x)
        if xa.shape != a.shape or (dtype_kind(a.dtype) == "f" and xa.dtype != a.dtype):
            raise TypeError(f"{what}: the custom {kind} rule returned {xa.str_short()} at output "
                            f"leaf {i}, but the function's output there is {a.str_short()}")


# ---- custom_jvp -------------------------------------------------------------------------------
class _Rule:
    """A user rule plus what is needed to call it; hashable by identity (a jaxpr param)."""

    def __init__(self, fn, **info):
        self.fn = fn
        self.__dict__.update(info)
        self.__name__ = fun_name(fn)

    def __repr__(self):
        return self.__name__


class custom_jvp:
    """Give ``fun`` a custom JVP rule with ``@f.defjvp``; reverse mode is derived from it.

    ``nondiff_argnums`` are passed to the rule first, as Python values.
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """Register ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *tangent_fns):
        """Register one ``fn(tangent, primal_out, *primals)`` per argument (None for none)."""
        def jvp(primals, tangents):
            ans = self(*primals)
            out = None
            for fn, t in zip(tangent_fns, tangents):
                if fn is None:
                    continue
                term = fn(t, ans, *primals)
                out = term if out is None else tree_map(lambda a, b: a + b, out, term)
            return ans, out if out is not None else tree_map(lambda a: a * 0, ans)
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        what = f"custom_jvp({fun_name(self.fun)})"
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for {what}: decorate a rule with @f.defjvp")
        args = _resolve_args(self.fun, args, kwargs)
        if isinstance(current_trace(), EvalTrace):
            return self.fun(*args)  # nothing to differentiate: run it directly
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = tree_flatten(dyn)
        jaxpr, consts, out_tree = _trace_call(self.fun, nondiff, self.nondiff_argnums, leaves,
                                              in_tree, what)
        rule = _Rule(self.jvp, nondiff=nondiff, nondiff_argnums=self.nondiff_argnums,
                     in_tree=in_tree, out_tree=out_tree, what=what)
        outs = custom_jvp_call_p.bind_all(*consts, *leaves, call_jaxpr=jaxpr, jvp=rule,
                                          num_consts=len(consts),
                                          symbolic_zeros=self.symbolic_zeros)
        return tree_unflatten(out_tree, outs)


def _call_impl(*args, call_jaxpr, **_):
    return eval_jaxpr(call_jaxpr, *args)


def _call_abstract_eval(*avals, call_jaxpr, **_):
    return call_jaxpr.out_avals


custom_jvp_call_p = Primitive("custom_jvp_call", impl=_call_impl,
                              abstract_eval=_call_abstract_eval)
custom_jvp_call_p.multiple_results = True


class CustomVJPException(TypeError):
    """A custom_vjp function closes over a value being differentiated (JAX's
    ``jax._src.interpreters.ad.CustomVJPException``, which diffrax's tests catch)."""


def _closure_check(what, tangents, num_consts, error=TypeError):
    if any(not is_zero(t) for t in tangents[:num_consts]):
        raise error(f"{what} closes over a value that is being differentiated. Custom rules "
                    "only specify derivatives with respect to explicit arguments: pass the "
                    "value as an argument instead")


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros):
    _closure_check(jvp.what, tangents, num_consts)
    args, targs = primals[num_consts:], tangents[num_consts:]
    targs = [(SymbolicZero(t.aval) if is_zero(t) else t) if symbolic_zeros else instantiate(t)
             for t in targs]
    p_tree = tree_unflatten(jvp.in_tree, args)
    t_tree = tree_unflatten(jvp.in_tree, targs)
    res = jvp.fn(*jvp.nondiff, p_tree, t_tree)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"{jvp.what}: the custom JVP rule must return a pair "
                        f"(primal_out, tangent_out), got {type(res).__name__}")
    p_out, p_tree_out = tree_flatten(res[0])
    t_out, t_tree_out = tree_flatten(res[1])
    _check_outputs(jvp.what, "JVP", p_tree_out, jvp.out_tree, p_out, call_jaxpr.out_avals)
    if t_tree_out != p_tree_out:
        raise TypeError(f"{jvp.what}: the custom JVP rule must return primal and tangent outputs "
                        f"with equal pytree structures, got {p_tree_out} and {t_tree_out}")
    _check_outputs(jvp.what, "JVP", t_tree_out, jvp.out_tree, t_out, call_jaxpr.out_avals)
    return p_out, [Zero(t.aval) if type(t) is SymbolicZero else t for t in t_out]


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, jvp, num_consts, symbolic_zeros):
    # A custom_jvp function applied to tangents (a rule that calls the function on them, as
    # lineax's dtype conversion does) is linear there: as in JAX, its function is transposed
    # and the rule, which differentiates its primal uses, no longer applies.
    linear = [is_undefined(x) for x in args]
    t_jaxpr = transpose_jaxpr(call_jaxpr, linear)
    nonlin = [x for x in args if not is_undefined(x)]
    ct_in = iter(eval_jaxpr(t_jaxpr, *nonlin, *[instantiate(ct) for ct in cts]))
    return [next(ct_in) if lin else None for lin in linear]


transpose_rules[custom_jvp_call_p] = _custom_jvp_call_transpose


# ---- custom_vjp -------------------------------------------------------------------------------
class custom_vjp:
    """Give ``fun`` custom reverse-mode rules with ``f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(residuals, out_cotangent) -> input cotangents``
    (a tuple with one entry per differentiable argument; None means zero).
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd, bwd, symbolic_zeros=False):
        """Register the forward (with residuals) and backward functions. With
        ``symbolic_zeros``, ``fwd`` gets each argument leaf as a :class:`CustomVJPPrimal`
        (``value``, and whether it is ``perturbed``: differentiated), and ``bwd`` gets a
        :class:`SymbolicZero` for each output cotangent that is zero."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        what = f"custom_vjp({fun_name(self.fun)})"
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for {what}: call f.defvjp(fwd, bwd)")
        args = _resolve_args(self.fun, args, kwargs)
        if isinstance(current_trace(), EvalTrace):
            return self.fun(*args)
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = tree_flatten(dyn)
        if any(getattr(x, "_is_ref", False) for x in leaves):
            return _without_refs(self, nondiff, dyn, leaves, in_tree)(
                *[x for x in leaves if not getattr(x, "_is_ref", False)])
        jaxpr, consts, out_tree = _trace_call(self.fun, nondiff, self.nondiff_argnums, leaves,
                                              in_tree, what)
        rule = _Rule(self.fwd, bwd=self.bwd, nondiff=nondiff,
                     nondiff_argnums=self.nondiff_argnums, in_tree=in_tree, out_tree=out_tree,
                     what=what, symbolic_zeros=self.symbolic_zeros)
        outs = custom_vjp_call_p.bind_all(*consts, *leaves, call_jaxpr=jaxpr, fwd=rule,
                                          num_consts=len(consts))
        return tree_unflatten(out_tree, outs)


custom_vjp_call_p = Primitive("custom_vjp_call", impl=_call_impl,
                              abstract_eval=_call_abstract_eval)
custom_vjp_call_p.multiple_results = True


def _without_refs(f: custom_vjp, nondiff, dyn, leaves, in_tree) -> custom_vjp:
    """``f`` as a custom_vjp function of its argument leaves that are not references: the
    references (mutable, not differentiated: their rules write into them) reach the function
    and its rules as they are, and the backward rule's cotangents for them are dropped."""
    refs = {i: x for i, x in enumerate(leaves) if getattr(x, "_is_ref", False)}

    def full(values):
        it = iter(values)
        d = tree_unflatten(in_tree, [refs[i] if i in refs else next(it)
                                     for i in range(len(leaves))])
        return _merge_nondiff(d, nondiff, f.nondiff_argnums)

    def bwd(res, ct):
        cts = f.bwd(*nondiff, res, ct)
        per_leaf = []
        for arg, c in zip(dyn, cts):
            n = len(tree_leaves(arg))
            per_leaf += [None] * n if c is None else tree_leaves(c, is_leaf=lambda x: x is None)
        return tuple(c for i, c in enumerate(per_leaf) if i not in refs)

    g = custom_vjp(lambda *values: f.fun(*full(values)))
    g.defvjp(lambda *values: f.fwd(*full(values)), bwd)
    return g


class CustomVJPPrimal:
    """An argument leaf of a ``custom_vjp`` forward rule registered with
    ``symbolic_zeros=True``: its ``value``, and whether it is ``perturbed`` (differentiated).

        >>> CustomVJPPrimal(1.0, True).perturbed
        True
    """

    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


_PYTHON_SCALARS = (bool, int, float, complex)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, num_consts):
    _closure_check(fwd.what, tangents, num_consts, CustomVJPException)
    args, targs = primals[num_consts:], tangents[num_consts:]
    symbolic = getattr(fwd, "symbolic_zeros", False)
    dyn = tree_unflatten(fwd.in_tree, [CustomVJPPrimal(a, not is_zero(t))
                                       for a, t in zip(args, targs)] if symbolic else args)
    res = fwd.fn(*_merge_nondiff(dyn, fwd.nondiff, fwd.nondiff_argnums))
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"{fwd.what}: the custom VJP fwd rule must return a pair "
                        f"(output, residuals), got {type(res).__name__}")
    out, out_tree = tree_flatten(res[0])
    _check_outputs(fwd.what, "VJP fwd", out_tree, fwd.out_tree, out, call_jaxpr.out_avals)
    res_leaves, res_tree = tree_flatten(res[1])
    # Python scalar residuals reach the bwd rule as they are (JAX keeps them as literals;
    # equinox's bwd rules filter pytrees with residual bools), so they are not operands.
    # References among the residuals (a rule writing into one) pass the same way.
    python_res = {i: r for i, r in enumerate(res_leaves)
                  if type(r) in _PYTHON_SCALARS or getattr(r, "_is_ref", False)}
    res_leaves = [r for i, r in enumerate(res_leaves) if i not in python_res]
    lin = _Rule(fwd.bwd, res_tree=res_tree, in_tree=fwd.in_tree, out_tree=fwd.out_tree,
                nondiff=fwd.nondiff, what=fwd.what, symbolic_zeros=symbolic,
                in_avals=[get_aval(a) for a in args], python_res=python_res)
    t_out = custom_lin_p.bind_all(*res_leaves, *[instantiate(t) for t in targs],
                                  num_res=len(res_leaves), bwd=lin,
                                  out_avals=tuple(a.strip_weak_type()
                                                  for a in call_jaxpr.out_avals))
    return out, t_out


jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_lin_impl(*args, num_res, bwd, out_avals):
    raise TypeError(f"{bwd.what}: can't apply forward-mode autodiff (jvp) to a "
                    "custom_vjp function; use custom_jvp for forward mode")


custom_lin_p = Primitive("custom_lin", impl=_custom_lin_impl,
                         abstract_eval=lambda *avals, num_res, bwd, out_avals: list(out_avals))
custom_lin_p.multiple_results = True


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals):
    res = args[:num_res]
    symbolic = getattr(bwd, "symbolic_zeros", False)
    cts = [(SymbolicZero(ct.aval) if symbolic else instantiate(ct)) if is_zero(ct) else ct
           for ct in cts]
    ct_tree = tree_unflatten(bwd.out_tree, cts)
    res = iter(res)
    python_res = getattr(bwd, "python_res", {})
    res = [python_res[i] if i in python_res else next(res)
           for i in range(bwd.res_tree.num_leaves)]
    result = bwd.fn(*bwd.nondiff, tree_unflatten(bwd.res_tree, res), ct_tree)
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"{bwd.what}: the custom VJP bwd rule must return a tuple with one "
                        f"cotangent per argument, got {type(result).__name__}")
    leaves = _cotangent_leaves(bwd, tuple(result))
    out = []
    for i, (c, a) in enumerate(zip(leaves, bwd.in_avals)):
        if c is None or type(c) is SymbolicZero or dtype_kind(a.dtype) != "f":
            out.append(Zero(a))
            continue
        ca = get_aval(c)
        if ca.shape != a.shape or ca.dtype != a.dtype:
            raise TypeError(f"{bwd.what}: the custom VJP bwd rule returned {ca.str_short()} for "
                            f"argument leaf {i}, whose type is {a.str_short()}")
        out.append(c)
    return [None] * num_res + out


transpose_rules[custom_lin_p] = _custom_lin_transpose


def _cotangent_leaves(bwd, result) -> list:
    """One cotangent (or None) per argument leaf; as in JAX, None may stand for a whole
    argument or subtree whose cotangents are all zero."""
    args = tree_unflatten(bwd.in_tree, [0] * bwd.in_tree.num_leaves)
    ct_tree = tree_structure(result, is_leaf=lambda x: x is None)
    try:
        subtrees = ct_tree.flatten_up_to(args)
    except ValueError:
        subtrees = None
    leaves = []
    for c, sub in zip(tree_leaves(result, is_leaf=lambda x: x is None), subtrees or ()):
        n = len(tree_leaves(sub))
        if c is None:
            leaves += [None] * n
        elif n == 1 and tree_leaves(sub) == [sub]:
            leaves.append(c)
        else:
            subtrees = None
            break
    if subtrees is None:
        want = tree_structure(args)
        raise TypeError(f"{bwd.what}: the custom VJP bwd rule must return cotangents with the "
                        f"pytree structure of the arguments ({want}), got {ct_tree}")
    return leaves


# ---- batching -------------------------------------------------------------------------------------
def _batch_custom_jvp_call(axis, vals, dims, *, call_jaxpr, jvp, num_consts, symbolic_zeros):
    from ..batching import batch_jaxpr, vmap
    batched, out_dims = batch_jaxpr(call_jaxpr, axis, dims, 0)
    if isinstance(current_trace(), EvalTrace):
        # Nothing above differentiates: run the batched function itself, as an unbatched
        # call does (an output that is an argument stays that very array, as in JAX).
        return eval_jaxpr(batched, *vals), list(out_dims)
    arg_dims = dims[num_consts:]
    in_axes = tree_unflatten(jvp.in_tree, list(arg_dims))

    def batched_rule(*args):
        *nondiff, primals, tangents = args
        return vmap(lambda p, t: jvp.fn(*nondiff, p, t), in_axes=(in_axes, in_axes),
                    out_axes=0, axis_size=axis.size, axis_name=axis.name)(primals, tangents)

    rule = _Rule(batched_rule, nondiff=jvp.nondiff, nondiff_argnums=jvp.nondiff_argnums,
                 in_tree=jvp.in_tree, out_tree=jvp.out_tree, what=jvp.what)
    outs = custom_jvp_call_p.bind_all(*vals, call_jaxpr=batched, jvp=rule, num_consts=num_consts,
                                      symbolic_zeros=symbolic_zeros)
    return outs, list(out_dims)


def _batch_custom_vjp_call(axis, vals, dims, *, call_jaxpr, fwd, num_consts):
    from ..batching import batch_jaxpr, moveaxis, vmap
    from .. import ops
    batched, out_dims = batch_jaxpr(call_jaxpr, axis, dims, 0)
    arg_dims = list(dims[num_consts:])
    in_axes = tree_unflatten(fwd.in_tree, arg_dims)

    symbolic = getattr(fwd, "symbolic_zeros", False)

    def batched_fwd(*merged):
        dyn = _split_nondiff(merged, fwd.nondiff_argnums)[1]
        # Symbolic-zero records are not arrays: vmap their values, rebuild them per example.
        perturbed = [x.perturbed for x in tree_flatten(dyn)[0]] if symbolic else None
        if symbolic:
            dyn = tree_map(lambda x: x.value, dyn)

        def one(*dyn):
            if symbolic:
                leaves, tree = tree_flatten(dyn)
                dyn = tree_unflatten(tree, [CustomVJPPrimal(v, p)
                                            for v, p in zip(leaves, perturbed)])
            return fwd.fn(*_merge_nondiff(dyn, fwd.nondiff, fwd.nondiff_argnums))
        return vmap(one, in_axes=tuple(in_axes), out_axes=0, axis_size=axis.size,
                    axis_name=axis.name)(*dyn)

    def batched_bwd(*args):
        *nondiff, res, ct = args
        ct_leaves, ct_tree = tree_flatten(ct)
        zeros = [type(c) is SymbolicZero for c in ct_leaves]

        def one(r, mapped):
            it = iter(mapped)
            c = tree_unflatten(ct_tree, [
                SymbolicZero(c.aval.update(shape=c.aval.shape[1:])) if z else next(it)
                for c, z in zip(ct_leaves, zeros)])
            return tree_map(lambda x: None if type(x) is SymbolicZero else x,
                            tuple(fwd.bwd(*nondiff, r, c)))
        cts = vmap(one, in_axes=(0, 0), out_axes=0, axis_size=axis.size,
                   axis_name=axis.name)(res, [c for c, z in zip(ct_leaves, zeros) if not z])
        leaves, tree = tree_flatten(tuple(cts), is_leaf=lambda x: x is None)
        out = []
        for c, d in zip(leaves, arg_dims):
            if c is None:
                out.append(None)
            elif d is None:  # an argument shared by the batch: sum the per-example cotangents
                out.append(ops.reduce_sum(c, (0,)))
            else:
                out.append(moveaxis(c, 0, d))
        return tree_unflatten(tree, out)

    rule = _Rule(batched_fwd, bwd=batched_bwd, nondiff=fwd.nondiff,
                 nondiff_argnums=fwd.nondiff_argnums, in_tree=fwd.in_tree,
                 out_tree=fwd.out_tree, what=fwd.what, symbolic_zeros=symbolic)
    outs = custom_vjp_call_p.bind_all(*vals, call_jaxpr=batched, fwd=rule, num_consts=num_consts)
    return outs, list(out_dims)


def _batch_custom_lin(axis, vals, dims, *, num_res, bwd, out_avals):
    # custom_lin stands for a custom_vjp function's forward-mode derivative, which does not
    # exist: batching it (vmap of jvp, jacfwd) fails as evaluating it does, with the error
    # JAX's batching rule for it raises. vmap of vjp/grad never batches it (its transpose
    # runs the bwd rule under vmap instead).
    return _custom_lin_impl(*vals, num_res=num_res, bwd=bwd, out_avals=out_avals)


def _register_batching():
    from ..batching import batching_rules
    batching_rules[custom_jvp_call_p] = _batch_custom_jvp_call
    batching_rules[custom_vjp_call_p] = _batch_custom_vjp_call
    batching_rules[custom_lin_p] = _batch_custom_lin


_register_batching()
