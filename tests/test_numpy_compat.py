"""NumPy call forms and helpers checked against NumPy itself: einsum's sublist form, the r_/c_
index tricks, histogram2d/histogramdd and vectorize (JAX's semantics: on vmap); also
named_call and device_put of single arrays."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp


def assert_same(got, want, rtol=1e-12):
    got = np.asarray(got)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype, (got, want)
    np.testing.assert_allclose(got, want, rtol=rtol)


# ---- einsum sublists -------------------------------------------------------------------------
A, B, C = (np.random.default_rng(0).standard_normal(s) for s in [(2, 3), (3, 4), (2, 3, 3)])
EINSUM_SUBLISTS = [(A, [0, 1], B, [1, 2], [0, 2]), (A, [0, 1], B, [1, 2]), (A, [1, 0]),
                   (C, [Ellipsis, 1, 1]), (C, [Ellipsis, 1, 1], [Ellipsis]),
                   (A, [30, 1], A, [30, 1], []), (A, [0, 51], B, [51, 26], [26, 0])]


@pytest.mark.parametrize("args", EINSUM_SUBLISTS, ids=range(len(EINSUM_SUBLISTS)))
def test_einsum_sublist_form_matches_numpy(args):
    assert_same(fnp.einsum(*args), np.einsum(*args))
    ops = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    jitted = ft.jit(lambda *xs: fnp.einsum(*[xs[ops.index(i)] if i in ops else a
                                            for i, a in enumerate(args)]))
    assert_same(jitted(*[args[i] for i in ops]), np.einsum(*args))


def test_einsum_sublist_errors():
    with pytest.raises(ValueError, match=r"integers in \[0, 52\).*60"):
        fnp.einsum(A, [0, 60])
    with pytest.raises(TypeError, match="sublist of operand 0 must be a list"):
        fnp.einsum(A, 3)


# ---- r_ and c_ --------------------------------------------------------------------------------
X = np.array([7, 8])
M = np.arange(6.0).reshape(2, 3)
INDEX_TRICKS = {
    "slices_scalars_arrays": lambda R: R.r_[1:4, 0, X],
    "complex_step": lambda R: R.r_[0:1:5j, 2],
    "scalar_promotes_weakly": lambda R: R.r_[np.ones(2, np.float32), 3],
    "float32_scalars": lambda R: R.r_[np.float32(1), np.float32(2)],
    "ndmin_directive": lambda R: R.r_["0,2", [1, 2], [3, 4]],
    "axis_directive": lambda R: R.r_["-1", M, M],
    "trans1d_0": lambda R: R.r_["0,2,0", [1, 2], [3, 4]],
    "trans1d_1_ndmin3": lambda R: R.r_["1,3,1", [1, 2], [3, 4]],
    "c_columns": lambda R: R.c_[X, X],
    "c_matrices": lambda R: R.c_[M, M],
    "c_slice": lambda R: R.c_[1:3, X],
    "c_row_and_scalars": lambda R: R.c_[np.array([[1, 2]]), 3, 4],
    "negative_step": lambda R: R.r_[5:0:-2, -1.5],
}


@pytest.mark.parametrize("name", sorted(INDEX_TRICKS))
def test_index_tricks_match_numpy(name):
    assert_same(INDEX_TRICKS[name](fnp), INDEX_TRICKS[name](np))


def test_index_tricks_trace_and_refuse_bad_directives():
    got = ft.jit(lambda a: fnp.r_[a, 0:2, a])(np.ones(2))
    assert_same(got, np.r_[np.ones(2), 0:2, np.ones(2)])
    with pytest.raises(NotImplementedError, match="matrix directives"):
        fnp.r_["r", [1, 2]]
    with pytest.raises(ValueError, match="unknown special directive"):
        fnp.r_["x", [1, 2]]
    with pytest.raises(ValueError, match="must be the first entry"):
        fnp.r_[[1], "0"]


# ---- histograms ------------------------------------------------------------------------------
_rng = np.random.default_rng(1)
HX, HY, HZ, HW = _rng.normal(size=40), _rng.normal(size=40), _rng.uniform(size=40), \
    _rng.uniform(size=40)
HIST2D = [{}, {"bins": 3}, {"bins": [2, 4]}, {"bins": [np.array([-3, 0, 3.0]), 5]},
          {"bins": np.array([-1, 0, 1.0])}, {"range": [[-1, 1], [-2, 2]], "bins": 4},
          {"density": True, "bins": 3}, {"weights": HW, "bins": 3}]


@pytest.mark.parametrize("kw", HIST2D, ids=range(len(HIST2D)))
def test_histogram2d_matches_numpy(kw):
    for g, w in zip(fnp.histogram2d(HX, HY, **kw), np.histogram2d(HX, HY, **kw)):
        assert_same(g, w)


@pytest.mark.parametrize("kw", [{}, {"bins": (2, 3, 4)}, {"density": True, "bins": 2},
                                {"weights": HW, "range": [(-1, 1), (-1, 1), (0, 1)], "bins": 3}])
def test_histogramdd_matches_numpy(kw):
    sample = np.stack([HX, HY, HZ], 1)
    got, got_edges = fnp.histogramdd(sample, **kw)
    want, want_edges = np.histogramdd(sample, **kw)
    assert_same(got, want)
    for g, w in zip(got_edges, want_edges):
        assert_same(g, w)
    # D arrays instead of (N, D): JAX refuses the sequence (a TypeError), and so does functrans.
    with pytest.raises(TypeError, match="histogramdd requires ndarray or scalar arguments"):
        fnp.histogramdd((HX, HY, HZ), **kw)


def test_histograms_under_jit_and_errors():
    f = ft.jit(lambda a, b: fnp.histogram2d(a, b, bins=3, range=[[-1, 1], [-1, 1]])[0])
    assert_same(f(HX, HY), np.histogram2d(HX, HY, bins=3, range=[[-1, 1], [-1, 1]])[0])
    with pytest.raises(TypeError, match="needs range="):
        ft.jit(lambda a, b: fnp.histogram2d(a, b)[0])(HX, HY)
    with pytest.raises(ValueError, match="same length"):
        fnp.histogram2d(HX, HY[:3])
    with pytest.raises(ValueError, match="dimension of bins"):
        fnp.histogramdd(np.stack([HX, HY], 1), bins=[2, 3, 4])
    with pytest.raises(ValueError, match="weights should have"):
        fnp.histogramdd(np.stack([HX, HY], 1), weights=HW[:3])


# ---- vectorize -------------------------------------------------------------------------------
@settings(max_examples=10)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=3),
       st.lists(st.integers(1, 3), min_size=0, max_size=2))
def test_vectorize_scalar_function_broadcasts_like_numpy(s1, s2):
    s2 = [1 if i % 2 else n for i, n in enumerate(s2)]  # sizes that broadcast against s1
    try:
        np.broadcast_shapes(tuple(s1), tuple(s2))
    except ValueError:
        return
    a = np.arange(np.prod(s1, dtype=int), dtype=float).reshape(s1)
    b = np.arange(np.prod(s2, dtype=int), dtype=float).reshape(s2) - 1
    f = lambda x, y: x * 2 + y  # noqa: E731
    assert_same(fnp.vectorize(f)(a, b), np.vectorize(f)(a, b))


def test_vectorize_with_signature_matches_numpy():
    a = np.random.default_rng(2).standard_normal((4, 1, 3))
    b = np.random.default_rng(3).standard_normal((5, 3))
    dot = fnp.vectorize(lambda x, y: fnp.sum(x * y), signature="(n),(n)->()")
    assert_same(dot(a, b), np.vectorize(lambda x, y: np.sum(x * y), signature="(n),(n)->()")(a, b))
    outer = fnp.vectorize(lambda x: fnp.outer(x, x), signature="(n)->(n,n)")
    assert_same(outer(b), np.einsum("bi,bj->bij", b, b))
    two = fnp.vectorize(lambda x: (fnp.sum(x), x * 2), signature="(n)->(),(n)")(b)
    assert_same(two[0], b.sum(1))
    assert_same(two[1], b * 2)
    assert_same(ft.jit(dot)(a, b), np.einsum("...i,...i->...", a, b))
    assert_same(ft.grad(lambda x: fnp.sum(dot(x, b)))(a), np.broadcast_to(b.sum(0), a.shape))


def test_vectorize_excluded_and_keywords():
    power = fnp.vectorize(lambda x, p: x ** p, excluded={1})
    assert_same(power(fnp.arange(3.0), 2), np.arange(3.0) ** 2)
    by_name = fnp.vectorize(lambda x, p: x ** p, excluded={"p"})
    assert_same(by_name(fnp.arange(3.0), p=3), np.arange(3.0) ** 3)
    seen = []
    fnp.vectorize(lambda x, tag: seen.append(tag) or x, excluded={1})(fnp.ones(3), "t")
    assert seen == ["t"]  # traced once by vmap, not called per element


def test_vectorize_errors():
    dot = fnp.vectorize(lambda x, y: fnp.sum(x * y), signature="(n),(n)->()")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        dot(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        fnp.vectorize(lambda x: x, signature="(n)->")
    with pytest.raises(ValueError, match="declares core dimensions"):
        fnp.vectorize(lambda x: x, signature="(n)->(m,m)")(np.ones((2, 3)))
    with pytest.raises(ValueError, match="do not broadcast"):
        fnp.vectorize(lambda x, y: x + y)(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="2 inputs, got 1"):
        dot(np.ones(3))


# ---- named_call and device_put --------------------------------------------------------------
def test_named_call_only_names_and_stages_nothing():
    # JAX 0.10.2's named_call is extend_name_stack(name)(fun): make_jaxpr of
    # `named_call(lambda x: x * 2)(x) + 1` is `mul; add`, no call equation. Arguments stay as
    # given: haiku wraps module methods in it and passes Python flags that must not be traced.
    double = ft.named_call(lambda x: x * 2, name="double")
    jaxpr = ft.make_jaxpr(lambda x: double(x) + 1)(1.0)
    assert [e.prim.name for e in jaxpr.eqns] == ["mul", "add"]
    assert float(double(3.0)) == 6.0 and float(ft.jit(double)(3.0)) == 6.0
    assert float(ft.grad(lambda x: double(x) * x)(3.0)) == 12.0
    assert_same(ft.vmap(double)(fnp.arange(3.0)), np.arange(3.0) * 2)
    flagged = ft.named_call(lambda x, training: x * 2 if training else x, name="bn")
    assert float(ft.jit(lambda x: flagged(x, True))(3.0)) == 6.0  # `training` stays a bool
    assert ft.named_call(fnp.negative).__name__ == "negative"  # default name: the function's
    with pytest.raises(TypeError, match="name must be a string"):
        ft.named_call(lambda x: x, name=3)
    with pytest.raises(TypeError, match="expected a callable"):
        ft.named_call(3)


def test_named_call_takes_arguments_that_are_not_arrays():
    # equinox names lax.while_loop, passing the loop's functions: JAX's named_call only names,
    # so any argument is fine.
    loop = ft.named_call(ft.lax.while_loop, name="loop")
    run = lambda x: loop(lambda c: c < 5.0, lambda c: c + 1.0, x)  # noqa: E731
    assert float(ft.jit(run)(0.5)) == 5.5
    assert [e.prim.name for e in ft.make_jaxpr(run)(0.5).eqns] == ["while"]
    tangent = ft.jvp(lambda x: loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0),
                                    (0, x))[1], (1.0,), (1.0,))[1]
    assert float(tangent) == 8.0


@pytest.mark.parametrize("x64", [True, False])
def test_device_put_of_single_values(x64):
    with ft.config.override(enable_x64=x64):
        user = np.ones(3)
        a = ft.device_put(user)
        user[0] = 5.0
        assert type(a) is ft.Array and a.dtype == (np.float64 if x64 else np.float32)
        assert_same(a, np.ones(3, a.dtype))
        s = ft.device_put(2.0)
        assert type(s) is ft.Array and s.weak_type
        assert ft.device_put(np.ones(2), ft.devices()[0]).sharding.device_set == {ft.devices()[0]}
