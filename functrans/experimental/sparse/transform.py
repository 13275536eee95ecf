"""``sparsify``: run a function written for dense arrays on :class:`BCOO` matrices.

The function is traced with each BCOO argument standing for its dense matrix; the program is
then evaluated with the BCOO values themselves, each equation on a sparse operand by a sparse
rule whose cost follows the stored entries (a product gathers the dense operand at the stored
indices and scatter-adds), as JAX's ``sparsify`` does. Results that stay sparse (a scaled or
transposed matrix) are BCOO; a primitive with no sparse rule raises ``NotImplementedError``
naming it, as in JAX.

    >>> m = BCOO.fromdense(fnp.array([[0.0, 2.0], [1.0, 0.0]]))
    >>> sparsify(lambda a, x: fnp.einsum("ij,j->i", a, x) * 3.0)(m, fnp.array([1.0, 10.0]))
    Array([60.,  3.], dtype=float64)
    >>> sparsify(lambda a: 2.0 * a.T)(m)
    BCOO(float64[2, 2], nse=2)
"""
from __future__ import annotations

import functools

from ... import numpy as fnp
from ...core.avals import ShapedArray
from ...core.ir import Literal
from ...core.staging import hoist_tracer_consts, trace_to_jaxpr
from ...core.trace import get_aval
from ...core.tree import tree_flatten, tree_unflatten
from . import BCOO

__all__ = ["sparsify"]


def _is_sparse(x) -> bool:
    return isinstance(x, BCOO)


def _no_rule(name):
    return NotImplementedError(f"sparsify: sparse rule for {name} is not implemented")


def _dot_general(args, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = args
    if _is_sparse(lhs) and _is_sparse(rhs):
        raise _no_rule("dot_general of two sparse operands")
    if lb or rb:
        raise _no_rule("dot_general with batch dimensions")
    sparse_is_lhs = _is_sparse(lhs)
    sp, dense = (lhs, rhs) if sparse_is_lhs else (rhs, lhs)
    s_contract, d_contract = (lc, rc) if sparse_is_lhs else (rc, lc)
    dense = fnp.asarray(dense)
    s_free = [d for d in (0, 1) if d not in s_contract]
    d_free = [d for d in range(dense.ndim) if d not in d_contract]
    # each stored entry (r, c, v) meets the dense operand at its contracted coordinates
    moved = fnp.transpose(dense, list(d_contract) + d_free)
    gathered = moved[tuple(sp.indices[:, d] for d in s_contract)] if s_contract else \
        fnp.broadcast_to(moved, (sp.nse,) + moved.shape)
    data = sp.data.reshape((-1,) + (1,) * len(d_free))
    contrib = data * gathered
    dtype = preferred_element_type or contrib.dtype
    contrib = contrib.astype(dtype)
    free_shape = tuple(dense.shape[d] for d in d_free)
    if s_free:
        out = fnp.zeros((sp.shape[s_free[0]],) + free_shape, dtype)
        out = out.at[sp.indices[:, s_free[0]]].add(contrib)
        if not sparse_is_lhs:  # dot_general puts the lhs's free dimensions first
            out = fnp.moveaxis(out, 0, -1)
    else:
        out = contrib.sum(0)
    return out


def _mul(args):
    x, y = args
    if _is_sparse(x) and _is_sparse(y):
        raise _no_rule("mul of two sparse operands")
    sp, dense = (x, y) if _is_sparse(x) else (y, x)
    dense = fnp.asarray(dense)
    if dense.ndim == 0:
        scale = dense
    else:  # the dense factor at each stored entry
        full = fnp.broadcast_to(dense, sp.shape)
        scale = full[sp.indices[:, 0], sp.indices[:, 1]]
    return BCOO((sp.data * scale, sp.indices), shape=sp.shape)


def _div(args):
    x, y = args
    if not _is_sparse(x) or _is_sparse(y) or fnp.ndim(y) != 0:
        raise _no_rule("div other than a sparse matrix by a dense scalar")
    return BCOO((x.data / y, x.indices), shape=x.shape)


def _add_like(sign):
    def rule(args):
        x, y = args
        if not (_is_sparse(x) and _is_sparse(y)) or x.shape != y.shape:
            raise _no_rule("add/sub other than of two sparse matrices of one shape")
        data = fnp.concatenate([x.data, sign * y.data])
        return BCOO((data, fnp.concatenate([x.indices, y.indices])), shape=x.shape)
    return rule


def _neg(args):
    (x,) = args
    return BCOO((-x.data, x.indices), shape=x.shape)


def _transpose(args, *, permutation):
    (x,) = args
    return x.T if tuple(permutation) == (1, 0) else x


def _convert(args, *, new_dtype, weak_type=False, sharding=None):
    (x,) = args
    return BCOO((x.data.astype(new_dtype), x.indices), shape=x.shape)


def _reduce_sum(args, *, axes, **_):
    (x,) = args
    axes = tuple(sorted(a % 2 for a in axes))
    if axes == (0, 1):
        return x.data.sum()
    return x.sum(axis=axes[0]) if axes else x


def _copy(args, **_):
    return args[0]


_RULES = {"dot_general": _dot_general, "mul": _mul, "div": _div, "add": _add_like(1),
          "add_any": _add_like(1), "sub": _add_like(-1), "neg": _neg, "transpose": _transpose,
          "convert_element_type": _convert, "reduce_sum": _reduce_sum, "copy": _copy,
          "copy_p": _copy}


def _dense_aval(x):
    if _is_sparse(x):
        return ShapedArray(tuple(x.shape), x.dtype)
    return get_aval(fnp.asarray(x))


def sparsify(f):
    """``f`` taking :class:`BCOO` matrices where it takes dense arrays (see the module's
    example). Its result is what ``f`` gives on the dense matrices, BCOO where the last
    operation keeps a sparse operand sparse; ``NotImplementedError`` where a primitive
    applied to a sparse operand has no sparse rule."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        store = {}

        def flat(*xs):
            a, k = tree_unflatten(in_tree, list(xs))
            out_leaves, store["tree"] = tree_flatten(f(*a, **k))
            return out_leaves

        jaxpr = trace_to_jaxpr(flat, [_dense_aval(x) for x in leaves],
                               name=f"sparsify({getattr(f, '__name__', 'f')})")
        jaxpr, consts = hoist_tracer_consts(jaxpr)
        env = dict(zip(jaxpr.constvars, jaxpr.consts))
        env.update(zip(jaxpr.invars, list(consts) + list(leaves)))

        def read(v):
            return v.bound if type(v) is Literal else env[v]

        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.inputs]
            if any(_is_sparse(x) for x in ins):
                rule = _RULES.get(eqn.prim.name)
                if rule is None:
                    raise _no_rule(eqn.prim.name)
                outs = [rule(ins, **eqn.params)]
            else:
                outs = eqn.prim.bind_all(*ins, **eqn.params)
            env.update(zip(eqn.outputs, outs))
        return tree_unflatten(store["tree"], [read(v) for v in jaxpr.outvars])

    return wrapped
