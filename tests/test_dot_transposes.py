"""Products of transposed operands read the operands' sources (transforms/passes.py:
dot_operand_transposes): generated products with batch and contracting dimensions and a
transpose on either operand, jit (which folds them) against eager (the primitives' NumPy
implementations); and which transposes fold.

Tolerance: each result is a sum of K products; both sides are within K * eps * (the sum of
the products' magnitudes) of the exact sum, so within twice that of each other."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans import lax
from functrans.transforms.passes import dce, dot_operand_transposes, optimize


@st.composite
def transposed_products(draw):
    nb, nc = draw(st.integers(0, 1)), draw(st.integers(1, 2))
    nl, nr = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    sizes = lambda n: [draw(st.integers(1, 4)) for _ in range(n)]  # noqa: E731
    b, c, lf, rf = sizes(nb), sizes(nc), sizes(nl), sizes(nr)
    lhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("l", i) for i in range(nl)]
    rhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("r", i) for i in range(nr)]
    lhs_dims = draw(st.permutations(lhs_dims))
    rhs_dims = draw(st.permutations(rhs_dims))
    size = {("b", i): n for i, n in enumerate(b)} | {("c", i): n for i, n in enumerate(c)} | \
        {("l", i): n for i, n in enumerate(lf)} | {("r", i): n for i, n in enumerate(rf)}
    perms = [draw(st.permutations(range(len(d)))) if draw(st.booleans()) else None
             for d in (lhs_dims, rhs_dims)]
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return lhs_dims, rhs_dims, size, perms, dtype, draw(st.integers(0, 999))


@settings(max_examples=80, deadline=None)
@given(transposed_products())
def test_products_of_transposed_operands_match_eager(case):
    lhs_dims, rhs_dims, size, perms, dtype, seed = case
    rng = np.random.default_rng(seed)
    # Each operand is made in a stored order whose transpose gives the dims above.
    stored, shapes = [], []
    for dims, perm in zip((lhs_dims, rhs_dims), perms):
        order = list(range(len(dims))) if perm is None else list(np.argsort(perm))
        held = [dims[i] for i in order]  # transpose(held, perm) has the dims in `dims`
        stored.append(held)
        shapes.append(tuple(size[d] for d in held))
    x = rng.standard_normal(shapes[0]).astype(dtype)
    y = rng.standard_normal(shapes[1]).astype(dtype)

    def dims_of(dims, kind):
        return tuple(k for k, d in enumerate(dims) if d[0] == kind)

    def order(dims, kind):  # the positions of kind's dims, by their index
        return tuple(sorted(dims_of(dims, kind), key=lambda k: dims[k][1]))

    dn = ((order(lhs_dims, "c"), order(rhs_dims, "c")),
          (order(lhs_dims, "b"), order(rhs_dims, "b")))

    def f(x, y):
        a = x if perms[0] is None else lax.transpose(x, tuple(perms[0]))
        b = y if perms[1] is None else lax.transpose(y, tuple(perms[1]))
        return lax.dot_general(a, b, dn)

    got = np.asarray(ft.jit(f)(x, y))
    want = np.asarray(f(x, y))
    bound = np.asarray(f(np.abs(x), np.abs(y)))
    k = int(np.prod([size[d] for d in lhs_dims if d[0] == "c"]))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got - want) <= 2 * k * np.finfo(dtype).eps * bound)


def _names(f, *args):
    return [e.prim.name for e in optimize(ft.make_jaxpr(f)(*args).jaxpr).eqns]


def test_which_transposes_fold():
    w, x = np.ones((3, 4)), np.ones((4, 2))
    # a matrix read transposed: folded (BLAS transposes it)
    assert _names(lambda w, x: w.T @ x, np.ones((4, 3)), x) == ["dot_general"]
    # a transposed copy something else reads too stays, the product reads the source
    names = _names(lambda w, x: (w.T @ x, w.T * 2.0), np.ones((4, 3)), x)
    assert names.count("transpose") == 1 and names.count("dot_general") == 1
    # free dimensions swapped by the transpose: the result's order would change, kept
    t = np.ones((2, 3, 4))
    f = lambda t, v: lax.dot_general(lax.transpose(t, (1, 0, 2)), v,  # noqa: E731
                                     (((2,), (0,)), ((), ())))
    assert "transpose" in _names(f, t, np.ones((4, 5)))
    j = ft.make_jaxpr(lambda w, x: w @ x)(w, x).jaxpr
    assert dot_operand_transposes(j) is j  # nothing to fold: the same program
    assert [e.prim.name for e in dce(dot_operand_transposes(
        ft.make_jaxpr(lambda w, x: w.T @ x)(np.ones((4, 3)), x).jaxpr)).eqns] == ["dot_general"]
