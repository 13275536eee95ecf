"""The JAX behaviours TensorFlow Probability's JAX substrate and distrax rely on, each against
an oracle: NumPy's answers for shapes, JAX's own rules for shape arguments and weak
references, JAX 0.10.2's values where printed."""
import subprocess
import sys
import warnings
import weakref

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import random
from functrans.core.trace import get_aval, pytype_aval_mappings
from functrans.primitives import sin_p


def test_jax_interpreters_xla_is_an_attribute_of_the_package():
    """TFP reads ``jax.interpreters.xla.canonicalize_dtype_handlers`` after ``import jax``
    alone, as JAX's package imports the module."""
    code = ("import functrans.interpreters as i; "
            "print(i.xla.canonicalize_dtype_handlers[float](2.5).dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "float64"  # functrans's default: 64-bit values on


class _Dim:
    """A dimension like TFP's ``Dimension``: an integer through ``__index__`` only."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


class _Shape:
    """A shape like TFP's ``TensorShape``: iterable, not a Sequence."""

    def __init__(self, dims):
        self.dims = [_Dim(d) for d in dims]

    def __iter__(self):
        return iter(self.dims)


def test_random_shapes_are_any_iterable_of_integer_likes():
    """JAX's ``canonicalize_shape`` takes any iterable of sizes with ``__index__``; the bits
    are those of the tuple shape."""
    key = random.PRNGKey(0)
    np.testing.assert_array_equal(random.normal(key, _Shape([2, 3])), random.normal(key, (2, 3)))
    np.testing.assert_array_equal(random.uniform(key, np.array([4])), random.uniform(key, (4,)))
    with pytest.raises(TypeError, match="tuple of ints"):
        random.normal(key, "ab")
    with pytest.raises(TypeError, match="tuple of ints"):
        random.normal(key, [1.5])


@pytest.mark.parametrize("value", [None, [[1, 2], [3, 4]], 3.0, (1, 2, 3)])
def test_shape_and_ndim_of_non_arrays_are_numpys_with_jaxs_warning(value):
    """JAX 0.10.2 answers np.shape/np.ndim for lists and None with a DeprecationWarning
    (TFP asks for the shape of optional arguments left as None)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fnp.shape(value) == np.shape(value)
        assert fnp.ndim(value) == np.ndim(value)
    arraylike = isinstance(value, float)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught) != arraylike
    assert fnp.shape(fnp.ones((2, 3))) == (2, 3) and fnp.ndim(np.ones((4, 1, 2))) == 3


def test_axes_may_be_ranges():
    """distrax passes ``range`` objects as axes (JAX accepts any sequence)."""
    x = np.arange(6.0).reshape(2, 3)
    assert fnp.expand_dims(fnp.ones(2), range(2)).shape == np.expand_dims(np.ones(2),
                                                                           (0, 1)).shape
    assert fnp.expand_dims(fnp.ones(2), range(0)).shape == (2,)
    np.testing.assert_array_equal(fnp.sum(x, axis=range(2)), x.sum(axis=(0, 1)))


def test_tracers_are_weakly_referenceable():
    """TFP's caches key on weak references to the values they see, tracers included."""
    refs = []

    def f(x):
        refs.append(weakref.ref(x))
        return x * 2.0
    assert float(ft.grad(f)(1.0)) == 2.0
    ft.jit(f)(1.0)
    ft.vmap(f)(np.ones(2))
    assert len(refs) == 3


def test_registered_array_likes_get_their_aval_by_shape_and_dtype():
    """TFP registers its NumPy-backed variable type with the ndarray handler; the handler
    reads the value's shape and dtype (it must not send the value back to get_aval)."""
    class Variable:
        shape, dtype = (2, 3), np.dtype(np.int32)

    pytype_aval_mappings[Variable] = pytype_aval_mappings[np.ndarray]
    try:
        aval = get_aval(Variable())
    finally:
        del pytype_aval_mappings[Variable]
    assert (aval.shape, aval.dtype, aval.weak_type) == ((2, 3), np.int32, False)


def test_functrans_primitives_are_not_call_primitives():
    """distrax walks jaxprs asking ``primitive.call_primitive`` (JAX's mark of primitives
    whose params hold a ``call_jaxpr``); functrans has none of those."""
    assert sin_p.call_primitive is False and sin_p.map_primitive is False
    eqn, = ft.make_jaxpr(ft.jit(fnp.sin))(1.0).eqns
    assert eqn.prim.call_primitive is False and "call_jaxpr" not in eqn.params


@ft.tree_util.register_pytree_node_class
class _ValueSorted:
    """Flattens like distrax's distributions: which fields are leaves depends on their
    values (ints and None are metadata, arrays and bare object()s are data)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def tree_flatten(self):
        leaves, treedef = ft.tree_util.tree_flatten(self.__dict__)
        data = [type(x) is object or not isinstance(x, (int, type(None))) for x in leaves]
        return ([x if d else None for x, d in zip(leaves, data)],
                ([None if d else x for x, d in zip(leaves, data)], data, treedef))

    @classmethod
    def tree_unflatten(cls, aux, children):
        meta, data, treedef = aux
        obj = object.__new__(cls)
        obj.__dict__ = ft.tree_util.tree_unflatten(
            treedef, [c if d else m for c, m, d in zip(children, meta, data)])
        return obj


def test_vmap_outputs_whose_leaves_depend_on_their_values():
    """JAX matches out_axes against the outputs' structure filled with bare object()s, so
    such classes keep their leaves; the result equals a Python loop's stacked results."""
    xs = np.arange(12.0).reshape(3, 4)
    out = ft.vmap(lambda x: _ValueSorted(total=x.sum(keepdims=True), scale=x * 2, n=4))(xs)
    assert out.n == 4
    np.testing.assert_array_equal(out.total, np.stack([x.sum(keepdims=True) for x in xs]))
    np.testing.assert_array_equal(out.scale, np.stack([x * 2 for x in xs]))


# ---- the incomplete gamma functions TFP's Gamma-family distributions use ----------------------
_A = np.array([0.5, 1.0, 3.0, 10.0, 0.05, 40.0])
_X = np.array([0.2, 1.0, 4.5, 8.0, 0.01, 30.0])


def test_igamma_and_igammac_match_scipy():
    """float64 series and continued fractions iterated to epsilon: within 1e-12 of SciPy.
    JAX 0.10.2 prints igamma([0.5, 1, 3, 10], [0.2, 1, 4.5, 8]) = [0.4729107, 0.6321202,
    0.826422, 0.283375] in float32."""
    from functrans import lax
    sp = pytest.importorskip("scipy.special")
    np.testing.assert_allclose(lax.igamma(_A, _X), sp.gammainc(_A, _X), rtol=1e-12)
    np.testing.assert_allclose(lax.igammac(_A, _X), sp.gammaincc(_A, _X), rtol=1e-12)
    f32 = lax.igamma(_A[:4].astype(np.float32), _X[:4].astype(np.float32))
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, [0.4729107, 0.6321202, 0.826422, 0.283375], rtol=2e-6)
    np.testing.assert_allclose(ft.vmap(lax.igamma)(_A, _X),
                               [lax.igamma(a, x) for a, x in zip(_A, _X)], rtol=1e-14)
    with pytest.raises(TypeError, match="one shape"):
        lax.igamma(np.ones(2), np.ones(3))
    # as JAX's lax (distrax's Gamma cdf): a rank-0 operand broadcasts
    np.testing.assert_allclose(lax.igamma(_A, np.float64(2.0)), sp.gammainc(_A, 2.0),
                               rtol=1e-12)
    np.testing.assert_allclose(lax.random_gamma_grad(np.float64(1.5), _X),
                               lax.random_gamma_grad(np.full(6, 1.5), _X), rtol=1e-14)


