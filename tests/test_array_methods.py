"""Operators, methods and NumPy interop of functrans.Array and of tracers.

Every operator is checked against NumPy for each kind of operand on either side (Array,
ndarray, NumPy scalar, Python scalar) and many dtype pairs, eagerly and with the Array
operand traced (make_jaxpr -> check_jaxpr -> eval_jaxpr). Operands are small integers (exact
in every dtype) and results are compared exactly: both sides run the same NumPy loop on the
same dtypes, so there is no rounding to allow for.
"""
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core.eval import eval_jaxpr
from functrans.testing import assert_close, check_against

DTYPES = ["bool", "int8", "int64", "uint8", "float32", "float64"]
BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift, "eq": operator.eq,
    "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "divmod": divmod, "matmul": operator.matmul,
}
KINDS = ["array", "ndarray", "numpy scalar", "python scalar"]


def traced_value(f, x):
    """f(x) through its type-checked jaxpr, with x (an Array) as the traced input."""
    jaxpr = ft.make_jaxpr(f)(x)
    ft.check_jaxpr(jaxpr)
    outs = eval_jaxpr(jaxpr, x)
    return outs[0] if len(outs) == 1 else tuple(outs)


def operand_values(op, dtype, shape, right):
    """Small values that keep every operator defined: no zero divisors, non-negative integer
    exponents and shift counts, nothing that overflows int8."""
    kind = np.dtype(dtype).kind
    n = int(np.prod(shape))
    if kind == "b":
        v = np.arange(n) % 2 == 0
    elif right and (op in ("pow", "lshift", "rshift") or kind == "u"):
        v = np.arange(n) % 3 + 1
    else:
        v = np.array([2, -3, 1, 3, -1, 2][:n] * (n // 6 + 1))[:n]
        if kind == "u":
            v = np.abs(v)
    return v.reshape(shape).astype(dtype)


def as_kind(values, kind):
    if kind == "array":
        return fnp.asarray(values)
    if kind == "ndarray":
        return values
    if kind == "numpy scalar":
        return values.reshape(-1)[0]
    return values.reshape(-1)[0].item()  # Python bool/int/float: weak, as NEP 50


def numpy_of(x):
    return np.asarray(x) if isinstance(x, ft.Array) else x


@pytest.mark.parametrize("name", sorted(BINARY))
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(KINDS),
       st.booleans())
def test_binary_operators_match_numpy(name, dtype, other_dtype, other_kind, array_on_left):
    op = BINARY[name]
    shape = (3,) if name == "matmul" else (2, 3)
    x = operand_values(name, dtype, shape, right=not array_on_left)
    other_shape = (3,) if other_kind in ("array", "ndarray") else (1,)
    y = as_kind(operand_values(name, other_dtype, other_shape, right=array_on_left), other_kind)
    if name == "matmul" and other_kind not in ("array", "ndarray"):
        with pytest.raises(ValueError, match="must have ndim at least 1, but it has ndim 0"):
            op(fnp.asarray(x), y) if array_on_left else op(y, fnp.asarray(x))  # as JAX
        return

    def apply(a, b):
        return op(a, b) if array_on_left else op(b, a)

    try:
        with np.errstate(all="ignore"):
            expected = apply(x, numpy_of(y))
    except (TypeError, np.exceptions.DTypePromotionError):
        with pytest.raises(TypeError):
            apply(fnp.asarray(x), y)
        return
    got = apply(fnp.asarray(x), y)
    for g, w in zip(got if name == "divmod" else (got,),
                    expected if name == "divmod" else (expected,)):
        assert isinstance(g, ft.Array)
        assert_close(g, np.asarray(w))
    traced = traced_value(lambda t: apply(t, y), fnp.asarray(x))
    for t, g in zip(traced if name == "divmod" else (traced,), got if name == "divmod" else (got,)):
        assert_close(t, np.asarray(g))


@pytest.mark.parametrize("name,fn,np_fn", [
    ("neg", operator.neg, np.negative), ("pos", operator.pos, np.positive),
    ("abs", abs, np.abs), ("invert", operator.invert, np.invert)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators_match_numpy(name, fn, np_fn, dtype):
    x = operand_values(name, dtype, (2, 3), right=False)
    try:
        expected = np_fn(x)
    except TypeError:
        with pytest.raises(TypeError):
            fn(fnp.asarray(x))
        return
    check_against(lambda a: fn(fnp.asarray(a)), lambda a: expected, x)


def test_operators_defer_to_unknown_types():
    class Other:
        def __radd__(self, other):
            return "radd"

        def __eq__(self, other):
            return "eq"

    a = fnp.arange(3)
    assert a + Other() == "radd"
    assert (a == Other()) == "eq"
    assert (a == None) is False  # noqa: E711  (Python's identity fallback)
    with pytest.raises(TypeError):
        a + "text"


# ---- methods ----------------------------------------------------------------------------------------
X = (np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 10.5) / 4
METHODS = {
    "reshape varargs": (lambda a: a.reshape(4, -1), lambda a: a.reshape(4, -1)),
    "reshape tuple": (lambda a: a.reshape((6, 4)), lambda a: a.reshape((6, 4))),
    "reshape order F": (lambda a: a.reshape(4, 6, order="F"), lambda a: a.reshape(4, 6, order="F")),
    "transpose": (lambda a: a.transpose(), lambda a: a.transpose()),
    "transpose varargs": (lambda a: a.transpose(1, 0, 2), lambda a: a.transpose(1, 0, 2)),
    "transpose tuple": (lambda a: a.transpose((2, 0, 1)), lambda a: a.transpose((2, 0, 1))),
    "T": (lambda a: a.T, lambda a: a.T),
    "mT": (lambda a: a.mT, lambda a: a.mT),
    "astype f32": (lambda a: a.astype("float32"), lambda a: a.astype("float32")),
    "astype int8": (lambda a: a.astype(np.int8), lambda a: a.astype(np.int8)),
    "astype bool": (lambda a: a.astype(bool), lambda a: a.astype(bool)),
    "sum": (lambda a: a.sum(), lambda a: a.sum()),
    "sum axis keepdims": (lambda a: a.sum(axis=(0, 2), keepdims=True),
                          lambda a: a.sum(axis=(0, 2), keepdims=True)),
    "sum dtype": (lambda a: a.sum(1, dtype="float32"), lambda a: a.sum(1, dtype="float32")),
    "mean": (lambda a: a.mean(axis=1), lambda a: a.mean(axis=1)),
    "prod": (lambda a: a.prod(axis=-1), lambda a: a.prod(axis=-1)),
    "var ddof": (lambda a: a.var(axis=2, ddof=1), lambda a: a.var(axis=2, ddof=1)),
    "std": (lambda a: a.std(), lambda a: a.std()),
    "max": (lambda a: a.max(axis=0), lambda a: a.max(axis=0)),
    "min keepdims": (lambda a: a.min(axis=1, keepdims=True), lambda a: a.min(axis=1, keepdims=True)),
    "argmax": (lambda a: a.argmax(), lambda a: a.argmax()),
    "argmin axis": (lambda a: a.argmin(axis=2), lambda a: a.argmin(axis=2)),
    "all": (lambda a: a.all(axis=0), lambda a: a.all(axis=0)),
    "any": (lambda a: (a > 2).any(), lambda a: (a > 2).any()),
    "cumsum": (lambda a: a.cumsum(axis=1), lambda a: a.cumsum(axis=1)),
    "cumprod": (lambda a: a.cumprod(), lambda a: a.cumprod()),
    "ptp": (lambda a: a.ptp(axis=1), lambda a: np.ptp(a, axis=1)),
    "round": (lambda a: a.round(1), lambda a: a.round(1)),
    "round 0": (lambda a: a.round(), lambda a: a.round()),
    "clip": (lambda a: a.clip(-1, 1), lambda a: a.clip(-1, 1)),
    "clip max only": (lambda a: a.clip(max=0.5), lambda a: a.clip(max=0.5)),
    "squeeze": (lambda a: a[:1].squeeze(0), lambda a: a[:1].squeeze(0)),
    "swapaxes": (lambda a: a.swapaxes(0, 2), lambda a: a.swapaxes(0, 2)),
    "repeat": (lambda a: a.repeat(2, axis=1), lambda a: a.repeat(2, axis=1)),
    "ravel": (lambda a: a.ravel(), lambda a: a.ravel()),
    "flatten": (lambda a: a.flatten(), lambda a: a.flatten()),
    "flat": (lambda a: a.flat[5], lambda a: a.flat[5]),
    "diagonal": (lambda a: a.diagonal(0, 1, 2), lambda a: a.diagonal(0, 1, 2)),
    "trace": (lambda a: a.trace(1, 1, 2), lambda a: a.trace(1, 1, 2)),
    "dot": (lambda a: a.dot(np.ones(4)), lambda a: a.dot(np.ones(4))),
    "take": (lambda a: a.take(np.array([3, 0]), axis=2), lambda a: a.take([3, 0], axis=2)),
    "sort": (lambda a: a.sort(axis=0), lambda a: np.sort(a, axis=0)),
    "argsort": (lambda a: a.argsort(axis=1), lambda a: a.argsort(axis=1, kind="stable")),
    "argpartition": (lambda a: a.argpartition(1, axis=1)[:, 1],
                     lambda a: np.argsort(a, axis=1, kind="stable")[:, 1]),
    "searchsorted": (lambda a: a.ravel().searchsorted(0.3), lambda a: a.ravel().searchsorted(0.3)),
    "conj": (lambda a: a.conj(), lambda a: a.conj()),
    "conjugate": (lambda a: a.conjugate(), lambda a: a.conjugate()),
    "real": (lambda a: a.real, lambda a: a.real),
    "imag": (lambda a: a.imag, lambda a: a.imag),
    "view int64": (lambda a: a.view(np.int64), lambda a: a.view(np.int64)),
    "copy": (lambda a: a.copy(), lambda a: a.copy()),
    "builtin round": (lambda a: round(a[0, 0, 0]), lambda a: np.asarray(round(float(a[0, 0, 0])))),
    "builtin round ndigits": (lambda a: round(a, 1), lambda a: a.round(1)),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods_match_numpy(name):
    fn, np_fn = METHODS[name]
    check_against(lambda a: fn(fnp.asarray(a)), np_fn, X)


def test_python_protocols():
    a = fnp.asarray(X)
    assert len(a) == 2 and [np.asarray(r).tolist() for r in a] == X.tolist()
    assert a.tolist() == X.tolist() and a[0, 0, 1].item() == X[0, 0, 1]
    assert bool(a[1, 0, 0] > 0) and int(fnp.asarray(7)) == 7 and float(a[0, 0, 0]) == X[0, 0, 0]
    assert list(range(10))[fnp.asarray(3)] == 3  # __index__
    with pytest.raises(TypeError):
        operator.index(fnp.asarray(1.5))
    with pytest.raises(TypeError, match="len"):
        len(fnp.asarray(1.0))
    assert format(fnp.asarray(2.5), ".2f") == "2.50"
    assert str(a) == str(X)
    assert (a.shape, a.ndim, a.size, a.dtype, a.itemsize, a.nbytes) == \
        (X.shape, X.ndim, X.size, X.dtype, X.itemsize, X.nbytes)
    assert type(round(fnp.asarray(2.5))) is ft.Array and round(fnp.asarray(2.5)).dtype == np.int64
    assert a.__array_namespace__() is fnp


def test_tracer_methods_and_attributes():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype,
                    itemsize=x.itemsize, nbytes=x.nbytes, len=len(x), r=repr(x))
        assert x.copy() is x
        with pytest.raises(TypeError, match="immutable"):
            x[0] = 1.0
        with pytest.raises(TypeError, match="unhashable"):
            hash(x)
        return sum(x) + (x.mT @ x)[0]

    jaxpr = ft.make_jaxpr(f)(X[0])
    ft.check_jaxpr(jaxpr)
    assert seen["shape"] == (3, 4) and seen["ndim"] == 2 and seen["size"] == 12
    assert seen["dtype"] == np.float64 and seen["itemsize"] == 8 and seen["nbytes"] == 96
    assert seen["len"] == 3 and seen["r"].startswith("Traced<f64[3,4]>")
    expected = X[0].sum(0) + (X[0].T @ X[0])[0]
    assert_close(eval_jaxpr(jaxpr, X[0])[0], expected, ulps=4)  # summation order may differ


# ---- NumPy interop ------------------------------------------------------------------------------
def test_asarray_is_zero_copy_and_read_only():
    a = fnp.arange(4.0)
    v = np.asarray(a)
    assert np.shares_memory(v, np.asarray(a)) and not v.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 1.0
    # A dtype change or copy=True gives a private, writable copy.
    w = np.array(a, copy=True)
    w[0] = 5.0
    assert float(a[0]) == 0.0 and np.asarray(a, dtype=np.float32).dtype == np.float32


def test_array_owns_its_buffer():
    src = np.arange(3.0)
    a = fnp.asarray(src)
    src[0] = 99.0  # the caller's buffer stays theirs: the Array took a private copy
    assert float(a[0]) == 0.0


def test_immutable_and_unhashable():
    a = fnp.arange(3)
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        a[0] = 1
    with pytest.raises(AttributeError):
        a.shape = (3, 1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    b = a
    b += 1  # rebinding, never mutation
    assert a.tolist() == [0, 1, 2] and b.tolist() == [1, 2, 3]


def test_pickle_round_trip():
    a = fnp.asarray(np.float32(1.5)) * fnp.ones(3, "float32")
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is ft.Array and repr(b) == repr(a)


def test_numpy_ufuncs_accept_arrays_but_not_tracers():
    a = fnp.arange(3.0)
    r = np.sin(a)
    assert type(r) is np.ndarray and np.array_equal(r, np.sin(np.arange(3.0)))
    with pytest.raises(ft.TracerArrayConversionError):
        ft.make_jaxpr(lambda x: np.sin(x))(np.arange(3.0))


@pytest.mark.parametrize("value,expected", [
    (lambda: fnp.array([1.0, 2.0], dtype="float32"), "Array([1., 2.], dtype=float32)"),
    (lambda: fnp.asarray(2.0), "Array(2., dtype=float64, weak_type=True)"),
    (lambda: fnp.asarray(2), "Array(2, dtype=int64, weak_type=True)"),
    (lambda: fnp.array([[1.5, 2.0], [3.0, 4.0]], dtype="float32"),
     "Array([[1.5, 2. ],\n       [3. , 4. ]], dtype=float32)"),
    (lambda: fnp.zeros((0, 3)), "Array([], shape=(0, 3), dtype=float64)"),
    (lambda: fnp.zeros((0,)), "Array([], shape=(0,), dtype=float64)"),
    (lambda: fnp.arange(3, dtype="uint8"), "Array([0, 1, 2], dtype=uint8)"),
])
def test_repr_like_jax(value, expected):
    """Expected strings are JAX's repr of the same values (with 64-bit types enabled)."""
    assert repr(value()) == expected


def test_no_tracer_class_hides_array_methods():
    """A tracer subclass attribute named like a method (say a ``var`` slot) would shadow it."""
    import importlib
    import pkgutil

    import functrans.transforms
    from functrans.core.trace import Tracer
    from functrans.numpy import array_methods
    for mod in pkgutil.walk_packages(functrans.transforms.__path__, "functrans.transforms."):
        importlib.import_module(mod.name)

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    names = (set(array_methods._METHODS) | set(array_methods._OPERATORS)
             | set(array_methods._REFLECTED) | set(array_methods._UNARY)
             | {"T", "mT", "at", "real", "imag", "flat", "__getitem__"})
    for cls in subclasses(Tracer):
        hidden = sorted(n for n in names if getattr(cls, n, None) is not getattr(Tracer, n))
        assert not hidden, f"{cls.__qualname__} hides {hidden}"


def test_copy_and_deepcopy_of_traced_values_stay_in_their_trace():
    # dataclasses.astuple deep-copies its fields (jax-md unpacks its states so inside jit);
    # the copy is the value, as for arrays, and nothing leaks out of the trace
    import copy

    def f(x):
        y = copy.deepcopy({"a": x})["a"]
        return y * 2.0 + copy.copy(x)

    x = fnp.arange(3.0)
    np.testing.assert_array_equal(ft.jit(f)(x), 3.0 * np.arange(3.0))
    np.testing.assert_array_equal(ft.vmap(f)(x), 3.0 * np.arange(3.0))
    np.testing.assert_array_equal(ft.grad(lambda x: f(x).sum())(x), np.full(3, 3.0))
