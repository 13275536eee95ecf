"""Compiled loops keep arrays in buffers allocated once, before the loop: large carries are
double-buffered (or updated in place by dynamic_update_slice) and stacked outputs are written
into their rows. These tests check the cases where in-place updates could go wrong: a carry
read after its new value is written, carries swapped or duplicated between iterations, a carry
that is also a stacked output, updates that read the old carry, nested loops, and all of it
under grad and vmap.

Carries here have more than 16 elements (smaller ones live in one variable per element, not
in buffers). Oracles: Python loops in NumPy for values, the un-jitted function for jit,
Python loops for vmap, finite differences (check_grads) for derivatives. float64 throughout;
compiled code may contract multiply-adds into FMAs and use SIMD transcendentals (a few ulp per
step), so jit is compared with rtol 1e-10, NumPy loops of the same operations with 1e-12.
"""
import re

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.autodiff.check import check_grads

RTOL_JIT = 1e-10
rng = np.random.default_rng(7)
A = rng.standard_normal((4, 6))
B = rng.standard_normal((4, 6))
XS = rng.standard_normal((5, 4, 6)) * 0.5


def assert_jit_matches(f, *args, rtol=RTOL_JIT):
    want = f(*args)
    got = ft.jit(f)(*args)
    for w, g in zip(ft.tree.leaves(want), ft.tree.leaves(got)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-14)
    return got


def read_after_write(a, b, xs):
    """The new `a` is computed first; the new `b` then reads the *old* `a`."""
    def step(c, x):
        a, b = c
        a2 = a * 0.5 + fnp.sin(b) + x
        b2 = a * b - a2 * 0.25
        return (a2, b2), a2 + b2
    return lax.scan(step, (a, b), xs)


def read_after_write_numpy(a, b, xs):
    ys = []
    for x in xs:
        a2 = a * 0.5 + np.sin(b) + x
        a, b = a2, a * b - a2 * 0.25
        ys.append(a + b)
    return (a, b), np.array(ys)