def test_igamma_derivatives_match_finite_differences():
    """d/da by central differences of SciPy's gammainc (h=1e-6: within 1e-6 relative);
    random_gamma_grad is the implicit derivative -(dP/da)/(dP/dx) of a Gamma(a) sample."""
    from functrans import lax
    sp = pytest.importorskip("scipy.special")
    h = 1e-6
    dp_da = (sp.gammainc(_A + h, _X) - sp.gammainc(_A - h, _X)) / (2 * h)
    dp_dx = (sp.gammainc(_A, _X + h) - sp.gammainc(_A, _X - h)) / (2 * h)
    np.testing.assert_allclose(lax.igamma_grad_a(_A, _X), dp_da, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(lax.random_gamma_grad(_A, _X), -dp_da / dp_dx, rtol=1e-6)
    g_a = ft.vmap(ft.grad(lambda a, x: lax.igamma(a, x)))(_A, _X)
    g_x = ft.vmap(ft.grad(lambda a, x: lax.igammac(a, x), argnums=1))(_A, _X)
    np.testing.assert_allclose(g_a, dp_da, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(g_x, -dp_dx, rtol=1e-6, atol=1e-10)


def test_at_least_vspace_is_the_tangent_type():
    """distrax's custom JVP rules ask ``jax.typeof(x).at_least_vspace()`` (JAX's older name
    of ``to_tangent_aval``) for the type of a symbolic-zero tangent; its multiply_no_nan
    gradient at (-inf, 0) is (0, -inf), as on JAX."""
    from functrans.core.avals import ShapedArray
    aval = ShapedArray((2, 3), np.float32, True)
    assert aval.at_least_vspace() == aval.to_tangent_aval()

    @ft.custom_jvp
    def mul(x, y):
        return fnp.where(y == 0, 0.0, x * y)

    @mul.defjvp
    def _(primals, tangents):
        x, y = primals
        kind = ft.typeof(mul(x, y)).at_least_vspace()
        assert kind.shape == () and kind.dtype == np.float64
        return mul(x, y), tangents[0] * y + tangents[1] * x
    g = ft.grad(lambda v: mul(v[0], v[1]))((-np.inf, 0.0))
    assert float(g[0]) == 0.0 and float(g[1]) == -np.inf
