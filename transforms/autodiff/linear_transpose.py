"""``linear_transpose``: the transpose of a linear function, as a function of the output
cotangent (JAX's ``jax.linear_transpose``): the function is traced to a jaxpr and
``backward_pass`` runs it backwards.

    >>> ft.linear_transpose(lambda x: 2.0 * x, 1.0)(3.0)
    (Array(6., dtype=float64, weak_type=True),)
"""
from __future__ import annotations

from functrans.core.api_util import abstractify, flatten_fun, fun_name
from functrans.core.avals import ShapedArray
from functrans.core.dtypes import kind as dtype_kind
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import get_aval
from functrans.core.tree import Partial, tree_flatten, tree_unflatten

from .jvp import instantiate
from .transpose import backward_pass

__all__ = ["linear_transpose"]


def _dtypes_ok(dtypes) -> bool:
    kinds = {dtype_kind(d) for d in dtypes}
    return kinds <= set("fc") or kinds <= set("iu")


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function ``fun``: a function mapping a cotangent of
    ``fun``'s output to the tuple of cotangents of its arguments. ``primals`` (arrays,
    :class:`ShapeDtypeStruct` s or ShapedArrays) give the arguments' shapes and dtypes only;
    the result is a pytree (a :class:`functrans.tree_util.Partial` holding ``fun``'s
    constants).

    >>> f_t = ft.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y,
    ...                           ft.ShapeDtypeStruct((), "float32"), fnp.float32(0.0))
    >>> f_t(fnp.float32(1.0))
    (Array(0.5, dtype=float32), Array(-0.5, dtype=float32))
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    what = f"linear_transpose({fun_name(fun)})"
    leaves, in_tree = tree_flatten(primals)
    # Only types matter: ShapedArrays are taken as they are (equinox passes them).
    in_avals = [x if isinstance(x, ShapedArray) else abstractify(x, f"{what}: primal leaf {i}")
                for i, x in enumerate(leaves)]
    flat, out_tree = flatten_fun(fun, in_tree)
    jaxpr = trace_to_jaxpr(flat, in_avals, name=what)
    jaxpr, hoisted = hoist_tracer_consts(jaxpr)  # values of enclosing transformations
    out_avals = jaxpr.out_avals
    in_dtypes, out_dtypes = [a.dtype for a in in_avals], [a.dtype for a in out_avals]
    if not _dtypes_ok(in_dtypes + out_dtypes):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        f"complex], and integer -> integer functions, but got {in_dtypes} -> "
                        f"{out_dtypes}.")
    n_nonlinear = len(hoisted)
    linear = [False] * n_nonlinear + [True] * len(leaves)
    expected_tree = out_tree()

    def transposed(consts, hoisted, out_cotangent):
        cts, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != expected_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{expected_tree} but got {ct_tree}")
        for i, (c, a) in enumerate(zip(cts, out_avals)):
            ca = get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(f"cotangent type does not match function output: leaf {i} is "
                                f"{ca.str_short()}, expected {a.str_short()}")
        program = jaxpr.replace(consts=list(consts))
        in_cts = backward_pass(program, linear, [*hoisted, *[None] * len(leaves)], cts)
        in_cts = [instantiate(c) for c in in_cts[n_nonlinear:]]
        return tree_unflatten(in_tree, in_cts)

    return Partial(transposed, list(jaxpr.consts), list(hoisted))
