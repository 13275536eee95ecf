"""vmap against Python loops for every primitive family, over every mappable axis of every
argument (hypothesis picks the axes), plus in_axes/out_axes handling and errors.

Values compare exactly (assert_array_equal) except where batching reorders floating-point
sums (dot_general, reductions): there the tolerance is rtol=1e-12 for float64 inputs.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

from primitive_coverage import assert_every_primitive_covered, primitives_in

B = 3
rng = np.random.default_rng(0)


def R(*shape):
    return rng.standard_normal(shape)


def I(hi, *shape):  # noqa: E743
    return rng.integers(0, hi, shape)


# name -> (function, example args WITHOUT the batch axis)
CASES = {
    "sin": (fnp.sin, (R(2, 3),)),
    "add_scalar": (lambda x, s: x + s, (R(2, 3), R())),
    "mul": (lambda x, y: x * y, (R(2, 3), R(2, 3))),
    "where": (lambda c, x, y: fnp.where(c > 0, x, y), (R(3), R(3), R(3))),
    "convert": (lambda x: x.astype("float32"), (R(3),)),
    "integer_pow": (lambda x: x ** 3, (R(3),)),
    "compare_int": (lambda x, y: (x < y).astype("int32") + x, (I(5, 3), I(5, 3))),
    "broadcast": (lambda x: fnp.broadcast_to(x, (4, 3)), (R(3),)),
    "reshape": (lambda x: x.reshape(3, 2).T, (R(6),)),
    "squeeze_expand": (lambda x: fnp.expand_dims(fnp.squeeze(x, 0), 1), (R(1, 3),)),
    "concatenate": (lambda x, y: fnp.concatenate([x, y, x], axis=0), (R(2, 3), R(1, 3))),
    "pad": (lambda x, v: lax.pad(x, v, [(1, -1, 1), (0, 2, 0)]), (R(3, 2), R())),
    "slice": (lambda x: x[1::2, ::-1], (R(5, 3),)),
    "rev": (lambda x: lax.rev(x, (0,)), (R(3, 2),)),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 2)), (R(4, 3), I(4))),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)),
                             (R(4, 3), R(2, 2), I(4))),
    "getitem_scalar": (lambda x, i: x[i], (R(4, 3), I(4))),
    "gather": (lambda x, idx: x[idx, 1:], (R(4, 3), I(4, 5))),
    "gather_2d": (lambda x, i, j: x[i, j], (R(4, 3), I(4, 2), I(3, 2))),
    "take_along": (lambda x, idx: fnp.take_along_axis(x, idx, axis=1), (R(2, 4), I(4, 2, 3))),
    "scatter_set": (lambda x, idx, u: x.at[idx].set(u), (R(5), I(5, 3), R(3))),
    "scatter_add": (lambda x, idx, u: x.at[idx].add(u), (R(5, 2), I(5, 4), R(4, 2))),
    "scatter_mul": (lambda x, idx, u: x.at[idx].multiply(u), (R(5), I(5, 3), R(3))),
    "scatter_max": (lambda x, idx, u: x.at[idx].max(u), (R(5), I(5, 3), R(3))),
    "sum": (lambda x: fnp.sum(x, axis=1), (R(2, 3),)),
    "max": (lambda x: fnp.max(x, axis=0), (R(2, 3),)),
    "prod": (lambda x: fnp.prod(x), (R(2, 3),)),
    "all": (lambda x: fnp.all(x > 0, axis=1), (R(2, 3),)),
    "argmax": (lambda x: fnp.argmax(x, axis=1), (R(2, 3),)),
    "cumsum": (lambda x: fnp.cumsum(x, axis=0), (R(3, 2),)),
    "cummax": (lambda x: lax.cummax(x, 1, reverse=True), (R(3, 2),)),
    "dot": (lambda a, b: a @ b, (R(2, 3), R(3, 4))),
    "dot_vec": (lambda a, b: fnp.dot(a, b), (R(3), R(3, 2))),
    "einsum": (lambda a, b: fnp.einsum("ij,jk->ki", a, b), (R(2, 3), R(3, 2))),
    "conv": (lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 0), (0, 1)], (1, 2), (1, 1),
                                                   ("NHWC", "HWIO", "NCHW")),
             (R(2, 4, 3, 2), R(2, 2, 2, 3))),
    "conv_feature_groups": (lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME",
                                                                  feature_group_count=2),
                            (R(1, 4, 4), R(4, 2, 2))),
    "conv_batch_groups": (lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID",
                                                                batch_group_count=2),
                          (R(4, 2, 3), R(4, 2, 2))),
    "avg_pool": (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 2), "SAME") / 4,
                 (R(3, 4),)),
    "max_pool": (lambda x: lax.reduce_window(x, -fnp.inf, lax.max, (2, 1), (2, 1), "VALID"),
                 (R(4, 3),)),
    "min_pool": (lambda x: lax.reduce_window(x, fnp.inf, lax.min, (2,), (1,), [(1, 1)]),
                 (R(4),)),
    "max_pool_jvp": (lambda x, t: ft.jvp(lambda v: lax.reduce_window(
        v, -fnp.inf, lax.max, (2, 2), (1, 1), "SAME"), (x,), (t,))[1], (R(3, 3), R(3, 3))),
    "max_pool_grad": (ft.grad(lambda x: fnp.sum(lax.reduce_window(
        x, -fnp.inf, lax.max, (2, 2), (1, 1), "SAME") ** 2)), (R(3, 3),)),
    "sort": (lambda x: fnp.sort(x, axis=0), (R(4, 2),)),
    "argsort": (lambda x: fnp.argsort(x), (R(4),)),
    "sort_kv": (lambda k, v: lax.sort_key_val(k, v), (R(4), R(4))),
    "iota_in_body": (lambda x: x + fnp.arange(3.0), (R(3),)),
    "softmax": (ft.nn.softmax, (R(2, 3),)),
    "logsumexp": (lambda x: ft.scipy.special.logsumexp(x, axis=0), (R(3, 2),)),
    "cholesky": (lambda x: lax.linalg.cholesky(x @ x.T + 3 * fnp.eye(3)), (R(3, 3),)),
    "triangular_solve": (lambda a, b: lax.linalg.triangular_solve(
        a + 4 * fnp.eye(3), b, left_side=True, lower=True), (R(3, 3), R(3, 2))),
    "lu": (lambda x: lax.linalg.lu(x), (R(3, 3),)),
    "qr": (lambda x: lax.linalg.qr(x), (R(3, 2),)),
    "eigh": (lambda x: lax.linalg.eigh(x), (R(3, 3),)),
    "svd": (lambda x: lax.linalg.svd(x), (R(2, 3),)),
    # Its own generator: drawing from R's would move every later table input.
    "eig": (lambda x: tuple(lax.linalg.eig(x)), (np.random.default_rng(9).normal(size=(3, 3)),)),
    "tridiagonal_solve": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d + 4.0, du, b),
                          tuple(np.random.default_rng(10).normal(size=s)
                                for s in ((3,), (3,), (3,), (3, 2)))),
}



def _elementwise_cases():
    """One case per elementwise primitive, operands mapped into its domain first."""
    pos = lambda x: fnp.abs(x) + 0.5  # noqa: E731
    unit = lambda x: fnp.tanh(x) * 0.9  # noqa: E731
    domain = {"log": pos, "log1p": pos, "sqrt": pos, "rsqrt": pos, "lgamma": pos,
              "digamma": pos, "acosh": lambda x: fnp.abs(x) + 1.0, "asin": unit, "acos": unit,
              "atanh": unit, "erf_inv": unit}
    unary = ["neg", "abs", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log",
             "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "square",
             "erf", "erfc", "erf_inv", "lgamma", "digamma"]
    cases = {f"ew_{n}": (lambda x, fn=getattr(lax, n), d=domain.get(n, lambda v: v): fn(d(x)),
                         (R(2, 3),)) for n in unary}
    binary = ["sub", "div", "max", "min", "atan2", "nextafter", "eq", "ne", "lt", "le", "gt",
              "ge"]
    cases.update({f"ew_{n}": (getattr(lax, n), (R(2, 3), R(2, 3))) for n in binary})
    cases.update({
        "ew_rem": (lambda x, y: lax.rem(x, pos(y)), (R(2, 3), R(2, 3))),
        "ew_pow": (lambda x, y: lax.pow(pos(x), y), (R(2, 3), R(2, 3))),
        "ew_polygamma": (lambda x: lax.polygamma(fnp.ones_like(x), pos(x)), (R(2, 3),)),
        "ew_zeta": (lambda s, q: lax.zeta(pos(s) + 1.5, pos(q)), (R(2, 3), R(2, 3))),
        "ew_fma": (lax.fma, (R(2, 3), R(2, 3), R(2, 3))),
        "ew_bitwise": (lambda a, b: (a & b) ^ (a | ~b), (I(100, 4), I(100, 4))),
        "ew_shifts": (lambda a, n: lax.shift_left(a, n) + lax.shift_right_logical(a, n)
                      - lax.shift_right_arithmetic(-a, n), (I(1000, 4), I(8, 4))),
        "ew_population_count": (lax.population_count, (I(1 << 40, 4),)),
        "ew_bitcast": (lambda x: lax.bitcast_convert_type(x, "int64"), (R(3),)),
        "reduce_min": (lambda x: fnp.min(x, axis=1), (R(2, 3),)),
        "reduce_or": (lambda x: fnp.any(x > 1, axis=0), (R(2, 3),)),
        "argmin": (lambda x: fnp.argmin(x, axis=0), (R(2, 3),)),
        "cumprod": (lambda x: fnp.cumprod(x, axis=1), (R(3, 2),)),
        "complex_parts": (lambda x, y: fnp.real(fnp.exp(lax.complex(x, y)) * lax.conj(
            lax.complex(y, x))) + fnp.imag(lax.complex(x, y) ** 2), (R(2, 3), R(2, 3))),
        "complex_matmul": (lambda a, b: lax.complex(a, b.T) @ lax.complex(b, a.T),
                           (R(2, 3), R(3, 2))),
        "fft": (lambda x: (fnp.fft.ifftn(fnp.fft.rfft(x, axis=0)), fnp.fft.irfft(x * 1j, n=5)),
                (R(4, 3),)),
        "cummin": (lambda x: lax.cummin(x, 0), (R(3, 2),)),
        "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 1, reverse=True), (R(3, 2),)),
        "scatter_min": (lambda x, idx, u: x.at[idx].min(u), (R(5), I(5, 3), R(3))),
        "grad_fan_in": (ft.grad(lambda x: fnp.sum(x * fnp.sin(x))), (R(3),)),
    })
    return cases


CASES.update(_elementwise_cases())


def _loop(f, args, in_axes, size, out_axis=0):
    outs = []
    for b in range(size):
        sl = [a if ax is None else fnp.asarray(np.take(a, b, axis=ax))
              for a, ax in zip(args, in_axes)]
        outs.append(f(*sl))
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs], out_axis)
                     for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs], out_axis)


def _insert_batch(arg, ax):
    """Stack B random variants of ``arg`` along ``ax`` (integers stay in range)."""
    a = np.asarray(arg)
    if a.dtype.kind in "iu":
        hi = max(int(a.max()) + 1, 1)
        variants = [rng.integers(0, hi, a.shape) for _ in range(B)]
    else:
        variants = [rng.standard_normal(a.shape) for _ in range(B)]
    return np.stack(variants, ax)


def _assert_close(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _assert_close(g, w)
        return
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_vmap_matches_loop(name, data):
    f, args = CASES[name]
    in_axes = []
    for a in args:
        nd = np.ndim(a)
        in_axes.append(data.draw(st.sampled_from([None] + list(range(-nd - 1, nd + 1)))))
    if all(ax is None for ax in in_axes):
        in_axes[0] = 0
    # functrans arrays (a NumPy array indexed by a tracer would be NumPy's business)
    batched = [fnp.asarray(a if ax is None else _insert_batch(a, ax))
               for a, ax in zip(args, in_axes)]
    norm_axes = [None if ax is None else ax % (np.ndim(a) + 1) for a, ax in zip(args, in_axes)]
    want = _loop(f, batched, norm_axes, B)
    _assert_close(ft.vmap(f, in_axes=tuple(in_axes))(*batched), want)
    jaxpr = ft.make_jaxpr(ft.vmap(f, in_axes=tuple(in_axes)))(*batched)
    ft.check_jaxpr(jaxpr)


@pytest.mark.parametrize("name", ["sin", "dot", "gather", "scatter_add", "sort", "dynamic_slice"])
def test_nested_vmap_matches_double_loop(name):
    f, args = CASES[name]
    xs = [_insert_batch(_insert_batch(a, 0), 0) for a in args]  # (B, B, ...)
    got = ft.vmap(ft.vmap(f))(*xs)
    want = np.stack([_loop(f, [x[i] for x in xs], [0] * len(xs), B) for i in range(B)])
    _assert_close(got, want)
    # The outer vmap maps the second batch axis: the result comes out with (j, i) order.
    got_t = ft.vmap(ft.vmap(f), in_axes=1)(*xs)
    want_t = np.stack([_loop(f, [x[:, j] for x in xs], [0] * len(xs), B) for j in range(B)])
    _assert_close(got_t, want_t)


def test_per_example_gradients_match_loop():
    def loss(w, x, y):
        return fnp.sum((fnp.tanh(x @ w) - y) ** 2)

    w, xs, ys = R(3, 2), R(5, 3), R(5, 2)
    per_example = ft.vmap(ft.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([np.asarray(ft.grad(loss)(w, x, y)) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(per_example, want, rtol=1e-12)
    total = ft.grad(lambda w: fnp.sum(ft.vmap(loss, (None, 0, 0))(w, xs, ys)))(w)
    np.testing.assert_allclose(total, want.sum(0), rtol=1e-12)


def test_vmap_of_jvp_and_jit():
    f = lambda x: fnp.sin(x) * fnp.cumsum(x)  # noqa: E731
    xs, vs = R(4, 3), R(4, 3)
    got = ft.vmap(lambda x, v: ft.jvp(f, (x,), (v,))[1])(xs, vs)
    want = np.stack([np.asarray(ft.jvp(f, (x,), (v,))[1]) for x, v in zip(xs, vs)])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(ft.vmap(ft.jit(f))(xs), ft.jit(ft.vmap(f))(xs), rtol=1e-13)


def test_in_axes_pytrees_and_out_axes():
    def f(p, x):
        return {"y": p["w"] * x + p["b"], "b": p["b"]}

    p = {"w": R(3), "b": R()}
    xs = R(4, 3)
    out = ft.vmap(f, in_axes=({"w": None, "b": None}, 0), out_axes={"y": 1, "b": None})(p, xs)
    np.testing.assert_allclose(out["y"], (np.asarray(p["w"]) * xs + p["b"]).T)
    np.testing.assert_allclose(out["b"], p["b"])
    # unmapped outputs are broadcast when out_axes asks for a batch axis
    out2 = ft.vmap(lambda x: 2.0, in_axes=0, out_axes=0)(xs)
    np.testing.assert_array_equal(out2, np.full(4, 2.0))
    # no mapped input: axis_size gives the batch
    out3 = ft.vmap(lambda: fnp.ones(2), in_axes=(), axis_size=3)()
    assert out3.shape == (3, 2)
    # negative axes and kwargs (always mapped along 0)
    out4 = ft.vmap(lambda x, y=None: x + y, in_axes=-1)(R(3, 4), y=R(4, 3))
    assert out4.shape == (4, 3)


def test_collectives_match_numpy():
    x = R(4, 3)
    name = "i"

    def run(f):
        return np.asarray(ft.vmap(f, axis_name=name)(x))

    np.testing.assert_allclose(run(lambda v: lax.psum(v, name)), np.tile(x.sum(0), (4, 1)))
    np.testing.assert_allclose(run(lambda v: lax.pmean(v, name)), np.tile(x.mean(0), (4, 1)))
    np.testing.assert_array_equal(run(lambda v: lax.pmax(v, name)), np.tile(x.max(0), (4, 1)))
    np.testing.assert_array_equal(run(lambda v: lax.pmin(v, name)), np.tile(x.min(0), (4, 1)))
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, name)),
                                  np.tile(x[None], (4, 1, 1)))
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, name, axis=1)),
                                  np.tile(x.T[None], (4, 1, 1)))
    np.testing.assert_array_equal(run(lambda v: v * 0 + lax.axis_index(name)),
                                  np.repeat(np.arange(4.0)[:, None], 3, 1))
    shift = [(k, (k + 1) % 4) for k in range(4)]
    np.testing.assert_array_equal(run(lambda v: lax.ppermute(v, name, shift)), np.roll(x, 1, 0))
    partial = [(0, 2), (1, 0)]
    want = np.zeros_like(x)
    want[2], want[0] = x[0], x[1]
    np.testing.assert_array_equal(run(lambda v: lax.ppermute(v, name, partial)), want)
    y = R(4, 4, 2)  # member j sends y[j][k] to member k
    got = np.asarray(ft.vmap(lambda v: lax.all_to_all(v, name, 0, 0), axis_name=name)(y))
    np.testing.assert_array_equal(got, np.swapaxes(y, 0, 1))
    got_s = np.asarray(ft.vmap(lambda v: lax.psum_scatter(v, name), axis_name=name)(y))
    np.testing.assert_allclose(got_s, y.sum(0))
    # nested named axes: psum over the outer axis from the inner function
    z = R(2, 3)
    got_n = ft.vmap(ft.vmap(lambda v: lax.psum(v, "outer"), axis_name="inner"),
                    axis_name="outer")(z)
    np.testing.assert_allclose(got_n, np.tile(z.sum(0), (2, 1)))


@pytest.mark.parametrize("axis, tiled", [(0, False), (1, False), (2, False), (0, True),
                                         (1, True)])
def test_gather_and_scatter_under_an_inner_vmap_over_another_axis(axis, tiled):
    # The inner vmap (axis "b") batches values whose collective is over the outer axis "a":
    # its rule gathers/scatters each batch member, at `axis` of the unbatched block. Oracle:
    # Python loops over (a, b).
    x = np.arange(2 * 3 * 4 * 6, dtype=np.float64).reshape(2, 3, 4, 6)

    def nested(f):
        return ft.vmap(ft.vmap(f, axis_name="b"), axis_name="a")(x)

    block = lambda a, b: x[a, b]  # noqa: E731
    got = nested(lambda v: lax.all_gather(v, "a", axis=axis, tiled=tiled))
    join = np.concatenate if tiled else np.stack
    for a in range(2):
        for b in range(3):
            want = join([block(ap, b) for ap in range(2)], axis=axis)
            np.testing.assert_array_equal(got[a, b], want)
    if axis < 2:
        got = nested(lambda v: lax.psum_scatter(v, "a", scatter_dimension=axis, tiled=True))
        for a in range(2):
            for b in range(3):
                total = block(0, b) + block(1, b)
                want = np.split(total, 2, axis=axis)[a]
                np.testing.assert_array_equal(got[a, b], want)


def test_collective_gradients():
    x = R(4)
    g = ft.grad(lambda v: fnp.sum(ft.vmap(lambda u: u * lax.psum(u, "i"), axis_name="i")(v)))(x)
    np.testing.assert_allclose(g, 2 * np.full(4, x.sum()), rtol=1e-12)
    g2 = ft.grad(lambda v: fnp.sum(ft.vmap(lambda u: lax.all_gather(u, "i") ** 2,
                                           axis_name="i")(v)))(x)
    np.testing.assert_allclose(g2, 2 * 4 * x, rtol=1e-12)


def test_vmap_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"(?s)^vmap got inconsistent sizes for array axes to "
                       r"be mapped.*size 3: axis 0 of argument "
                       r"'a'.*size 4: axis 0 of argument 'b'"):
        ft.vmap(lambda a, b: a + b)(R(3), R(4))
    with pytest.raises(ValueError, match="in_axes"):
        ft.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(R(3), R(3))
    with pytest.raises(ValueError, match="axis 2"):
        ft.vmap(fnp.sin, in_axes=2)(R(3, 4))
    with pytest.raises(ValueError, match="axis_size"):
        ft.vmap(lambda x: x, in_axes=None)(R(3))
    with pytest.raises(NameError, match=r"bound axis names are \['i'\]"):
        ft.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(R(3))
    with pytest.raises(ValueError, match="out_axes is None"):
        ft.vmap(fnp.sin, out_axes=None)(R(3))
    with pytest.raises(TypeError, match="in_axes must be ints"):
        ft.vmap(fnp.sin, in_axes="0")



def test_every_primitive_has_a_batching_test():
    programs = [(f, [fnp.asarray(a) for a in args]) for f, args in CASES.values()]
    assert_every_primitive_covered(primitives_in(programs), "a batching test")
