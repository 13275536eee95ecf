"""Structured control flow with JAX's signatures: cond, switch, while_loop, fori_loop, scan,
map. Each traces its Python callables once into jaxprs and binds a control-flow primitive, so
every transformation (grad, vmap, jit) sees and transforms the whole loop or branch::

    >>> lax.fori_loop(0, 5, lambda i, s: s + i, 0)
    Array(10, dtype=int64, weak_type=True)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import primitives as P
from ..core.api_util import fun_name
from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.eval import eval_jaxpr
from ..core.staging import hoist_tracer_consts, trace_to_jaxpr
from ..core.trace import Tracer, concrete_of, get_aval
from ..core.tree import tree_flatten, tree_unflatten
from .closed_refs import scan_threading_refs
from .ops import convert_element_type

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]


def _trace(fun, in_tree, in_avals, what, unpack=False):
    """Trace ``fun`` on an abstract pytree argument (or, with ``unpack``, on the elements of
    a tuple of arguments): (jaxpr, tracer consts, out tree)."""
    store = {}

    def flat(*leaves):
        arg = tree_unflatten(in_tree, leaves)
        out = fun(*arg) if unpack else fun(arg)
        out_leaves, store["tree"] = tree_flatten(out)
        for i, o in enumerate(out_leaves):
            try:
                get_aval(o)
            except TypeError:
                raise TypeError(f"{what} returned a {type(o).__name__} at output leaf {i}; "
                                "outputs must be arrays or scalars") from None
        return out_leaves

    jaxpr = trace_to_jaxpr(flat, in_avals, name=what)
    jaxpr, consts = hoist_tracer_consts(jaxpr)
    return jaxpr, consts, store["tree"]


def _avals(leaves):
    return [get_aval(x) for x in leaves]


def _types_str(avals):
    return ", ".join(a.str_short() for a in avals)


def _unify_branches(fns, operands, what, labels):
    """Trace each branch on the operands; every branch takes all branches' closed-over values
    (so one primitive can hold them) and returns outputs of one type."""
    leaves, in_tree = tree_flatten(operands)
    in_avals = _avals(leaves)
    # A function given for several branches is traced once, as JAX does (haiku counts it).
    by_id = {}
    for lab, f in zip(labels, fns):
        if id(f) not in by_id:
            by_id[id(f)] = _trace(f, in_tree, in_avals, f"{what} {lab} ({fun_name(f)})",
                                  unpack=True)
    traced = [by_id[id(f)] for f in fns]
    trees = [t[2] for t in traced]
    for i, t in enumerate(trees[1:], 1):
        if t != trees[0]:
            raise TypeError(f"{what} branch outputs must have the same pytree structure, but "
                            f"{labels[0]} returns {trees[0]} and {labels[i]} returns {t}")
    out_avals = [j.out_avals for j, _, _ in traced]
    joined = []
    for k in range(len(out_avals[0])):
        col = [o[k] for o in out_avals]
        shapes = {a.shape for a in col}
        strong = {a.dtype for a in col if not a.weak_type}
        dts = {a.dtype for a in col}
        if len(shapes) > 1 or len(strong) > 1 or (not strong and len(dts) > 1):
            desc = "; ".join(f"{lab}: {a.str_short()}" for lab, a in zip(labels, col))
            raise TypeError(f"{what}: branches must return outputs of identical types; output "
                            f"{k} differs ({desc})")
        dtype = next(iter(strong)) if strong else col[0].dtype
        # As in JAX, the result is as weakly typed as the first branch's (cond's false_fun):
        # ``cond(pred, raise_error, lambda: x)`` returns ``x``'s type, weak or not.
        joined.append(ShapedArray(col[0].shape, dtype,
                                  col[0].weak_type and col[0].dtype == dtype))
    all_consts, starts = [], {}
    for key, (_, cs, _) in by_id.items():
        starts[key] = len(all_consts)
        all_consts += cs
    const_avals = _avals(all_consts)
    branches = []
    for f, (jaxpr, cs, _) in zip(fns, traced):
        start, n = starts[id(f)], len(cs)

        def fun(*args, jaxpr=jaxpr, start=start, n=n):
            outs = eval_jaxpr(jaxpr, *args[start:start + n], *args[len(all_consts):])
            return [convert_element_type(o, a.dtype) if get_aval(o).dtype != a.dtype else o
                    for o, a in zip(outs, joined)]
        branches.append(trace_to_jaxpr(fun, const_avals + in_avals, name=f"{what} branch"))
    return tuple(branches), all_consts, leaves, trees[0]


def _index_of(pred, what):
    """The aval of ``cond``'s predicate: a scalar boolean or number (a number means
    ``pred != 0``, NaN true, as in JAX). As in JAX, complex numbers and the narrow floats of
    ``ml_dtypes`` (bfloat16, float8: not NumPy number types) are refused."""
    if pred is None:
        raise TypeError(f"{what}: the predicate is None")
    aval = get_aval(pred)
    if aval.shape != ():
        raise TypeError(f"{what}: the predicate must be a scalar, got shape {aval.shape}")
    if dtypes.kind(aval.dtype) not in "biuf" or dtypes.is_narrow_float(aval.dtype):
        raise TypeError(f"{what}: Pred type must be either boolean or number, got "
                        f"{aval.dtype} (a boolean, integer or float16/32/64 scalar)")
    return aval


_NO_OPERAND = object()


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged so that both
    branches are traced (they must return the same types) and transformable. JAX's older
    single-operand spelling ``operand=x`` is accepted too.

    >>> lax.cond(True, lambda x: x + 1, lambda x: x - 1, 10)
    Array(11, dtype=int64, weak_type=True)

    JAX's deprecated five-argument form ``cond(pred, true_operand, true_fun, false_operand,
    false_fun)``, which libraries still use (blackjax's NUTS), works too:

    >>> lax.cond(False, 10, lambda x: x + 1, 20, lambda x: x - 1)
    Array(19, dtype=int64, weak_type=True)
    """
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            # The old form: each branch takes its own operand; both are passed to each.
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x),
                        x_true, x_false)
        raise TypeError("cond: true_fun and false_fun must be callable, got "
                        f"{type(true_fun).__name__} and {type(false_fun).__name__}")
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand!r:.40} and positional operands "
                            f"{operands!r:.60}")
        operands = (operand,)
    _index_of(pred, "cond")
    pred_dtype = get_aval(pred).dtype
    index = P.convert_element_type_p.bind1(
        P.ne_p.bind1(pred, np.zeros((), pred_dtype)[()]) if dtypes.kind(pred_dtype) != "b"
        else pred, new_dtype=np.dtype(np.int32), weak_type=False)
    return _switch(index, (false_fun, true_fun), operands, "cond", ("false_fun", "true_fun"))


