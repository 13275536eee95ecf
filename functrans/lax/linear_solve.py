"""``lax.custom_linear_solve``: a linear solve whose derivatives are solves of the same
system (implicit differentiation), never derivatives of the solver's iterations.

    >>> a = fnp.array([[2.0, 1.0], [1.0, 3.0]])
    >>> mv = lambda x: a @ x
    >>> solve = lambda matvec, b: fnp.linalg.solve(a, b)
    >>> custom_linear_solve(mv, fnp.array([1.0, 2.0]), solve, symmetric=True)
    Array([0.2, 0.6], dtype=float64)
"""
from __future__ import annotations

from ..core.api_util import fun_name
from ..core.tree import tree_flatten, tree_unflatten
from ..primitives.linear_solve import linear_solve_flat
from ..transforms.autodiff.linear_transpose import linear_transpose

__all__ = ["custom_linear_solve"]


def _flat_fun(fun, in_tree, what, has_aux=False, aux_store=None):
    def flat(*leaves):
        out = fun(tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"custom_linear_solve: with has_aux=True, {what} must return "
                                f"a pair (solution, aux), got {type(out).__name__}")
            out, aux = out
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != in_tree:
            raise TypeError(f"custom_linear_solve: {what} ({fun_name(fun)}) must return a "
                            f"value with b's pytree structure {in_tree}, got {out_tree}")
        if has_aux:
            aux_leaves, aux_store["tree"] = tree_flatten(aux)
            return list(out_leaves) + list(aux_leaves)
        return list(out_leaves)
    return flat


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """The solution ``x`` of ``matvec(x) = b`` computed by ``solve(matvec, b)``, with implicit
    derivatives, as ``jax.lax.custom_linear_solve``.

    ``matvec`` is linear in its argument (a pytree of ``b``'s structure). Forward mode solves
    ``A dx = db - (dA) x`` with ``solve``, where ``dA`` is the derivative of ``matvec`` with
    respect to the values it closes over; reverse mode solves ``A^T ct_b = ct_x`` with
    ``transpose_solve(vecmat, ct_x)`` (``vecmat`` the transpose of ``matvec``), or with
    ``solve`` itself when ``symmetric=True``. Without either, reverse mode raises. With
    ``has_aux=True``, ``solve`` (and ``transpose_solve``) return ``(solution, aux)`` and so does
    this function; aux carries no derivative.

        >>> a = fnp.array([[4.0, 1.0], [2.0, 3.0]])
        >>> f = lambda b: custom_linear_solve(lambda x: a @ x, b,
        ...     lambda mv, r: fnp.linalg.solve(a, r), lambda vm, r: fnp.linalg.solve(a.T, r))
        >>> ft.grad(lambda b: f(b).sum())(fnp.array([1.0, 1.0]))
        Array([0.1, 0.3], dtype=float64)
    """
    b_leaves, tree = tree_flatten(b)
    if symmetric:
        transpose_solve = solve

    def vecmat(y):
        if symmetric:
            return matvec(y)
        return linear_transpose(matvec, b)(y)[0]

    aux_store = {}
    mv = _flat_fun(matvec, tree, "matvec")
    s = _flat_fun(lambda r: solve(matvec, r), tree, "solve", has_aux, aux_store)
    t = None if transpose_solve is None else _flat_fun(
        lambda r: transpose_solve(vecmat, r), tree, "transpose_solve", has_aux, {})
    outs = linear_solve_flat(mv, b_leaves, s, t)
    x = tree_unflatten(tree, outs[:len(b_leaves)])
    if has_aux:
        return x, tree_unflatten(aux_store["tree"], outs[len(b_leaves):])
    return x
