"""jit's fast path (``transforms/jit/fast_path.py``): calls after the first one, with every kind
of leaf, return what the general path returns (values, dtypes, weak types), run the code the
first call compiled (nothing is compiled again), and never hand out a writable or aliased
buffer. Values are compared exactly: both paths run the same compiled code. Both code
generators are checked: the native one (the default) and the Numba one, whose kernels are
specialized by Numba per argument type (one specialization must serve every leaf kind)."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.jit.fast_path import runner
from functrans.transforms.lowering.compile import Kernel
from functrans.transforms.native import engine
from functrans.transforms.native.program import NativeProgram


def _strided():
    a = fnp.asarray(np.arange(12.0).reshape(3, 4)).T  # a transposed view: not C-contiguous
    assert not np.asarray(a).flags.c_contiguous
    return a


LEAVES = {
    "python float": lambda: 1.5,
    "python int": lambda: 3,
    "python bool": lambda: True,
    "python complex": lambda: 1.0 + 2.0j,
    "numpy float32": lambda: np.float32(1.25),
    "numpy float64": lambda: np.float64(-2.5),
    "numpy int32": lambda: np.int32(7),
    "numpy bool": lambda: np.bool_(False),
    "0-d Array": lambda: fnp.asarray(0.75),
    "0-d NumPy array": lambda: np.array(0.5, np.float32),
    "weak 0-d Array": lambda: ft.jit(lambda v: v * 1.0)(2.0),
    "float32 Array": lambda: fnp.arange(5, dtype=np.float32),
    "strided Array": _strided,
    "int Array": lambda: fnp.arange(4),
}


def _program(v):
    return v * 2 + 1, fnp.sum(v)


@pytest.mark.parametrize("codegen", ["native", "numba"])
@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("kind", list(LEAVES))
def test_fast_calls_return_what_the_general_call_returns(kind, x64, codegen):
    with ft.config.override(enable_x64=x64, jit_codegen=codegen):
        x = LEAVES[kind]()
        f = ft.jit(_program)
        first = f(x)  # traced, compiled, run by the general path; the fast runner is kept
        assert len(f._fast) == 1
        kernel = executable_for(f.lower(x).jaxpr, f.name)
        assert type(kernel) is (NativeProgram if codegen == "native" else Kernel)
        compiled = engine.stats["compiled"]
        for _ in range(2):
            again = f(x)
            for a, b in zip(again, first):
                assert (a.dtype, a.weak_type, a.shape) == (b.dtype, b.weak_type, b.shape)
                np.testing.assert_array_equal(a, b)
                assert not np.asarray(a).flags.writeable
        assert engine.stats["compiled"] == compiled  # nothing compiled for the later calls
        if codegen == "numba":
            assert len(kernel.kernel.signatures) == 1, kernel.kernel.signatures


def test_native_fast_path_calls_the_compiled_driver_directly(monkeypatch):
    """After the first call, the fast runner calls the driver's entry point itself, not the
    executable's general ``__call__``."""
    f = ft.jit(lambda v, s: fnp.tanh(v) * s)
    x = np.linspace(-1, 1, 6)
    kinds = (2.0, np.float64(2.0), fnp.asarray(2.0))
    first = [f(x, s) for s in kinds]  # each leaf kind's first call keeps its runner
    general = []
    original = NativeProgram.__call__
    monkeypatch.setattr(NativeProgram, "__call__",
                        lambda self, *a: general.append(1) or original(self, *a))
    for s, want in zip(kinds, first):
        np.testing.assert_array_equal(f(x, s), want)
    assert general == []