def switch(index, branches, *operands):
    """``branches[index](*operands)`` with ``index`` clamped into range.

    >>> lax.switch(2, [lambda x: x, lambda x: x * 2, lambda x: x * 3], 5)
    Array(15, dtype=int64, weak_type=True)
    """
    aval = get_aval(index)
    if aval.shape != () or dtypes.kind(aval.dtype) not in "iu":
        raise TypeError(f"switch: the index must be an integer scalar, got {aval.str_short()}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    idx = convert_element_type(index, np.int32)
    idx = P.min_p.bind1(P.max_p.bind1(idx, np.int32(0)), np.int32(len(branches) - 1))
    return _switch(idx, branches, operands, "switch",
                   tuple(f"branch {i}" for i in range(len(branches))))


def _switch(index, fns, operands, what, labels):
    branch_jaxprs, consts, leaves, out_tree = _unify_branches(fns, operands, what, labels)
    outs = P.cond_p.bind_all(index, *consts, *leaves, branches=branch_jaxprs)
    return tree_unflatten(out_tree, outs)


def _promote_carry(init_leaves, out_avals):
    """Weakly typed initial carries take the dtype the body produces (as JAX does)."""
    fixed = []
    for x, o in zip(init_leaves, out_avals):
        a = get_aval(x)
        if a.weak_type and a.dtype != o.dtype and a.shape == o.shape:
            x = convert_element_type(x, o.dtype)
        fixed.append(x)
    return fixed


def _check_carry(what, tree_in, tree_out, in_avals, out_avals, body_name="body_fun"):
    if tree_in != tree_out:
        raise TypeError(f"{what}: {body_name} must return a carry with the input's structure "
                        f"{tree_in}, got {tree_out}")
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"{what}: the carry must keep its type, but carry leaf {i} goes in "
                            f"as {a.str_short()} and comes out as {b.str_short()}")