def test_carry_read_after_its_new_value_is_written():
    got = assert_jit_matches(read_after_write, A, B, XS)
    want = read_after_write_numpy(A, B, XS)
    for g, w in zip(ft.tree.leaves(got), ft.tree.leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_swapped_and_duplicated_carries():
    def swap(a, b):
        return lax.fori_loop(0, 5, lambda i, c: (c[1], c[0] * 1.5), (a, b))

    def fib(a, b):  # (a, b) -> (b, a + b): the old b moves over, the sum is new
        return lax.fori_loop(0, 7, lambda i, c: (c[1], c[0] + c[1]), (a, b))

    def dup(a, b):  # one new value for two carries
        return lax.fori_loop(0, 3, lambda i, c: (c[0] + c[1], c[0] + c[1]), (a, b))

    def same(a, b):  # one carry never changes (no buffer, no copy)
        return lax.fori_loop(0, 4, lambda i, c: (c[0] + c[1], c[1]), (a, b))

    a, b = A, B
    for _ in range(5):
        a, b = b, a * 1.5
    np.testing.assert_allclose(assert_jit_matches(swap, A, B), (a, b), rtol=1e-12)
    a, b = A, B
    for _ in range(7):
        a, b = b, a + b
    np.testing.assert_allclose(assert_jit_matches(fib, A, B), (a, b), rtol=1e-12)
    a, b = A, B
    for _ in range(3):
        a = b = a + b
    np.testing.assert_allclose(assert_jit_matches(dup, A, B), (a, b), rtol=1e-12)
    np.testing.assert_allclose(assert_jit_matches(same, A, B), (A + 4 * B, B), rtol=1e-12)


def test_carry_that_is_also_a_stacked_output():
    def new_as_y(a, xs):
        return lax.scan(lambda c, x: (c * 0.9 + x, c * 0.9 + x), a, xs)

    def old_as_y(a, xs):
        return lax.scan(lambda c, x: (c * 0.9 + x, c), a, xs)

    def twice(a, xs):  # the same value stacked twice and carried
        return lax.scan(lambda c, x: (fnp.tanh(c + x), (fnp.tanh(c + x),) * 2), a, xs,
                        reverse=True)

    c, new, old = A, [], []
    for x in XS:
        old.append(c)
        c = c * 0.9 + x
        new.append(c)
    got = assert_jit_matches(new_as_y, A, XS)
    np.testing.assert_allclose(got[0], c, rtol=1e-12)
    np.testing.assert_allclose(got[1], np.array(new), rtol=1e-12)
    got = assert_jit_matches(old_as_y, A, XS)
    np.testing.assert_allclose(got[1], np.array(old), rtol=1e-12)
    c, ys = A, [None] * len(XS)
    for t in reversed(range(len(XS))):
        c = np.tanh(c + XS[t])
        ys[t] = c
    got = assert_jit_matches(twice, A, XS)
    np.testing.assert_allclose(got[1][0], np.array(ys), rtol=1e-12)
    np.testing.assert_allclose(got[1][1], np.array(ys), rtol=1e-12)


def fill_rows(x):
    """A carry updated only by dynamic_update_slice (in place)."""
    buf = fnp.zeros((6, x.shape[0]))
    return lax.fori_loop(0, 6, lambda i, b: b.at[i].set(fnp.sin(x * i)), buf)


def fill_from_previous(x):
    """Each row reads the one before it: the update reads the old carry."""
    buf = fnp.zeros((6, x.shape[0])).at[0].set(x)
    return lax.fori_loop(1, 6, lambda i, b: b.at[i].set(b[i - 1] * 0.5 + 1.0), buf)


def fill_two_rows(x):
    """Two updates in a row, each the only reader of the one before."""
    buf = fnp.zeros((12, x.shape[0]))
    return lax.fori_loop(
        0, 6, lambda i, b: b.at[2 * i].set(x * i).at[2 * i + 1].set(-x * i), buf)


def test_dynamic_update_slice_carries():
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(assert_jit_matches(fill_rows, x),
                               np.stack([np.sin(x * i) for i in range(6)]), rtol=1e-12)
    want = [x]
    for _ in range(5):
        want.append(want[-1] * 0.5 + 1.0)
    np.testing.assert_allclose(assert_jit_matches(fill_from_previous, x), np.stack(want),
                               rtol=1e-12)
    want = np.stack([s * x * i for i in range(6) for s in (1, -1)])
    np.testing.assert_allclose(assert_jit_matches(fill_two_rows, x), want, rtol=1e-12)
    # the kernel's own input is never written: the same argument gives the same answer twice
    f = ft.jit(lambda b: lax.fori_loop(0, 3, lambda i, c: c.at[i].set(c[i] + 1.0), b))
    b0 = np.zeros((3, 8))
    f(b0)
    np.testing.assert_array_equal(f(b0), np.ones((3, 8)))
    np.testing.assert_array_equal(b0, 0.0)


def nested(a, xs):
    """A scan inside a fori_loop inside a while_loop, all with large carries."""
    def inner(c, x):
        return c * 0.5 + x, fnp.sum(c)

    def middle(i, c):
        c2, s = lax.scan(inner, c, xs)
        return c2 + 0.01 * fnp.sum(s)

    def outer(state):
        k, c = state
        return k + 1, lax.fori_loop(0, 2, middle, c)

    return lax.while_loop(lambda s: s[0] < 3, outer, (0, a))[1]


def nested_numpy(a, xs):
    c = a
    for _ in range(3):
        for _ in range(2):
            s = []
            for x in xs:
                s.append(np.sum(c))
                c = c * 0.5 + x
            c = c + 0.01 * np.sum(s)
    return c


def test_nested_loops():
    np.testing.assert_allclose(assert_jit_matches(nested, A, XS), nested_numpy(A, XS),
                               rtol=1e-12)


def test_zero_length_scan_returns_the_initial_carry():
    f = lambda a, xs: lax.scan(lambda c, x: (c + x, c * x), a, xs)  # noqa: E731
    got = assert_jit_matches(f, A, XS[:0])
    np.testing.assert_array_equal(got[0], A)
    assert got[1].shape == (0, 4, 6)


def rnn_loss(w, xs):
    def step(h, x):
        h = fnp.tanh(h @ w + x)
        return h, fnp.sum(h * h)
    h, s = lax.scan(step, fnp.ones(w.shape[0]) * 0.1, xs)
    return fnp.sum(s) + fnp.sum(h)


@pytest.mark.parametrize("f, args", [
    (lambda a, b: fnp.sum(read_after_write(a, b, XS[:3])[1] ** 2), (A, B)),
    (lambda w: rnn_loss(w, XS[:4, 0] @ np.ones((6, 20)) * 0.1), (np.eye(20) * 0.3 + 0.01,)),
    (lambda x: fnp.sum(fill_from_previous(x) ** 2), (np.linspace(-1, 1, 20),)),
])
def test_gradients_of_buffered_loops(f, args):
    check_grads(f, args, order=2, modes=("rev",))
    g = ft.grad(f, argnums=tuple(range(len(args))))
    assert_jit_matches(g, *args)


def test_vmap_of_buffered_loops_matches_python_loops():
    batch_a = np.stack([A, B, A * 2])
    got = ft.jit(ft.vmap(read_after_write, in_axes=(0, None, None)))(batch_a, B, XS)
    for k in range(3):
        want = read_after_write_numpy(batch_a[k], B, XS)
        for g, w in zip(ft.tree.leaves(got), ft.tree.leaves(want)):
            np.testing.assert_allclose(g[k], w, rtol=1e-12)
    xs = np.stack([np.linspace(-1, 1, 5), np.linspace(0, 2, 5)])
    got = ft.jit(ft.vmap(fill_from_previous))(xs)
    np.testing.assert_allclose(got, np.stack([fill_from_previous(x) for x in xs]), rtol=1e-12)
    loss = lambda a: fnp.sum(read_after_write(a, B, XS[:3])[1] ** 2)  # noqa: E731
    grads = ft.jit(ft.vmap(ft.grad(loss)))(batch_a)
    for k in range(3):
        np.testing.assert_allclose(grads[k], ft.grad(loss)(batch_a[k]), rtol=RTOL_JIT)
    ws = np.stack([np.eye(20) * s for s in (0.2, 0.3)])
    xs = XS[:4, 0] @ np.ones((6, 20)) * 0.1
    grads = ft.jit(ft.vmap(ft.grad(rnn_loss), in_axes=(0, None)))(ws, xs)
    for k in range(2):
        np.testing.assert_allclose(grads[k], ft.grad(rnn_loss)(ws[k], xs), rtol=RTOL_JIT)


def loop_bodies(source):
    """The lines inside the kernel's for/while loops."""
    lines, inside, depth = source.splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if depth is not None and line.strip() and indent <= depth:
            depth = None
        if depth is not None:
            inside.append(line)
        elif re.match(r"\s*(for .* in .*|while .*):$", line) and "range(4096)" not in line:
            if line.strip().startswith(("for s", "while True")):
                depth = indent
    return inside


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_loop_bodies_allocate_nothing(codegen):
    """The training-style loops above compile to bodies without any array allocation. Native
    code allocates nothing at all (every buffer, scratch included, is planned into one arena
    the caller passes, or the stack): its text calls no allocator; the Numba kernels allocate
    before their loops."""
    w = np.eye(20) * 0.3
    xs = XS[:4, 0] @ np.ones((6, 20))
    for f, args in [(ft.value_and_grad(rnn_loss), (w, xs)), (read_after_write, (A, B, XS)),
                    (fill_rows, (np.ones(20),)), (nested, (A, XS))]:
        with ft.config.override(jit_codegen=codegen):
            source = ft.jit(f).lower(*args).as_text()
        if codegen == "native":
            assert "define void @ftp_" in source and " = icmp " in source, source
            assert not re.search(r"@(malloc|calloc|realloc|NRT_)", source), source
            continue
        body = loop_bodies(source)
        assert body, source
        allocating = [line for line in body
                      if re.search(r"np\.(empty|zeros|full|ones)\(|\.copy\(\)|ascontiguous", line)]
        assert not allocating, "\n".join(allocating)


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_products_accumulated_into_carries(codegen):
    """`c + a . b` in a loop body: the sum of outer products, a matrix-vector product added
    to a carry that is read afterwards, and a product used twice. The Numba kernels compute
    it in one pass into c's new buffer (checked in their source); native code computes the
    product, then the sum."""
    m = rng.standard_normal((24, 24)) * 0.2
    xs = rng.standard_normal((5, 24))

    def f(m, xs):
        def step(c, x):
            s, v = c
            s2 = s + x[:, None] @ v[None, :]  # an outer product into the accumulator: fused
            v2 = v + m @ v  # added to the old carry, which is read again below
            p = x @ m
            return (s2, fnp.tanh(v2) + 0.1 * v), p + p * p  # p has two readers
        return lax.scan(step, (fnp.zeros((24, 24)), fnp.ones(24) * 0.5), xs)

    s, v, ps = np.zeros((24, 24)), np.ones(24) * 0.5, []
    for x in xs:
        s2 = s + np.outer(x, v)
        v2 = v + m @ v
        p = x @ m
        s, v = s2, np.tanh(v2) + 0.1 * v
        ps.append(p + p * p)
    with ft.config.override(jit_codegen=codegen):
        got = assert_jit_matches(f, m, xs)
        # sums of O(1) terms that cancel to ~1e-4: an absolute floor of 1e-13 (a few ulp of 1)
        np.testing.assert_allclose(got[0][0], s, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got[0][1], v, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(got[1], np.array(ps), rtol=1e-12, atol=1e-13)
        source = ft.jit(f).lower(m, xs).as_text()
        if codegen == "numba":
            assert re.search(r"blas\.small_outer\(\w+, \w+, \w+, \w+\)", source), source
        check_grads(lambda m: fnp.sum(f(m, xs[:3])[0][0] ** 2), (m,), order=1, modes=("rev",))


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_dot_of_vectors_accumulated_into_a_scalar_carry(codegen):
    """`s + u . v` with a rank-0 accumulator (lineax's tree_dot summed over leaves): the
    fused product adds a scalar."""
    us = rng.standard_normal((4, 18))

    def f(us):
        def step(s, u):
            return s + fnp.dot(u, u * 0.5), s
        return lax.scan(step, fnp.zeros(()), us)

    want = np.cumsum([0.0] + [float(u @ (u * 0.5)) for u in us])
    with ft.config.override(jit_codegen=codegen):
        got = assert_jit_matches(f, us)
        # sums of 18 products of O(1) terms in another order: a few ulp of the totals (~10)
        np.testing.assert_allclose(got[0], want[-1], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[:-1], rtol=1e-13, atol=1e-15)


def test_while_loop_whose_condition_reads_large_carries():
    """The condition reads the carries each iteration; the body updates one in place
    (scatter) and double-buffers the other."""
    def f(x, n):
        def cond(s):
            k, v, rows = s
            return (fnp.sum(v * v) < 1e6) & (k < n)

        def body(s):
            k, v, rows = s
            v2 = v * 1.7 + 0.1
            return k + 1, v2, rows.at[k % rows.shape[0]].set(v2 - v)
        return lax.while_loop(cond, body, (0, x, fnp.zeros((4, x.shape[0]))))

    x = np.linspace(0.1, 1.0, 30)
    for n in (0, 3, 50):  # n is traced under jit: a while loop with a data-dependent exit
        k, v, rows = 0, x, np.zeros((4, 30))
        while np.sum(v * v) < 1e6 and k < n:
            v2 = v * 1.7 + 0.1
            rows[k % 4] = v2 - v
            k, v = k + 1, v2
        got = ft.jit(f)(x, n)
        assert int(got[0]) == k
        np.testing.assert_allclose(got[1], v, rtol=1e-12)
        np.testing.assert_allclose(got[2], rows, rtol=1e-12)
        np.testing.assert_allclose(got[2], f(x, n)[2], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_over_outer_axes_in_loops(dtype):
    """Reductions whose kept axes are inner ones use scratch accumulators; in a loop those are
    allocated once (float32 sums accumulate in float64, then are cast)."""
    m = rng.standard_normal((30, 20)).astype(dtype)
    xs = rng.standard_normal((4, 30, 20)).astype(dtype)

    def f(m, xs):
        def step(c, x):
            s = fnp.sum(m * x, axis=0)
            return c * 0.5 + s, (fnp.argmax(x, axis=0), fnp.max(x * c, axis=0))
        return lax.scan(step, fnp.zeros(20, dtype), xs)

    c, am, mx = np.zeros(20, dtype), [], []
    for x in xs:
        am.append(np.argmax(x, axis=0))
        mx.append(np.max(x * c, axis=0))
        c = c * 0.5 + np.sum(m * x, axis=0)
    got = assert_jit_matches(f, m, xs, rtol=1e-5 if dtype == "float32" else RTOL_JIT)
    np.testing.assert_allclose(got[0], c, rtol=1e-5 if dtype == "float32" else 1e-12)
    np.testing.assert_array_equal(got[1][0], np.array(am))
    # the max reads c, which carries the sums' rounding
    np.testing.assert_allclose(got[1][1], np.array(mx), rtol=1e-5 if dtype == "float32" else 1e-12)
    body = loop_bodies(ft.jit(f).lower(m, xs).as_text())
    assert not [line for line in body if re.search(r"np\.(empty|full)\(|astype", line)]