def test_parallel_drivers_take_the_fast_path_and_the_regions_lock(monkeypatch):
    """A program with parallel loops (2^19 elements) runs from the fast path too; when
    Numba's workqueue layer is in use (``parallel_regions.lock`` set), it holds the lock."""
    import threading

    from functrans.transforms.lowering.compile import parallel_regions
    f = ft.jit(lambda v: fnp.sin(v) * 2.0 + 1.0)
    x = fnp.asarray(np.linspace(-1, 1, 1 << 19))
    first = f(x)
    assert executable_for(ft.make_jaxpr(lambda v: fnp.sin(v) * 2.0 + 1.0)(x).jaxpr,
                          "f").single.parallel
    general = []
    original = NativeProgram.__call__
    monkeypatch.setattr(NativeProgram, "__call__",
                        lambda self, *a: general.append(1) or original(self, *a))
    np.testing.assert_array_equal(f(x), first)

    class Counting:
        def __init__(self):
            self.lock, self.entered = threading.Lock(), 0

        def __enter__(self):
            self.entered += 1
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    lock = Counting()
    monkeypatch.setattr(parallel_regions, "lock", lock)
    np.testing.assert_array_equal(f(x), first)
    assert general == [] and lock.entered == 1


def test_namedtuple_states_take_the_fast_path(monkeypatch):
    """Optimizers keep their state in namedtuples (optax's ScaleByAdamState, an empty state):
    a step taking them runs from the fast path, with the general path's results, and a
    namedtuple class registered as a node of its own keeps the general path."""
    import collections

    Adam = collections.namedtuple("Adam", "count mu nu")
    Empty = collections.namedtuple("Empty", "")

    def step(params, state):
        mu = [0.9 * m + g for m, g in zip(state[0].mu, params)]
        return [p - 0.1 * m for p, m in zip(params, mu)], (Adam(state[0].count + 1, mu,
                                                                state[0].nu), state[1])

    params = [np.linspace(0, 1, 5), np.ones((2, 3))]
    state = (Adam(np.int32(0), [np.zeros(5), np.zeros((2, 3))], None), Empty())
    f = ft.jit(step)
    first = f(params, state)
    assert len(f._fast) == 1
    general = []
    original = NativeProgram.__call__
    monkeypatch.setattr(NativeProgram, "__call__",
                        lambda self, *a: general.append(1) or original(self, *a))
    again = f(params, state)
    assert general == []
    assert type(again[1][0]) is Adam and type(again[1][1]) is Empty
    for a, b in zip(ft.tree_util.tree_leaves(again), ft.tree_util.tree_leaves(first)):
        np.testing.assert_array_equal(a, b)

    Own = collections.namedtuple("Own", "a b")
    ft.tree_util.register_pytree_node(Own, lambda o: ((o.b,), o.a), lambda a, c: Own(a, c[0]))
    g = ft.jit(lambda o: o.b * 2)
    assert float(g(Own(3, 1.5))) == 3.0 and len(g._fast) == 0


def test_python_floats_and_numpy_float64_share_one_specialization():
    with ft.config.override(jit_codegen="numba"):
        f = ft.jit(lambda v: v * 3.0)
        kernel = executable_for(f.lower(np.float64(1.0)).jaxpr, f.name)
        for x in (np.float64(1.0), np.float64(2.0), 2.0):
            f(x)
    assert len(kernel.kernel.signatures) == 1


def test_identity_outputs_do_not_alias_a_callers_numpy_array():
    f = ft.jit(lambda v, s: (v, v * s))
    buf = np.arange(3.0)
    for _ in range(3):  # the first call and the later (fast-path) ones
        same, _ = f(buf, 2.0)
        buf[0] += 10.0
        assert np.asarray(same)[0] == buf[0] - 10.0  # a copy made at the call
        assert buf.flags.writeable


def test_a_kernel_before_its_first_call_gets_the_general_caller():
    f = ft.jit(lambda v: v + 1.0)
    kernel = Kernel(f.lower(1.0).optimized_jaxpr, "f")
    assert not kernel.checked
    calls = []
    original = Kernel.__call__

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)

    import functrans.transforms.lowering.compile as compile_module
    try:
        compile_module.Kernel.__call__ = counting
        run = runner(kernel, f.lower(1.0)._entry.out_tree, None, [1.0])
        assert float(run([2.0])) == 3.0
    finally:
        compile_module.Kernel.__call__ = original
    assert calls == [1]


class _Layer:
    """A module-like custom node: two array children and a static name as aux data."""

    def __init__(self, w, b, name):
        self.w, self.b, self.name = w, b, name