def while_loop(cond_fun, body_fun, init_val):
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)``; the carry keeps its type.

    Not reverse-differentiable (the trip count is dynamic): use fori_loop with static bounds
    or scan for that.

    >>> lax.while_loop(lambda v: v < 100, lambda v: v * 2, 1)
    Array(128, dtype=int64, weak_type=True)
    """
    leaves, tree = tree_flatten(init_val)
    for _ in range(2):  # a second pass after promoting weakly typed carries
        avals = _avals(leaves)
        body, b_consts, b_tree = _trace(body_fun, tree, avals, f"while_loop body "
                                        f"({fun_name(body_fun)})")
        promoted = _promote_carry(leaves, body.out_avals) if b_tree == tree else leaves
        if all(p is x for p, x in zip(promoted, leaves)):
            break
        leaves = promoted
    _check_carry("while_loop", tree, b_tree, avals, body.out_avals)
    cond_j, c_consts, c_tree = _trace(cond_fun, tree, avals, f"while_loop cond "
                                      f"({fun_name(cond_fun)})")
    outs = cond_j.out_avals
    if len(outs) != 1 or outs[0].shape != () or dtypes.kind(outs[0].dtype) != "b":
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                        f"[{_types_str(outs)}]")
    result = P.while_p.bind_all(*c_consts, *b_consts, *leaves, cond_jaxpr=cond_j, body_jaxpr=body,
                                cond_nconsts=len(c_consts), body_nconsts=len(b_consts))
    return tree_unflatten(tree, result)


def _static_int(x):
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, Tracer):
        return None
    v = concrete_of(x)
    if v is not None and v.shape == () and dtypes.kind(v.dtype) in "iu":
        return int(v)
    return None


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``. With static bounds it is a
    scan (reverse-differentiable); with traced bounds a while_loop.

    >>> lax.fori_loop(0, 3, lambda i, acc: acc * 2 + i, 1)
    Array(12, dtype=int64, weak_type=True)
    """
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        n = max(hi - lo, 0)
        # Python-int bounds make a weakly typed index of the default int dtype (as in JAX): it
        # neither overflows at 2**31 under x64 nor changes the dtype of an int32 carry.
        wide = lo >= 2**31 or hi >= 2**31
        i0 = Array._wrap(np.asarray(lo, np.int64 if wide else dtypes.default_int_dtype()),
                         weak_type=True)

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None  # i + 1 keeps the index weakly typed

        (_, result), _ = scan(step, (i0, init_val), None, length=n)
        return result
    lower_a, upper_a = get_aval(lower), get_aval(upper)
    if dtypes.kind(lower_a.dtype) not in "iu" or dtypes.kind(upper_a.dtype) not in "iu":
        raise TypeError(f"fori_loop bounds must be integers, got {lower_a.str_short()} and "
                        f"{upper_a.str_short()}")
    dtype = np.result_type(lower_a.dtype, upper_a.dtype)
    lower, upper = convert_element_type(lower, dtype), convert_element_type(upper, dtype)
    _, _, result = while_loop(lambda c: c[0] < c[1],
                              lambda c: (c[0] + np.ones((), dtype)[()], c[1],
                                         body_fun(c[0], c[2])),
                              (lower, upper, init_val))
    return result


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the final
    carry and the stacked ``y``s. References ``f`` closes over are carried through
    (``closed_refs.py``).

    >>> lax.scan(lambda c, x: (c + x, c * x), 0, fnp.arange(4))
    (Array(6, dtype=int64), Array([0, 0, 2, 9], dtype=int64))
    """
    return scan_threading_refs(_scan, f, init, xs, length=length, reverse=reverse,
                               unroll=unroll, _split_transpose=_split_transpose)


def _scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    x_leaves, x_tree = tree_flatten(xs)
    lengths = {get_aval(x).shape[0] if get_aval(x).shape else None for x in x_leaves}
    if None in lengths:
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        length = operator.index(length)
        if lengths and lengths != {length}:
            raise ValueError(f"scan: length={length} does not match the leading axis sizes "
                             f"{sorted(lengths)} of xs")
    elif len(lengths) > 1:
        raise ValueError(f"scan: the leaves of xs have different leading axis sizes "
                         f"{sorted(lengths)}")
    elif not lengths:
        raise ValueError("scan needs length= when xs is None")
    else:
        length = lengths.pop()
    x_avals = [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in x_leaves]
    c_leaves, c_tree = tree_flatten(init)
    for _ in range(2):
        c_avals = _avals(c_leaves)
        body, consts, out_tree = _trace_scan_body(f, c_tree, x_tree, c_avals, x_avals)
        carry_tree, y_tree = out_tree
        n_c = len(c_leaves)
        promoted = _promote_carry(c_leaves, body.out_avals[:n_c]) if carry_tree == c_tree \
            else c_leaves
        if all(p is x for p, x in zip(promoted, c_leaves)):
            break
        c_leaves = promoted
    _check_carry("scan", c_tree, carry_tree, c_avals, body.out_avals[:n_c], "f")
    outs = P.scan_p.bind_all(*consts, *c_leaves, *x_leaves, jaxpr=body, length=length,
                             reverse=bool(reverse), num_consts=len(consts), num_carry=n_c)
    return tree_unflatten(c_tree, outs[:n_c]), tree_unflatten(y_tree, outs[n_c:])


def _trace_scan_body(f, c_tree, x_tree, c_avals, x_avals):
    store = {}
    n_c = len(c_avals)

    def flat(*leaves):
        carry = tree_unflatten(c_tree, leaves[:n_c])
        x = tree_unflatten(x_tree, leaves[n_c:])
        res = f(carry, x)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"scan: f must return a pair (carry, y), got {type(res).__name__}")
        c_out, c_t = tree_flatten(res[0])
        y_out, y_t = tree_flatten(res[1])
        store["trees"] = (c_t, y_t)
        return c_out + y_out

    jaxpr = trace_to_jaxpr(flat, list(c_avals) + list(x_avals), name=f"scan ({fun_name(f)})")
    jaxpr, consts = hoist_tracer_consts(jaxpr)
    return jaxpr, consts, store["trees"]


def map(f, xs):
    """``stack([f(x) for x in xs])`` as a scan (one trace, one compiled loop).

    >>> lax.map(lambda x: x * 2, fnp.arange(3))
    Array([0, 2, 4], dtype=int64)
    """
    _, ys = scan(lambda c, x: (c, f(x)), (), xs)
    return ys
