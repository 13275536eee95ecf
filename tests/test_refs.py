"""Mutable references (``functrans.ref``, ``jax.new_ref``): reads and writes agree with the
same updates on immutable arrays (NumPy in-place updates as the oracle), eagerly and inside
the transformation that made them; a reference used across a transformation boundary is
refused with a clear error."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import ref


def _updates(r):
    r[1] = 5.0
    r[0] += 2.0
    r[2:] = r[2:] * 3.0
    ref.addupdate(r, ..., fnp.ones(r.shape))
    old = ref.swap(r, 0, -1.0)
    return old, ref.freeze(r)


def _oracle(x):
    x = np.array(x, dtype=np.float64)
    x[1] = 5.0
    x[0] += 2.0
    x[2:] *= 3.0
    x += 1.0
    old = x[0].copy()
    x[0] = -1.0
    return old, x


def test_eager_reads_and_writes_match_numpy_updates():
    x = np.arange(4.0)
    old, final = _updates(ft.new_ref(fnp.asarray(x)))
    want_old, want = _oracle(x)
    np.testing.assert_array_equal(final, want)
    assert float(old) == want_old
    r = ft.new_ref(fnp.zeros(2, "float32"))
    r[...] = 3  # broadcast and cast to the reference's type
    assert r[...].dtype == np.float32 and r.shape == (2,) and r.dtype == np.float32
    assert repr(ft.typeof(r)) == "Ref{f32[2]}" and ref.get(r, 1) == 3.0


def test_references_inside_jit_grad_and_vmap_agree_with_eager():
    def f(x):
        return _updates(ft.new_ref(x))[1]

    x = fnp.arange(4.0)
    np.testing.assert_array_equal(ft.jit(f)(x), f(x))
    batch = fnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ft.vmap(f)(batch), np.stack([f(b) for b in batch]))
    # d/dx sum(f(x)^2): x[0] and x[1] are overwritten (zero), x[2:] scaled by 3 then +1.
    g = ft.grad(lambda x: fnp.sum(f(x) ** 2))(x)
    want = np.array([0.0, 0.0, 2 * (3 * 2.0 + 1) * 3, 2 * (3 * 3.0 + 1) * 3])
    np.testing.assert_allclose(g, want, rtol=1e-15)


def test_references_passed_to_jit_are_updated_as_jax_does():
    r = ft.new_ref(fnp.arange(4.0))
    bump = ft.jit(lambda r, x: (_updates(r), r[0] * x)[1])
    want_old, want = _oracle(np.arange(4.0))
    assert float(bump(r, 2.0)) == want[0] * 2
    np.testing.assert_array_equal(r[...], want)
    np.testing.assert_array_equal(bump(r, 1.0), _oracle(want)[1][0])  # cached, runs again
    np.testing.assert_array_equal(r[...], _oracle(want)[1])
    # in a pytree, next to static arguments; inside another jit's trace
    scale = ft.jit(lambda d, n: [d["a"].__setitem__(..., d["a"][...] * n), d["b"] + 1][1],
                   static_argnums=1)
    a = ft.new_ref(fnp.ones(3))
    np.testing.assert_array_equal(scale({"a": a, "b": fnp.ones(2)}, 4), [2.0, 2.0])
    np.testing.assert_array_equal(a[...], [4.0, 4.0, 4.0])
    inner = ft.jit(lambda x: (lambda q: (scale({"a": q, "b": x}, 2), q[...])[1])(ft.new_ref(x)))
    np.testing.assert_array_equal(inner(fnp.ones(2)), [2.0, 2.0])
    with pytest.raises(ValueError, match="same Ref is passed more than once"):
        ft.jit(lambda p, q: p[...] + q[...])(a, a)


def test_jit_passes_in_and_out_the_references_it_closes_over():
    # JAX's refs guide: x_ref[1] += 1 in a jitted function, called twice -> [0, 2, 0]
    x_ref = ft.new_ref(fnp.zeros(3))

    @ft.jit
    def f():
        x_ref[1] += 1.0

    f()
    f()
    np.testing.assert_array_equal(x_ref[...], [0.0, 2.0, 0.0])
    a, b = ft.new_ref(1.0), ft.new_ref(fnp.arange(2.0))

    @ft.jit
    def g(x):  # two references, found one after the other while tracing
        a[...] = a[...] * x
        b[...] += a[...]
        return a[...] + 1

    assert float(g(3.0)) == 4.0 and float(g(2.0)) == 7.0  # JAX: 4.0, 7.0
    assert float(a[...]) == 6.0
    np.testing.assert_array_equal(b[...], [9.0, 10.0])
    np.testing.assert_array_equal(ft.jit(lambda x: x_ref[...] + x)(1.0), [1.0, 3.0, 1.0])


def test_nested_jits_and_make_jaxpr_pass_the_references_closed_over():
    count = ft.new_ref(0.0)

    @ft.jit
    def tick(x):
        count[...] += x
        return count[...] * 2

    ft.make_jaxpr(tick)(1.0)  # tracing writes nothing
    assert float(count[...]) == 0.0
    # an enclosing jit passes its own value of the reference to the inner one: as eagerly,
    # tick(1) returns 2 then 4, and the reference ends at 2
    assert float(ft.jit(lambda x: tick(x) + tick(x))(1.0)) == 6.0
    assert float(count[...]) == 2.0
    assert float(tick(1.0)) == 6.0 and float(count[...]) == 3.0

    @ft.jit
    def outer(x):
        inner = ft.new_ref(x)  # a reference of outer's trace, closed over by inner jits
        bump = ft.jit(lambda: inner.__setitem__(..., inner[...] + 1.0))
        bump()
        bump()
        return inner[...]

    assert float(outer(1.0)) == 3.0


def test_a_reference_made_outside_a_transformation_is_refused_inside_others():
    r = ft.new_ref(fnp.zeros(3))
    with pytest.raises(TypeError, match="reading a Ref made outside the current "
                                        "transformation.*f64\\[3\\]"):
        ft.vmap(lambda x: r[...] + x)(fnp.ones(2))

    def body(c):
        r[...] = r[...] + c
        return c + 1.0

    with pytest.raises(TypeError, match="Ref made outside"):  # (scan carries them; while not)
        ft.lax.while_loop(lambda c: c < 2.0, body, 1.0)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="freeze: expected a Ref"):
        ref.freeze(fnp.ones(2))
    with pytest.raises(TypeError, match="is a Ref already"):
        ft.new_ref(ft.new_ref(1.0))
    with pytest.raises(ValueError, match="addupdate: the value has shape \\(\\), but"):
        ref.addupdate(ft.new_ref(fnp.ones(3)), ..., 1.0)


def test_scan_carries_the_references_its_body_closes_over():
    # JAX's refs guide: foreach over xs adding into r = new_ref(0) -> r == 45
    r = ft.new_ref(0)
    ys = ft.lax.scan(lambda c, x: (r.__setitem__(Ellipsis, r[...] + x), (c, x * 2))[1],
                     None, fnp.arange(10))[1]
    assert int(r[...]) == 45
    np.testing.assert_array_equal(ys, np.arange(10) * 2)
    acc = ft.new_ref(0.0)

    def body(i, c):
        acc[...] += i
        return c + 1

    assert int(ft.lax.fori_loop(0, 4, body, 0)) == 4 and float(acc[...]) == 6.0

    @ft.jit
    def accumulate(xs):  # a reference made in jit, written in a scan inside it
        total = ft.new_ref(fnp.zeros(2))

        def step(c, x):
            total[...] += x
            return c, None
        ft.lax.scan(step, 0.0, xs)
        return ft.freeze(total)

    np.testing.assert_array_equal(accumulate(fnp.ones((3, 2))), [3.0, 3.0])


def test_unsafe_buffer_pointer_is_the_current_buffers_address():
    x = fnp.arange(3.0)
    assert x.unsafe_buffer_pointer() == np.asarray(x).ctypes.data
    r = ft.new_ref(fnp.arange(3.0))
    assert r.unsafe_buffer_pointer() == np.asarray(r[...]).ctypes.data
    r[...] = fnp.sin(r[...])  # a write gives the reference a new array
    assert r.unsafe_buffer_pointer() == np.asarray(r[...]).ctypes.data


def test_vmap_passes_references_by_value_and_writes_them_back():
    # JAX's state guide: each vmapped instance writes its own entry -> [0, 2, 4]
    def scale_into(x, out_ref):
        out_ref[...] = 2.0 * x

    out = ft.new_ref(fnp.zeros(3))
    ft.vmap(scale_into)(fnp.arange(3.0), out)
    np.testing.assert_array_equal(out[...], [0.0, 2.0, 4.0])

    def dist(x, y, out_ref):  # JAX's refs guide: nested vmaps over one reference
        out_ref[...] = fnp.sum((x - y) ** 2)

    vecs = fnp.arange(12.0).reshape(3, 4)
    d = ft.new_ref(fnp.zeros((3, 3)))
    ft.vmap(ft.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, d)
    want = ((np.arange(12.0).reshape(3, 1, 4) - np.arange(12.0).reshape(1, 3, 4)) ** 2).sum(-1)
    np.testing.assert_array_equal(d[...], want.T)
    cols = ft.new_ref(fnp.zeros((2, 3)))
    ft.vmap(scale_into, in_axes=(0, 1))(fnp.arange(3.0), cols)  # mapped along axis 1
    np.testing.assert_array_equal(cols[...], [[0.0, 2.0, 4.0]] * 2)
    with pytest.raises(ValueError, match="unmapped"):
        ft.vmap(scale_into, in_axes=(0, None))(fnp.arange(3.0), ft.new_ref(0.0))


def test_custom_vjp_rules_write_into_a_reference_argument():
    # JAX's refs guide: stash_grads writes the cotangent at the stash point into a Ref;
    # grad(f)(1., grads_ref) == cos(1.) and grads_ref holds cos(1.) too.
    @ft.custom_vjp
    def stash_grads(grads_ref, x):
        return x

    def fwd(grads_ref, x):
        return x, grads_ref

    def bwd(grads_ref, g):
        grads_ref[...] = g
        return None, g

    stash_grads.defvjp(fwd, bwd)
    f = lambda x, grads_ref: fnp.sin(stash_grads(grads_ref, x))
    grads_ref = ft.new_ref(0.0)
    np.testing.assert_allclose(ft.grad(f)(1.0, grads_ref), np.cos(1.0))
    np.testing.assert_allclose(grads_ref[...], np.cos(1.0))
    g = lambda x, r: fnp.sin(stash_grads(r, x * 2.0))
    np.testing.assert_allclose(ft.grad(g)(0.5, grads_ref), 2 * np.cos(1.0))
    np.testing.assert_allclose(grads_ref[...], np.cos(1.0))