ft.tree_util.register_pytree_node(_Layer, lambda m: ((m.w, m.b), m.name),
                                  lambda name, c: _Layer(c[0], c[1], name))


def _apply(layer, x, mode):
    y = x @ layer.w + layer.b
    return (fnp.tanh(y) if mode == "tanh" else y), _Layer(layer.w * 2.0, layer.b, layer.name)


def test_custom_nodes_and_static_arguments_take_the_fast_path(monkeypatch):
    """Modules (custom pytree nodes) beside static arguments, as equinox's filter_jit and
    nnx.jit call jit: after the first call, a runner kept under the structure, the static
    arguments and each leaf's type; another static value or leaf type is another entry."""
    rng = np.random.default_rng(0)
    layer = _Layer(rng.standard_normal((3, 2)), rng.standard_normal(2), "dense")
    x = rng.standard_normal((4, 3))
    f = ft.jit(_apply, static_argnums=2)
    first = f(layer, x, "tanh")
    assert len(f._fast_trees) == 1 and len(f._fast) == 0
    general = []
    original = NativeProgram.__call__
    monkeypatch.setattr(NativeProgram, "__call__",
                        lambda self, *a: general.append(1) or original(self, *a))
    again = f(layer, x, "tanh")
    assert general == [] and type(again[1]) is _Layer and again[1].name == "dense"
    for a, b in zip(ft.tree_util.tree_leaves(again), ft.tree_util.tree_leaves(first)):
        assert (a.dtype, a.weak_type) == (b.dtype, b.weak_type)
        np.testing.assert_array_equal(a, b)
    linear = f(layer, x, "linear")  # another static value: traced, kept apart
    np.testing.assert_array_equal(linear[0], x @ layer.w + layer.b)
    narrow = _Layer(layer.w.astype(np.float32), layer.b.astype(np.float32), "dense")
    assert f(narrow, x, "tanh")[1].w.dtype == np.float32  # another leaf type: traced anew
    assert len(f._fast_trees) == 3 and len(f._cache) == 3
    with pytest.raises(TypeError, match="must be hashable"):  # the general path's message
        f(layer, x, ["tanh"])


def test_constants_and_inputs_returned_take_the_fast_path_as_copies(monkeypatch):
    """A program returning a constant (equinox's marker) and its inputs runs from the fast
    path; each such result is a read-only copy: no result shares a buffer with an argument
    or with another result."""
    f = ft.jit(lambda v, a: (fnp.asarray(0), v, v * 2.0, a, v))
    v, a = fnp.arange(3.0), np.ones(2)
    first = f(v, a)
    general = []
    original = NativeProgram.__call__
    monkeypatch.setattr(NativeProgram, "__call__",
                        lambda self, *a: general.append(1) or original(self, *a))
    for _ in range(2):
        outs = f(v, a)
        assert general == []
        for got, want in zip(outs, first):
            assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type,
                                                              want.shape)
            np.testing.assert_array_equal(got, want)
            assert not np.asarray(got).flags.writeable
        buffers = [np.asarray(o) for o in outs] + [np.asarray(v), a]
        for i, p in enumerate(buffers):
            for q in buffers[i + 1:]:
                assert not np.shares_memory(p, q)


def test_a_broadcast_array_argument_is_made_contiguous_once():
    """``fnp.zeros`` gives a broadcast view: the first call passing it keeps a contiguous,
    read-only copy as the Array's value, so later calls do not copy it again; its values do
    not change, and a NumPy view passed as an argument is left as it is."""
    zeros = fnp.zeros((300, 200), np.float32)
    assert not np.asarray(zeros).flags.c_contiguous
    view = np.broadcast_to(np.float32(2.0), (300, 200))
    f = ft.jit(lambda a, b: a + b)
    for _ in range(3):
        out = f(zeros, view)
        np.testing.assert_array_equal(np.asarray(out), np.full((300, 200), 2.0, np.float32))
    value = zeros._value
    assert value.flags.c_contiguous and not value.flags.writeable
    assert value.shape == (300, 200) and not value.any()
    assert view.strides == (0, 0)
    f(zeros, view)
    assert zeros._value is value  # (the copy is kept)
