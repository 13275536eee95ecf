"""Convolution and pooling: lax.conv_general_dilated (and conv, conv_transpose, the shape
helpers) and lax.reduce_window, against direct-loop oracles written from XLA's definitions,
under jit, vmap and derivatives of first and second order.

Tolerances: float64 results are sums of at most a few hundred O(1) products, so they agree
with the oracle to rtol=1e-12 (atol=1e-12 near zero); float32 ones to rtol=atol=2e-5 (a few
ulp per term times the number of terms). Integer results and max/min pooling are exact.
Derivatives use check_grads' precision-dependent defaults (see tests/test_autodiff.py).
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import signal

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.testing import check_grads

rng = np.random.default_rng(0)


def _dilated(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def conv_oracle(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dnums, fg=1, bg=1):
    """XLA's convolution by its definition: one output element at a time."""
    lhs_spec, rhs_spec, out_spec = dnums
    x, w = lhs.transpose(lhs_spec), rhs.transpose(rhs_spec)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    sp, ksp = x.shape[2:], w.shape[2:]
    out_sp = []
    for d in range(len(sp)):
        padded = _dilated(sp[d], lhs_dil[d]) + sum(padding[d])
        window = _dilated(ksp[d], rhs_dil[d])
        out_sp.append(0 if padded < window else (padded - window) // strides[d] + 1)
    acc_dtype = np.int64 if lhs.dtype.kind in "iub" else np.float64
    out = np.zeros((n // bg, o) + tuple(out_sp), acc_dtype)
    for b, f in itertools.product(range(n // bg), range(o)):
        row = (f // (o // bg)) * (n // bg) + b if bg > 1 else b
        first_c = (f // (o // fg)) * i if fg > 1 else 0
        for pos in itertools.product(*map(range, out_sp)):
            total = 0
            for ci, k in itertools.product(range(i), itertools.product(*map(range, ksp))):
                idx = []
                for d in range(len(sp)):
                    p = pos[d] * strides[d] + k[d] * rhs_dil[d] - padding[d][0]
                    if p < 0 or p % lhs_dil[d] or p // lhs_dil[d] >= sp[d]:
                        break
                    idx.append(p // lhs_dil[d])
                else:
                    total += (x[(row, first_c + ci) + tuple(idx)].astype(acc_dtype)
                              * w[(f, ci) + k].astype(acc_dtype))
            out[(b, f) + pos] = total
    return out.transpose(np.argsort(out_spec))


def reduce_window_oracle(x, init, op, window, strides, padding, base_dil, win_dil):
    """XLA's ReduceWindow: padding and base-dilation holes hold ``init``."""
    xs = x.shape
    full = [_dilated(d, b) + lo + hi for d, b, (lo, hi) in zip(xs, base_dil, padding)]
    padded = np.full(full, init, x.dtype)
    for idx in itertools.product(*map(range, xs)):
        at = tuple(i * b + lo for i, b, (lo, _) in zip(idx, base_dil, padding))
        if all(0 <= a < f for a, f in zip(at, full)):  # negative padding crops
            padded[at] = x[idx]
    out_shape = [0 if f < _dilated(w, d) else (f - _dilated(w, d)) // s + 1
                 for f, w, d, s in zip(full, window, win_dil, strides)]
    out = np.empty(out_shape, x.dtype)
    for pos in itertools.product(*map(range, out_shape)):
        acc = x.dtype.type(init)
        for k in itertools.product(*map(range, window)):
            acc = op(acc, padded[tuple(p * s + kk * d for p, s, kk, d in
                                       zip(pos, strides, k, win_dil))])
        out[pos] = acc
    return out


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 2e-5 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---- hypothesis configurations -----------------------------------------------------------------
_SPATIAL = "HWD"


@st.composite
def conv_configs(draw, max_spatial=2):
    ns = draw(st.integers(1, max_spatial))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    g = draw(st.integers(2, 3)) if groups != "none" else 1
    fg, bg = (g, 1) if groups == "feature" else (1, g) if groups == "batch" else (1, 1)
    n = bg * draw(st.integers(1, 2))
    i = draw(st.integers(1, 3))
    c = i * fg
    o = g * draw(st.integers(1, 2))
    sp = [draw(st.integers(1, 6)) for _ in range(ns)]
    ksp = [draw(st.integers(1, 3)) for _ in range(ns)]
    strides = [draw(st.integers(1, 3)) for _ in range(ns)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(ns)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(ns)]
    if all(d == 1 for d in lhs_dil) and draw(st.booleans()):
        padding = draw(st.sampled_from(["SAME", "VALID", "SAME_LOWER"]))
    else:
        padding = []
        for d in range(ns):
            size = _dilated(sp[d], lhs_dil[d])
            lo = draw(st.integers(-min(size, 2), 2))
            hi = draw(st.integers(max(-2, -(size + lo)), 2))
            padding.append((lo, hi))
    letters = list("NC" + _SPATIAL[:ns])
    lhs_s = "".join(draw(st.permutations(letters)))
    out_s = "".join(draw(st.permutations(letters)))
    rhs_s = "".join(draw(st.permutations(list("OI" + _SPATIAL[:ns]))))
    order = [ch for ch in rhs_s if ch in _SPATIAL]  # spatial dim d is the d-th in rhs_s
    shape = lambda spec, sizes: tuple(sizes[ch] for ch in spec)  # noqa: E731
    lhs_shape = shape(lhs_s, {"N": n, "C": c, **dict(zip(order, sp))})
    rhs_shape = shape(rhs_s, {"O": o, "I": i, **dict(zip(order, ksp))})
    return dict(lhs_shape=lhs_shape, rhs_shape=rhs_shape, strides=tuple(strides),
                padding=padding, lhs_dil=tuple(lhs_dil), rhs_dil=tuple(rhs_dil),
                dn=(lhs_s, rhs_s, out_s), fg=fg, bg=bg)


def _conv_fn(cfg):
    def f(x, w):
        return lax.conv_general_dilated(x, w, cfg["strides"], cfg["padding"], cfg["lhs_dil"],
                                        cfg["rhs_dil"], cfg["dn"], feature_group_count=cfg["fg"],
                                        batch_group_count=cfg["bg"])
    return f


def _oracle_for(cfg, x, w):
    dn = lax.conv_dimension_numbers(x.shape, w.shape, cfg["dn"])
    pads = cfg["padding"]
    if isinstance(pads, str):
        lhs_sp = [x.shape[d] for d in dn.lhs_spec[2:]]
        window = [_dilated(w.shape[d], r) for d, r in zip(dn.rhs_spec[2:], cfg["rhs_dil"])]
        pads = lax.padtype_to_pads(lhs_sp, window, cfg["strides"], pads)
    return conv_oracle(x, w, cfg["strides"], pads, cfg["lhs_dil"], cfg["rhs_dil"], dn,
                       cfg["fg"], cfg["bg"])


@settings(max_examples=60, deadline=None)
@given(conv_configs(), st.sampled_from(["float64", "float32", "int32", "int8"]))
def test_conv_matches_the_definition(cfg, dtype):
    x = (rng.standard_normal(cfg["lhs_shape"]) * 3).astype(dtype)
    w = (rng.standard_normal(cfg["rhs_shape"]) * 3).astype(dtype)
    want = _oracle_for(cfg, x, w)
    if np.dtype(dtype).kind == "i":  # XLA wraps integer products and sums
        want = want.astype(dtype)
    assert_close(_conv_fn(cfg)(x, w), want, dtype)


@settings(max_examples=12, deadline=None)
@given(conv_configs(), st.sampled_from(["float64", "float32", "int16"]))
def test_conv_jit_matches_eager(cfg, dtype):
    x = (rng.standard_normal(cfg["lhs_shape"]) * 3).astype(dtype)
    w = (rng.standard_normal(cfg["rhs_shape"]) * 3).astype(dtype)
    f = _conv_fn(cfg)
    assert_close(ft.jit(f)(x, w), np.asarray(f(x, w)), dtype)


@settings(max_examples=10, deadline=None)
@given(conv_configs(max_spatial=1), st.data())
def test_conv_vmap_matches_loop(cfg, data):
    f = _conv_fn(cfg)
    ax_x = data.draw(st.sampled_from([None, 0, len(cfg["lhs_shape"])]))
    ax_w = data.draw(st.sampled_from([0, 1] if ax_x is None else [None, 0, 1]))
    xs = rng.standard_normal((3,) + cfg["lhs_shape"])
    ws = rng.standard_normal((3,) + cfg["rhs_shape"])
    want = np.stack([np.asarray(f(xs[b] if ax_x is not None else xs[0],
                                  ws[b] if ax_w is not None else ws[0])) for b in range(3)])
    args = (xs[0] if ax_x is None else np.moveaxis(xs, 0, ax_x),
            ws[0] if ax_w is None else np.moveaxis(ws, 0, ax_w))
    got = ft.vmap(f, in_axes=(ax_x, ax_w))(*args)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@settings(max_examples=8, deadline=None)
@given(conv_configs(max_spatial=1))
def test_conv_derivatives_match_finite_differences(cfg):
    x = rng.uniform(-1, 1, cfg["lhs_shape"])
    w = rng.uniform(-1, 1, cfg["rhs_shape"])
    check_grads(_conv_fn(cfg), (x, w), order=2)


def test_conv_with_four_spatial_dims_under_jit():
    # more than three spatial dims: the lowering generates the im2col loops itself
    x, w = rng.standard_normal((2, 4, 3, 4, 2, 3)), rng.standard_normal((4, 2, 2, 2, 1, 2))
    dn = lax.conv_dimension_numbers(x.shape, w.shape, None)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 2, 1, 1), [(1, 0), (0, 1), (0, 0), (1, 1)],
                                        (1, 1, 2, 1), (2, 1, 1, 1), feature_group_count=2)
    want = conv_oracle(x, w, (1, 2, 1, 1), [(1, 0), (0, 1), (0, 0), (1, 1)], (1, 1, 2, 1),
                       (2, 1, 1, 1), dn, fg=2)
    assert_close(f(x, w), want, "float64")
    assert_close(ft.jit(f)(x, w), want, "float64")


def test_conv_matches_scipy_correlate():
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    for mode, pad in (("valid", "VALID"), ("full", [(2, 2), (1, 1)])):
        want = np.array([[sum(signal.correlate(x[b, c], w[o, c], mode=mode) for c in range(3))
                          for o in range(4)] for b in range(2)])
        assert_close(lax.conv(x, w, (1, 1), pad) if pad == "VALID" else
               lax.conv_with_general_padding(x, w, (1, 1), pad, None, None), want, "float64")


@pytest.mark.parametrize("name, cfg", [
    ("nhwc_strided", dict(lhs_shape=(2, 5, 4, 3), rhs_shape=(2, 3, 3, 4), strides=(2, 1),
                          padding="SAME", lhs_dil=(1, 1), rhs_dil=(1, 2),
                          dn=("NHWC", "HWIO", "NHWC"), fg=1, bg=1)),
    ("depthwise", dict(lhs_shape=(1, 4, 5, 5), rhs_shape=(4, 1, 3, 3), strides=(1, 1),
                       padding=[(1, 1), (0, 2)], lhs_dil=(2, 1), rhs_dil=(1, 1),
                       dn=("NCHW", "OIHW", "NCHW"), fg=4, bg=1)),
    ("batch_groups", dict(lhs_shape=(4, 2, 5), rhs_shape=(6, 2, 2), strides=(2,),
                          padding=[(-1, 1)], lhs_dil=(1,), rhs_dil=(2,),
                          dn=("NCH", "OIH", "NHC"), fg=1, bg=2)),
])
def test_conv_grads_second_order_and_float32(name, cfg):
    f = _conv_fn(cfg)
    x, w = rng.uniform(-1, 1, cfg["lhs_shape"]), rng.uniform(-1, 1, cfg["rhs_shape"])
    check_grads(f, (x, w), order=2)
    check_grads(f, (x.astype("float32"), w.astype("float32")), order=1)
    # grad of grad: a Hessian-vector product through the transposed convolutions, and jit
    loss = lambda x, w: fnp.sum(fnp.tanh(f(x, w)) ** 2)  # noqa: E731
    hvp = lambda x, w: ft.grad(lambda v: fnp.vdot(ft.grad(loss)(v, w), x))(x)  # noqa: E731
    np.testing.assert_allclose(ft.jit(hvp)(x, w), hvp(x, w), rtol=1e-10, atol=1e-12)
    check_grads(lambda x: ft.grad(loss)(x, w), (x,), order=1)


def test_preferred_element_type_accumulates_wider():
    x = np.full((1, 1, 4), 100, np.int8)
    w = np.full((1, 1, 3), 100, np.int8)
    want = np.full((1, 1, 2), 30000, np.int32)
    conv = lambda a, b: lax.conv_general_dilated(  # noqa: E731
        a, b, (1,), "VALID", preferred_element_type="int32")
    for fn in (conv, ft.jit(conv)):
        got = fn(x, w)
        assert np.asarray(got).dtype == np.int32
        np.testing.assert_array_equal(got, want)
    y = lax.conv(x.astype("float32"), w.astype("float32"), (1,), "VALID", precision="highest")
    assert y.dtype == np.float32


def test_conv_transpose_is_the_gradient_of_conv():
    x = rng.standard_normal((2, 7, 3))  # NHC
    k = rng.standard_normal((3, 3, 4))  # HIO
    for strides, padding in (((2,), "VALID"), ((1,), "SAME"), ((2,), "SAME")):
        fwd = lambda v: lax.conv_general_dilated(  # noqa: E731
            v, k, strides, padding, dimension_numbers=("NHC", "HIO", "NHC"))
        y, vjp = ft.vjp(fwd, x)
        g = rng.standard_normal(y.shape)
        want = vjp(g)[0]
        got = lax.conv_transpose(g, k, strides, padding, transpose_kernel=True)
        if got.shape == want.shape:  # conv_transpose's output may be longer by stride - 1
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        else:
            assert got.shape[1] - want.shape[1] < strides[0]
        # the shape helper takes the kernel as conv_transpose uses it (I and O swapped here)
        assert lax.conv_transpose_shape_tuple(g.shape, k.swapaxes(1, 2).shape, strides,
                                              padding, ("NHC", "HIO", "NHC")) == got.shape


def test_conv_transpose_matches_dilated_conv_oracle():
    x, k = rng.standard_normal((1, 3, 4, 2)), rng.standard_normal((2, 3, 2, 5))  # NHWC, HWIO
    got = lax.conv_transpose(x, k, (2, 3), "SAME")
    dn = lax.conv_dimension_numbers(x.shape, k.shape, ("NHWC", "HWIO", "NHWC"))
    # SAME: the padding of the forward conv, i.e. (k + s - 2) split with the bigger half first
    # when s <= k - 1 (JAX's _conv_transpose_padding).
    want = conv_oracle(x, k, (1, 1), [(1, 1), (2, 2)], (2, 3), (1, 1), dn)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    explicit = lax.conv_transpose(x, k, (2, 3), [(0, 1), (1, 0)])
    np.testing.assert_allclose(explicit, conv_oracle(x, k, (1, 1), [(0, 1), (1, 0)], (2, 3),
                                                     (1, 1), dn), rtol=1e-12)
    flipped = lax.conv_transpose(x, k[::-1, ::-1].swapaxes(2, 3).copy(), (2, 3), "VALID",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                 transpose_kernel=True)
    np.testing.assert_allclose(flipped, lax.conv_transpose(x, k, (2, 3), "VALID"), rtol=1e-12)


def test_shape_helpers():
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 3), "SAME") == [(1, 1), (0, 0)]
    assert lax.padtype_to_pads((4,), (3,), (1,), "SAME_LOWER") == [(1, 1)]
    assert lax.padtype_to_pads((4,), (2,), (1,), "SAME_LOWER") == [(1, 0)]
    assert lax.padtype_to_pads((4,), (2,), (1,), "same") == [(0, 1)]
    assert lax.padtype_to_pads((4, 3), (2, 2), (1, 1), "VALID") == [(0, 0), (0, 0)]
    for cfg in ((2, 9, 8, 3), (3, 3, 3, 5), (1, 1), "SAME"), ((1, 4, 4, 2), (2, 2, 2, 1),
                                                                (2, 2), "VALID"):
        lhs, rhs, strides, pad = cfg
        dn = ("NHWC", "HWIO", "NHWC")
        want = lax.conv_general_dilated(np.zeros(lhs), np.zeros(rhs), strides, pad,
                                        dimension_numbers=dn).shape
        assert lax.conv_general_shape_tuple(lhs, rhs, strides, pad, dn) == want
    assert lax.conv_shape_tuple((2, 3, 8, 8), (4, 3, 3, 3), (2, 2), [(1, 1), (1, 1)]) == \
        (2, 4, 4, 4)
    dn = lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), ("NCHW", "OIHW", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ((0, 1, 2),) * 3
    # spatial dims follow the kernel's order
    assert lax.conv_general_permutations(("NCWH", "OIHW", "NHWC")) == \
        ((0, 1, 3, 2), (0, 1, 2, 3), (0, 3, 1, 2))


def test_conv_errors_name_the_problem():
    x, w = np.ones((1, 4, 5, 5)), np.ones((2, 2, 3, 3))
    conv = lax.conv_general_dilated
    with pytest.raises(TypeError, match="same set of spatial characters"):
        conv(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHX"))
    with pytest.raises(TypeError, match="characters 'O' and 'I' exactly once"):
        conv(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OOHW", "NCHW"))
    with pytest.raises(TypeError, match="must have len equal to the ndim"):
        conv(x, w, (1, 1), "SAME", dimension_numbers=("NCH", "OIH", "NCH"))
    with pytest.raises(TypeError, match="must be length 3"):
        conv(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW"))
    with pytest.raises(ValueError, match=r"lhs feature dimension \(size 4\).*rhs input feature "
                       r"dimension \(size 2\)"):
        conv(x, w, (1, 1), "SAME")
    with pytest.raises(ValueError, match="output feature dimension .*multiple of "
                       "feature_group_count=2"):
        conv(x, np.ones((3, 2, 3, 3)), (1, 1), "SAME", feature_group_count=2)
    with pytest.raises(ValueError, match="batch_group_count=2 must divide the lhs batch"):
        conv(np.ones((3, 2, 4)), np.ones((2, 2, 1)), (1,), "VALID", batch_group_count=2)
    with pytest.raises(ValueError, match="at most one of feature_group_count"):
        conv(np.ones((2, 2, 4)), np.ones((2, 1, 1)), (1,), "VALID", feature_group_count=2,
             batch_group_count=2)
    with pytest.raises(RuntimeError, match="Unrecognized padding type.*'FULL'|FULL"):
        conv(x, np.ones((2, 4, 3, 3)), (1, 1), "FULL")
    with pytest.raises(ValueError, match="padding needs one entry per spatial dimension"):
        conv(x, np.ones((2, 4, 3, 3)), (1, 1), [(1, 1)])
    with pytest.raises(ValueError, match="should be a string or a sequence of"):
        conv(x, np.ones((2, 4, 3, 3)), (1, 1), [1, 1])
    with pytest.raises(ValueError, match="window_strides needs one entry"):
        conv(x, np.ones((2, 4, 3, 3)), (1,), "SAME")
    with pytest.raises(ValueError, match="window_strides must be positive"):
        conv(x, np.ones((2, 4, 3, 3)), (0, 1), "VALID")
    with pytest.raises(ValueError, match="negative padding .* larger than spatial dimension 0"):
        conv(x, np.ones((2, 4, 3, 3)), (1, 1), [(-3, -3), (0, 0)])
    with pytest.raises(ValueError, match="String padding is not implemented for transposed"):
        conv(x, np.ones((2, 4, 3, 3)), (1, 1), "SAME", lhs_dilation=(2, 2))
    with pytest.raises(TypeError, match="lhs and rhs ndim to be equal, got 4 and 3"):
        conv(x, np.ones((2, 4, 3)), (1, 1), "SAME")
    with pytest.raises(TypeError, match="same dtype"):
        conv(x.astype("float32"), np.ones((2, 4, 3, 3)), (1, 1), "SAME")
    with pytest.raises(ValueError, match="lhs feature dimension"):  # at the jit call too
        ft.jit(lambda a, b: conv(a, b, (1, 1), "SAME"))(x, w)


# ---- reduce_window ---------------------------------------------------------------------------
@st.composite
def window_configs(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    window = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    base = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    wdil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    padding = []
    for d, b in zip(shape, base):
        size = _dilated(d, b)
        lo = draw(st.integers(-min(size, 2), 2))
        padding.append((lo, draw(st.integers(max(-2, -(size + lo)), 2))))
    return dict(shape=shape, window=window, strides=strides, padding=tuple(padding),
                base=base, wdil=wdil)


_REDUCERS = {  # name -> (lax computation, NumPy op, init value)
    "sum": (lax.add, np.add, 0), "max": (lax.max, np.fmax, -np.inf),
    "min": (lax.min, np.fmin, np.inf), "prod": (lax.mul, np.multiply, 1),
    "sum_from_one": (lax.add, np.add, 1),  # not the identity: the general fold, pads hold 1
}


def _pool(cfg, name):
    comp, _, init = _REDUCERS[name]

    def f(x):
        return lax.reduce_window(x, init, comp, cfg["window"], cfg["strides"], cfg["padding"],
                                 cfg["base"], cfg["wdil"])
    return f


@settings(max_examples=60, deadline=None)
@given(window_configs(), st.sampled_from(sorted(_REDUCERS)),
       st.sampled_from(["float64", "float32", "int32"]))
def test_reduce_window_matches_the_definition(cfg, name, dtype):
    _, op, init = _REDUCERS[name]
    x = rng.integers(-3, 4, cfg["shape"]).astype(dtype)
    if dtype == "int32" and name in ("max", "min"):
        init = np.iinfo(np.int32).min if name == "max" else np.iinfo(np.int32).max
    want = reduce_window_oracle(x, init, op, cfg["window"], cfg["strides"], cfg["padding"],
                                cfg["base"], cfg["wdil"])
    got = lax.reduce_window(x, np.asarray(init, dtype), _REDUCERS[name][0], cfg["window"],
                            cfg["strides"], cfg["padding"], cfg["base"], cfg["wdil"])
    assert_close(got, want, dtype)


@settings(max_examples=10, deadline=None)
@given(window_configs(), st.sampled_from(["sum", "max", "min"]),
       st.sampled_from(["float64", "float32"]))
def test_pooling_jit_matches_eager_with_derivatives(cfg, name, dtype):
    x = rng.permutation(np.prod(cfg["shape"])).reshape(cfg["shape"]).astype(dtype) * 0.5
    pool = _pool(cfg, name)

    def f(x, t):
        y, ty = ft.jvp(pool, (x,), (t,))
        g = ft.grad(lambda v: fnp.sum(pool(v) ** 2))(x)
        return y, ty, g
    t = rng.standard_normal(cfg["shape"]).astype(dtype)
    for got, want in zip(ft.jit(f)(x, t), f(x, t)):
        assert_close(got, np.asarray(want), dtype)


@settings(max_examples=10, deadline=None)
@given(window_configs(), st.sampled_from(["sum", "max", "min"]))
def test_pooling_derivatives_match_finite_differences(cfg, name):
    x = rng.permutation(np.prod(cfg["shape"])).reshape(cfg["shape"]) * 0.37 + 0.1
    pool = _pool(cfg, name)
    # windows of padding alone give -inf/inf (no derivative): clipped to finite constants
    check_grads(lambda v: fnp.clip(pool(v), -1e3, 1e3), (x,), order=2)


@settings(max_examples=10, deadline=None)
@given(window_configs(), st.sampled_from(["sum", "max", "prod"]), st.data())
def test_pooling_vmap_matches_loop(cfg, name, data):
    ax = data.draw(st.integers(0, len(cfg["shape"])))
    xs = rng.standard_normal((3,) + cfg["shape"])
    f = _pool(cfg, name)
    g = ft.grad(lambda v: fnp.sum(f(v) ** 2))
    want = np.stack([np.asarray(g(xs[b])) for b in range(3)], ax)
    got = ft.vmap(g, in_axes=ax, out_axes=ax)(np.moveaxis(xs, 0, ax))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_max_pool_ties_and_nan_follow_the_first_selected_element():
    x = np.ones((4,))
    pool = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (2,), "VALID")  # noqa: E731
    g = ft.grad(lambda v: fnp.sum(pool(v)))
    np.testing.assert_array_equal(g(x), [1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(ft.jit(g)(x), [1.0, 0.0, 1.0, 0.0])
    y = np.array([1.0, np.nan, 2.0, 3.0])
    for fn in (pool, ft.jit(pool)):
        np.testing.assert_array_equal(fn(y), [np.nan, 3.0])
    for fn in (g, ft.jit(g)):
        np.testing.assert_array_equal(fn(y), [0.0, 1.0, 0.0, 1.0])
    # windows [pad, pad], [pad, pad], [pad, x0], [x0, x1]: padding alone gives -inf with no
    # gradient; the tie x0 == x1 sends the last window's cotangent to x0 as well
    edge = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (1,), [(3, 0)])  # noqa: E731
    np.testing.assert_array_equal(edge(np.ones(2)), [-np.inf, -np.inf, 1.0, 1.0])
    for fn in (ft.grad(lambda v: fnp.sum(edge(v)[2:] * 1.0)), ft.jit(ft.grad(
            lambda v: fnp.sum(edge(v)[2:])))):
        np.testing.assert_array_equal(fn(np.ones(2)), [2.0, 0.0])
    np.testing.assert_array_equal(ft.grad(lambda v: fnp.sum(edge(v)[:2] * 0.0 + 1.0))(
        np.ones(2)), [0.0, 0.0])


def test_reduce_window_general_function_and_pytrees():
    x = np.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0]])
    # a general binary function (not a monoid JAX recognizes): the fold handles it
    f = lambda a, b: a * 0.5 + b  # noqa: E731
    got = lax.reduce_window(x, 0.0, f, (1, 2), (1, 1), "VALID")
    np.testing.assert_allclose(got, reduce_window_oracle(x, 0.0, f, (1, 2), (1, 1),
                                                         ((0, 0), (0, 0)), (1, 1), (1, 1)))
    np.testing.assert_allclose(ft.jit(lambda v: lax.reduce_window(v, 0.0, f, (1, 2), (1, 1),
                                                                   "VALID"))(x), got)
    # argmax pooling over a (value, index) pair of operands
    idx = np.arange(x.size, dtype=np.float64).reshape(x.shape)

    def pick(a, b):
        take_b = b[0] > a[0]
        return (fnp.where(take_b, b[0], a[0]), fnp.where(take_b, b[1], a[1]))
    vals, where = lax.reduce_window((x, idx), (-np.inf, -1.0), pick, (2, 2), (1, 2), "VALID")
    np.testing.assert_array_equal(vals, [[9.0, 6.0]])
    np.testing.assert_array_equal(where, [[5.0, 7.0]])
    # the fold differentiates like any composition
    check_grads(lambda v: lax.reduce_window(v, 1.0, lax.mul, (2, 1), (1, 1), "SAME"), (x,),
                order=2)


def test_reduce_window_primitive_choice_follows_jax():
    x = np.ones((4,))
    prims = lambda f: {e.prim.name for e in ft.make_jaxpr(f)(x).eqns}  # noqa: E731
    assert prims(lambda v: lax.reduce_window(v, 0.0, lax.add, (2,), (1,), "VALID")) == \
        {"reduce_window_sum"}
    assert prims(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (1,), "VALID")) == \
        {"reduce_window_max"}
    assert prims(lambda v: lax.reduce_window(v, np.inf, lax.min, (2,), (1,), "VALID")) == \
        {"reduce_window_min"}
    # a non-identity init value is XLA's semantics (pads hold init), not a monoid
    assert "reduce_window_max" not in prims(
        lambda v: lax.reduce_window(v, 0.0, lax.max, (2,), (1,), "VALID"))
    np.testing.assert_array_equal(
        lax.reduce_window(-x, 0.0, lax.max, (2,), (1,), [(1, 0)]), [0.0, 0.0, 0.0, 0.0])


def test_reduce_window_errors_name_the_problem():
    x = np.ones((3, 4))
    rw = lax.reduce_window
    with pytest.raises(ValueError, match=r"window_dimensions needs one entry per operand "
                       r"dimension \(2\)"):
        rw(x, 0.0, lax.add, (2,), (1, 1), "VALID")
    with pytest.raises(ValueError, match="window_strides must be positive"):
        rw(x, 0.0, lax.add, (2, 2), (0, 1), "VALID")
    with pytest.raises(ValueError, match="negative padding .* larger than dimension 1"):
        rw(x, 0.0, lax.add, (1, 1), (1, 1), [(0, 0), (-3, -2)])
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        rw(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match="padding should be a string or a sequence"):
        rw(x, 0.0, lax.add, (2, 2), (1, 1), [0, 0])
    with pytest.raises(TypeError, match="window_dimensions must be a sequence of integers"):
        rw(x, 0.0, lax.add, (2.5, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="same structure"):
        rw((x, x), 0.0, lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="operands must have the same shape"):
        rw((x, x[:2]), (0.0, 0.0), lambda a, b: a, (2, 2), (1, 1), "VALID")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding", ["SAME", "VALID", ((2, 0), (1, 3))])
@pytest.mark.parametrize("features", [1, 5])
def test_nhwc_kernel_gradient_under_jit_matches_eager(dtype, padding, features):
    # The kernel's cotangent of an NHWC/HWIO convolution is lowered as the forward im2col of
    # the input times the output cotangent (window_ops._conv_as_weight_gradient): the
    # un-jitted gradient (NumPy's evaluation of the same transposed convolution) is the
    # oracle. Tolerance: sums of 3*3*features*batch products in different orders, a few
    # ulps of the result's magnitude.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9, 8, features)).astype(dtype)
    w = rng.standard_normal((3, 2, features, 4)).astype(dtype)
    ct = rng.standard_normal(lax.conv_general_dilated(
        x, w, (1, 1), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")).shape).astype(dtype)

    def f(w, x):
        y = lax.conv_general_dilated(x, w, (1, 1), padding,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return fnp.sum(y * ct)

    got = ft.jit(ft.grad(f))(w, x)
    want = ft.grad(f)(w, x)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding", ["SAME", "VALID", ((0, 2), (3, 1))])
@pytest.mark.parametrize("dn", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")])
def test_fewer_output_than_input_features_under_jit_matches_eager(dtype, padding, dn):
    # Lowered products first (window_ops._conv_products_first: every input pixel times each
    # kernel offset's matrix, then each output sums its window's products), as is an NHWC
    # convolution's input gradient, also checked. The oracle is the un-jitted NumPy
    # evaluation; tolerance: sums of 3*2*6 products in other orders.
    rng = np.random.default_rng(3)
    lhs_shape = (2, 7, 6, 6) if dn[0] == "NHWC" else (2, 6, 7, 6)
    rhs_shape = (3, 2, 6, 4) if dn[1] == "HWIO" else (4, 6, 3, 2)
    x = rng.standard_normal(lhs_shape).astype(dtype)
    w = rng.standard_normal(rhs_shape).astype(dtype)
    conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), padding,  # noqa: E731
                                                 dimension_numbers=dn)
    tol = 1e-5 if dtype == "float32" else 1e-12
    want = conv(x, w)
    np.testing.assert_allclose(ft.jit(conv)(x, w), want, rtol=tol,
                               atol=tol * np.abs(want).max())
    ct = rng.standard_normal(want.shape).astype(dtype)
    dx = lambda x, w: ft.grad(lambda x: fnp.sum(conv(x, w) * ct))(x)  # noqa: E731
    want = dx(x, w)
    np.testing.assert_allclose(ft.jit(dx)(x, w), want, rtol=tol, atol=tol * np.abs(want).max())
