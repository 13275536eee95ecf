"""Products (linalg_ops.py) and functrans.numpy.linalg against NumPy, eagerly and traced.

Integer and boolean products are exact (wrapping like NumPy's). Floating-point products sum
k terms in BLAS's order rather than NumPy's, so each output may differ by the dot product's
error bound ``k * e * (|a| @ |b|)`` (e = epsilon of the result dtype), computed per output
from the operands' magnitudes with NumPy itself. Norms: a sum of k squares (or p-th powers)
is within ``k * e`` of its magnitude sum, and the root halves (or divides by p) the relative
error: ``(k + 2) * e`` relative to the result, plus the usual half-ulp roundings.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import linalg, linalg_ops

from test_linalg_decomp import DECOMPOSITIONS
from test_linalg_eig import FUNCTIONS as EIG

DOT_DTYPES = T.dtypes_from(T.ALL_DTYPES)


def _operand(draw, shape, dtype=None):
    dtype = draw(DOT_DTYPES) if dtype is None else dtype
    return draw(T.arrays(dtype, shape, bound=10, int_range=(-10, 10)))


def _abs64(x):
    return np.abs(np.nan_to_num(np.asarray(x, np.float64)))


def _dot_tol(np_fn, k):
    """Tolerance for a product ``np_fn`` whose outputs sum ``k`` terms."""
    def tol(args, kw, want):
        if np.asarray(want).dtype.kind != "f":
            return 0, 0
        bound = np_fn(*[_abs64(a) if isinstance(a, np.ndarray) else abs(a) for a in args], **kw)
        return 1, (k(*args, **kw) + 1) * T.eps(np.asarray(want).dtype) * bound
    return tol


@st.composite
def _matmul(draw):
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    batch = draw(T.broadcastable_shapes(2, max_dims=2))
    a_shape = draw(st.sampled_from([(k,), batch[0] + (n, k)]))
    b_shape = draw(st.sampled_from([(k,), batch[1] + (k, m)]))
    return (_operand(draw, a_shape), _operand(draw, b_shape)), {}


@st.composite
def _dot(draw):
    k = draw(st.integers(0, 3))
    a_shape = draw(st.sampled_from([(), (k,), (2, k), (3, 2, k)]))
    b_shape = draw(st.sampled_from([(), (k,), (k, 2), (2, k, 3)]))
    return (_operand(draw, a_shape), _operand(draw, b_shape)), {}


@st.composite
def _vdot(draw):
    shape = draw(T.shapes(max_dims=2))
    shape2 = draw(st.sampled_from([shape, shape[::-1]]))
    return (_operand(draw, shape), _operand(draw, shape2)), {}


@st.composite
def _inner(draw):
    k = draw(st.integers(0, 3))
    a_shape = draw(st.sampled_from([(), (k,), (2, k), (3, 1, k)]))
    b_shape = draw(st.sampled_from([(), (k,), (2, k)]))
    return (_operand(draw, a_shape), _operand(draw, b_shape)), {}


@st.composite
def _outer(draw):
    return (_operand(draw, draw(T.shapes(max_dims=2))),
            _operand(draw, draw(T.shapes(max_dims=2)))), {}


@st.composite
def _tensordot(draw):
    a_shape = draw(T.shapes(max_dims=3))
    n = draw(st.integers(0, len(a_shape)))
    contracted = a_shape[len(a_shape) - n:]
    b_shape = contracted + draw(T.shapes(max_dims=2))
    axes = draw(st.sampled_from([n, (list(range(-n, 0)), list(range(n)))]))
    if n == 1 and draw(st.booleans()):
        axes = (-1, 0)
    return (_operand(draw, a_shape), _operand(draw, b_shape)), {"axes": axes}


EINSUM = ["ij,jk->ik", "ii->i", "ii", "ij->", "i,i", "i,j->ij", "...ij,...jk->...ik",
          "ijk,ikl->ijl", "ij,ij->ij", "ij,jk,kl->il", "i->", "ba", "ij,jk", "i,i,i->",
          "bij,bjk->bik", "ii->", "ij,j->i", "ijk->kji", "...i,...i->..."]


@st.composite
def _einsum(draw):
    spec = draw(st.sampled_from(EINSUM))
    sizes = {c: draw(st.integers(1, 3)) for c in "ijklab"}
    ell = draw(T.shapes(max_dims=2, min_side=1))
    ins = spec.split("->")[0].split(",")
    dtype = draw(DOT_DTYPES)
    ops = [_operand(draw, ell + tuple(sizes[c] for c in t.replace("...", "")) if "..." in t
                    else tuple(sizes[c] for c in t), dtype) for t in ins]
    return (spec, *ops), {}


def _einsum_tol(args, kw, want):
    if np.asarray(want).dtype.kind != "f":
        return 0, 0
    spec, *ops = args
    ins = spec.split("->")[0].replace("...", "").replace(",", "")
    k = max(1, math.prod(3 for _ in set(ins)))
    bound = np.einsum(spec, *[_abs64(o) for o in ops])
    return 1, (k + 1) * len(ops) * T.eps(np.asarray(want).dtype) * bound


@st.composite
def _kron(draw):
    return (_operand(draw, draw(T.shapes(max_dims=2))),
            _operand(draw, draw(T.shapes(max_dims=3)))), {}


@st.composite
def _cross(draw):
    shapes = draw(T.broadcastable_shapes(2, max_dims=2))
    na, nb = draw(st.sampled_from([2, 3])), draw(st.sampled_from([2, 3]))
    dtype = draw(T.numeric_dtypes())
    a = _operand(draw, shapes[0] + (na,), dtype)
    b = _operand(draw, shapes[1] + (nb,), dtype)
    kw = {}
    if draw(st.booleans()):
        a, b = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
        kw = {"axisa": 0, "axisb": 0, "axisc": draw(st.integers(-1, 0))}
    return (a, b), kw


@st.composite
def _vecdot(draw):
    shapes = draw(T.broadcastable_shapes(2, max_dims=2))
    k = draw(st.integers(0, 3))
    return (_operand(draw, shapes[0] + (k,)), _operand(draw, shapes[1] + (k,))), {}


@st.composite
def _matvec(draw, vec_first=False):
    shapes = draw(T.broadcastable_shapes(2, max_dims=2))
    n, k = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    m = _operand(draw, shapes[0] + ((k, n) if vec_first else (n, k)))
    v = _operand(draw, shapes[1] + (k,))
    return ((v, m) if vec_first else (m, v)), {}


def _k_matmul(a, b, **kw):
    return a.shape[-1] if a.ndim else 1


def _k_last(a, b, **kw):
    return a.shape[-1] if a.ndim else 1


def _k_tensordot(a, b, axes=2):
    if isinstance(axes, int):
        return math.prod(a.shape[a.ndim - axes:])
    return math.prod(a.shape[i] for i in np.atleast_1d(axes[0]))


CASES = {
    "matmul": (_matmul(), _dot_tol(np.matmul, _k_matmul)),
    "dot": (_dot(), _dot_tol(np.dot, _k_last)),
    "vdot": (_vdot(), _dot_tol(np.vdot, lambda a, b: a.size)),
    "inner": (_inner(), _dot_tol(np.inner, _k_last)),
    "outer": (_outer(), _dot_tol(np.outer, lambda a, b: 1)),
    "tensordot": (_tensordot(), _dot_tol(np.tensordot, _k_tensordot)),
    "einsum": (_einsum(), _einsum_tol),
    "kron": (_kron(), _dot_tol(np.kron, lambda a, b: 1)),
    "cross": (_cross(), None),
    "vecdot": (_vecdot(), _dot_tol(np.vecdot, lambda a, b: a.shape[-1])),
    "matvec": (_matvec(), _dot_tol(np.matvec, lambda m, v: m.shape[-1])),
    "vecmat": (_matvec(vec_first=True), _dot_tol(np.vecmat, lambda v, m: v.shape[-1])),
}


def _cross_tol(args, kw, want):
    """Each component is a difference of two products: 2 roundings of |a_i b_j| + |a_j b_i|."""
    if np.asarray(want).dtype.kind != "f":
        return 0, 0
    a, b = (np.moveaxis(_abs64(x), kw.get(ax, -1), -1) for x, ax in zip(args, ("axisa", "axisb")))
    both_2d = a.shape[-1] == b.shape[-1] == 2
    a, b = (np.concatenate([x, np.zeros(x.shape[:-1] + (3 - x.shape[-1],))], -1) for x in (a, b))
    bound = np.stack([a[..., 1] * b[..., 2] + a[..., 2] * b[..., 1],
                      a[..., 2] * b[..., 0] + a[..., 0] * b[..., 2],
                      a[..., 0] * b[..., 1] + a[..., 1] * b[..., 0]], -1)
    if both_2d:
        bound = bound[..., 2]  # 2-vectors: only the z component
    else:
        bound = np.moveaxis(bound, -1, kw.get("axisc", -1))
    return 0, 3 * T.eps(np.asarray(want).dtype) * bound


CASES["cross"] = (_cross(), _cross_tol)


def test_every_product_is_tested():
    assert sorted(list(CASES) + ["einsum_path"]) == sorted(linalg_ops.__all__)


@given(_einsum())
def test_einsum_path(case):
    (spec, *ops), _ = case
    for optimize in ("greedy", "optimal", False):
        got, want = (mod.einsum_path(spec, *ops, optimize=optimize) for mod in (fnp, np))
        assert got == want


@pytest.mark.parametrize("spec,shapes", [(",,->", [(), (), ()]),
                                         ("...,...,...->...", [(3, 2)] * 3),
                                         ("i,,j,->ij", [(2,), (), (3,), ()]),
                                         ("a,b,c->", [(2,), (2,), (2,)])])
def test_einsum_joins_paths_of_three_or_more_operands_pairwise(spec, shapes):
    # np.einsum_path's greedy path may contract several operands in one step (scalars, and
    # elementwise "...,...,..."), which einops's tests use; the oracle is NumPy's einsum in
    # float64 (a few products: held to 4 ulps).
    rng = np.random.default_rng(0)
    ops = [rng.uniform(0.5, 2.0, s) for s in shapes]
    assert any(len(step) > 2 for step in np.einsum_path(spec, *ops, optimize="greedy")[0][1:]) \
        or spec == "a,b,c->"
    T.assert_close(fnp.einsum(spec, *ops), np.einsum(spec, *ops), ulps=4)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_products_match_numpy(name, data):
    strategy, tolerance = CASES[name]
    args, kwargs = data.draw(strategy)
    fn, oracle = getattr(fnp, name), getattr(np, name)
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = oracle(*args, **kwargs)
    ulps, atol = tolerance(args, kwargs, want)
    T.check_against(fn, oracle, *args, ulps=ulps, atol=atol, **kwargs)


# ---- functrans.numpy.linalg --------------------------------------------------------------------------
VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1, -2]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


def _norm_tol(args, kw, want):
    x = np.asarray(args[0])
    want = np.asarray(want)
    if want.dtype.kind != "f":
        return 0, 0
    axis = kw.get("axis")
    k = x.size if axis is None else math.prod(x.shape[a] for a in np.atleast_1d(axis))
    ord_ = kw.get("ord")
    p = abs(ord_) if isinstance(ord_, (int, float)) and ord_ not in (0, np.inf, -np.inf) else 1
    # p-th powers and the p-th root each contribute ~p roundings of the result's magnitude.
    return (k + 2) * (1 + p), 0


@st.composite
def _norm(draw):
    x = draw(T.arrays(T.numeric_dtypes(), T.shapes(max_dims=3), bound=100, int_range=(-20, 20)))
    kw = {"keepdims": draw(st.booleans())}
    if x.ndim and draw(st.booleans()):
        if x.ndim >= 2 and draw(st.booleans()):
            a, b = draw(st.permutations(range(x.ndim)))[:2]
            kw["axis"] = (a, b - x.ndim * draw(st.integers(0, 1)))
            kw["ord"] = draw(st.sampled_from(MATRIX_ORDS))
        else:
            kw["axis"] = draw(st.integers(-x.ndim, x.ndim - 1))
            kw["ord"] = draw(st.sampled_from(VECTOR_ORDS))
    elif x.ndim in (1, 2) and draw(st.booleans()):
        kw["ord"] = draw(st.sampled_from(VECTOR_ORDS if x.ndim == 1 else MATRIX_ORDS))
    return (x,), kw


@st.composite
def _vector_norm(draw):
    x = draw(T.arrays(T.numeric_dtypes(), T.shapes(max_dims=3), bound=100, int_range=(-20, 20)))
    return (x,), {"axis": draw(T.axes(x.ndim)), "keepdims": draw(st.booleans()),
                  "ord": draw(st.sampled_from([o for o in VECTOR_ORDS if o is not None]))}


@st.composite
def _matrix_norm(draw):
    x = draw(T.arrays(T.numeric_dtypes(), T.shapes(min_dims=2, max_dims=3), bound=100,
                      int_range=(-20, 20)))
    return (x,), {"keepdims": draw(st.booleans()),
                  "ord": draw(st.sampled_from(["fro", 1, -1, np.inf, -np.inf]))}


@st.composite
def _matrix_power(draw):
    n = draw(st.integers(0, 3))
    x = draw(T.arrays(T.numeric_dtypes(), draw(T.shapes(max_dims=1)) + (n, n), bound=2,
                      int_range=(-2, 2)))
    return (x, draw(st.integers(0, 6))), {}


def _matrix_power_tol(args, kw, want):
    x, n = args
    if np.asarray(want).dtype.kind != "f":
        return 0, 0
    # n - 1 products of k terms each; bound with the powers of |x|.
    k = x.shape[-1]
    bound = np.linalg.matrix_power(_abs64(x), n)
    return 1, n * (k + 1) * T.eps(np.asarray(want).dtype) * bound


@st.composite
def _multi_dot(draw):
    n = draw(st.integers(2, 5))
    dims = [draw(st.integers(1, 4)) for _ in range(n + 1)]
    dtype = draw(T.numeric_dtypes())
    arrays = [_operand(draw, (dims[i], dims[i + 1]), dtype) for i in range(n)]
    if draw(st.booleans()):
        arrays[0] = arrays[0][0]
    if draw(st.booleans()):
        arrays[-1] = arrays[-1][:, 0]
    return (arrays,), {}


def _multi_dot_tol(args, kw, want):
    arrays = args[0]
    if np.asarray(want).dtype.kind != "f":
        return 0, 0
    k = sum(a.shape[-1] for a in arrays[:-1])
    bound = np.linalg.multi_dot([_abs64(a) for a in arrays])
    return 1, (k + len(arrays)) * T.eps(np.asarray(want).dtype) * bound


@st.composite
def _diagonal(draw):
    return (draw(T.arrays(T.all_dtypes(), T.shapes(min_dims=2))),), {
        "offset": draw(st.integers(-3, 3))}


@st.composite
def _trace(draw):
    kw = {"offset": draw(st.integers(-3, 3))}
    if draw(st.booleans()):
        kw["dtype"] = draw(T.float_dtypes())
    return (draw(T.arrays(T.numeric_dtypes(), T.shapes(min_dims=2), int_range=(-9, 9))),), kw


def _trace_tol(args, kw, want):
    if np.asarray(want).dtype.kind != "f":
        return 0, 0
    x = _abs64(args[0])
    bound = np.linalg.trace(x, offset=kw["offset"])
    return 1, (min(x.shape[-2:]) + 1) * T.eps(np.asarray(want).dtype) * bound


@st.composite
def _linalg_cross(draw):
    shapes = draw(T.broadcastable_shapes(2, max_dims=2))
    dtype = draw(T.numeric_dtypes())
    return (_operand(draw, shapes[0] + (3,), dtype), _operand(draw, shapes[1] + (3,), dtype)), {}


@st.composite
def _linalg_outer(draw):
    return (_operand(draw, (draw(st.integers(0, 3)),)),
            _operand(draw, (draw(st.integers(0, 3)),))), {}


@st.composite
def _matrix_transpose(draw):
    return (draw(T.arrays(T.all_dtypes(), T.shapes(min_dims=2))),), {}


LINALG = {
    "norm": (_norm(), _norm_tol), "vector_norm": (_vector_norm(), _norm_tol),
    "matrix_norm": (_matrix_norm(), _norm_tol),
    "matrix_power": (_matrix_power(), _matrix_power_tol),
    "multi_dot": (_multi_dot(), _multi_dot_tol), "diagonal": (_diagonal(), None),
    "trace": (_trace(), _trace_tol), "cross": (_linalg_cross(), None),
    "outer": (_linalg_outer(), _dot_tol(np.outer, lambda a, b: 1)),
    "matrix_transpose": (_matrix_transpose(), None),
    "matmul": (_matmul(), _dot_tol(np.matmul, _k_matmul)),
    "vecdot": (_vecdot(), _dot_tol(np.vecdot, lambda a, b: a.shape[-1])),
    "tensordot": (_tensordot(), _dot_tol(np.tensordot, _k_tensordot)),
}
# Decompositions and their composites are tested in test_linalg_decomp.py, eig/eigvals in
# test_linalg_eig.py.


def test_every_linalg_function_is_tested():
    assert sorted(linalg.__all__) == sorted(set(LINALG) | set(DECOMPOSITIONS) | set(EIG))


@pytest.mark.parametrize("name", sorted(LINALG))
@given(data=st.data())
def test_linalg_matches_numpy(name, data):
    strategy, tolerance = LINALG[name]
    args, kwargs = data.draw(strategy)
    fn, oracle = getattr(fnp.linalg, name), getattr(np.linalg, name)
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    ulps, atol = 0, 0
    if tolerance is not None:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = oracle(*args, **kwargs)
        ulps, atol = tolerance(args, kwargs, want)
    T.check_against(fn, oracle, *args, ulps=ulps, atol=atol, **kwargs)


def test_matrix_power_negative_uses_the_inverse():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    for n in (-1, -3):
        np.testing.assert_allclose(fnp.linalg.matrix_power(a, n), np.linalg.matrix_power(a, n),
                                   rtol=1e-13)


# ---- clear errors -----------------------------------------------------------------------------------
def test_shape_errors_name_the_shapes():
    # A contraction over dimensions of different sizes is JAX's TypeError.
    with pytest.raises(TypeError, match=r"contracting dimensions .* got \(3,\) and \(4,\)"):
        fnp.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="operand 1 must have ndim at least 1"):
        fnp.matmul(np.ones(2), 3.0)
    with pytest.raises(TypeError, match=r"contracting dimensions .* got \(3,\) and \(2,\)"):
        fnp.dot(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"einsum.*'j'"):
        fnp.einsum("ij,jk", np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        fnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        fnp.linalg.matrix_power(np.ones((2, 3)), 2)


def test_unsupported_dtype_in_products():
    with pytest.raises(TypeError, match="complex256|supported"):
        fnp.matmul(np.ones((2, 2), np.clongdouble), np.ones((2, 2)))


def test_default_norm_is_the_sum_of_squares_reduction_as_in_jax():
    # JAX computes norm(x) as sqrt(sum(x * x)); programs compare it with that expression
    # written out (jaxopt's l2-ball projection at the boundary), so the two agree bitwise
    # (NumPy's dot-based norm differs from it in the last place for this vector)
    x = np.random.RandomState(0).randn(50).astype(np.float32)
    def same(v):
        return fnp.linalg.norm(v) == fnp.sqrt(fnp.sum(v ** 2))

    assert same(x) and ft.jit(same)(x)  # jit's reductions may differ from eager ones
    m = x.reshape(5, 10)
    assert fnp.linalg.norm(m) == fnp.sqrt(fnp.sum(m ** 2))
    np.testing.assert_allclose(fnp.linalg.norm(m), np.linalg.norm(m), rtol=1e-6)
