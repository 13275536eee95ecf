"""jit's API: compositions with grad/vmap, static arguments, caching (in memory and on disk,
across processes), lower/compile, thread safety, and clear errors."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


def f(x, y):
    return fnp.sum(fnp.tanh(x @ y) ** 2) + fnp.max(x)


X = np.random.default_rng(0).standard_normal((3, 4))
Y = np.random.default_rng(1).standard_normal((4, 2))


@pytest.mark.parametrize("transform", [
    lambda g: ft.grad(ft.jit(g)), lambda g: ft.jit(ft.grad(g)),
    lambda g: ft.jit(ft.grad(ft.jit(g))), lambda g: ft.grad(ft.jit(ft.jit(g)))])
def test_jit_and_grad_compose(transform):
    np.testing.assert_allclose(transform(f)(X, Y), ft.grad(f)(X, Y), rtol=1e-12)


def test_jit_and_vmap_compose():
    xs = np.stack([X, 2 * X])
    want = np.stack([np.asarray(f(x, Y)) for x in xs])
    for g in (ft.vmap(ft.jit(f), (0, None)), ft.jit(ft.vmap(f, (0, None))),
              ft.jit(ft.vmap(ft.jit(f), (0, None)))):
        np.testing.assert_allclose(g(xs, Y), want, rtol=1e-12)
    per_ex = ft.jit(ft.vmap(ft.grad(f), (0, None)))(xs, Y)
    np.testing.assert_allclose(per_ex, np.stack([ft.grad(f)(x, Y) for x in xs]), rtol=1e-12)


def test_jit_of_higher_order_and_custom_rules():
    g = ft.jit(ft.hessian(lambda x: fnp.sum(fnp.sin(x) * x ** 2)))
    x = np.array([0.1, 0.7])
    np.testing.assert_allclose(g(x), ft.hessian(lambda x: fnp.sum(fnp.sin(x) * x ** 2))(x),
                               rtol=1e-12)
    clipped = ft.custom_vjp(lambda x: x)
    clipped.defvjp(lambda x: (x, None), lambda r, g: (fnp.clip(g, -1, 1),))
    np.testing.assert_array_equal(ft.jit(ft.grad(lambda x: fnp.sum(clipped(x) * 5)))(x),
                                  [1.0, 1.0])
    remat = ft.jit(ft.grad(lambda x: fnp.sum(ft.checkpoint(fnp.sin)(x) ** 2)))
    np.testing.assert_allclose(remat(x), 2 * np.sin(x) * np.cos(x), rtol=1e-12)


def test_trace_once_per_signature_and_static_args():
    calls = []

    def h(x, n, *, mode):
        calls.append((np.shape(x), n, mode))
        return x * n if mode == "mul" else x + n

    g = ft.jit(h, static_argnums=1, static_argnames="mode")
    assert float(g(2.0, 3, mode="mul")) == 6.0
    assert float(g(5.0, 3, mode="mul")) == 15.0  # same signature: no retrace
    assert len(calls) == 1
    assert float(g(5.0, 4, mode="mul")) == 20.0  # new static value: retrace
    assert float(g(5.0, 4, mode="add")) == 9.0
    g(np.ones(3), 4, mode="add")  # new shape
    g(np.ones(3, np.float32), 4, mode="add")  # new dtype
    g(np.ones((3,)), 4, mode="add")
    assert len(calls) == 5
    assert g.cache_size() == 5


def test_pytree_arguments_and_structure_changes_retrace():
    g = ft.jit(lambda p: p["a"] * p["b"][0])
    assert float(g({"a": 2.0, "b": (3.0,)})) == 6.0
    assert float(g({"a": 2.0, "b": (4.0,)})) == 8.0
    assert g.cache_size() == 1
    assert float(g({"a": 2.0, "b": (4.0, 1.0)})) == 8.0  # a different structure
    assert g.cache_size() == 2


def test_cache_size_is_bounded():
    g = ft.jit(lambda x, n: x + n, static_argnums=1)
    with ft.config.override(jit_cache_size=4):
        for n in range(10):
            g(1.0, n)
        assert g.cache_size() == 4


def test_lower_and_compile():
    lowered = ft.jit(lambda x: fnp.sin(x) * 2.0).lower(np.ones(3, np.float32))
    text = lowered.as_text()  # the native code: the driver's LLVM IR, then its kernels'
    assert "define void @ftp_" in text and "sin" in text and "fmul" in text
    with ft.config.override(jit_codegen="numba"):
        numba_text = ft.jit(lambda x: fnp.sin(x) * 2.0).lower(np.ones(3, np.float32)).as_text()
    assert "@nb.njit" in numba_text and "fm.sin" in numba_text and "def kernel" in numba_text
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(np.full(3, 0.5, np.float32)), np.sin(0.5) * 2, rtol=1e-6)
    with pytest.raises(TypeError, match="argument types differ"):
        compiled(np.ones(4, np.float32))
    with pytest.raises(NotImplementedError, match="XLA-only"):  # haiku's tests read HLO
        lowered.compiler_ir(dialect="hlo")


def test_compile_builds_the_machine_code_once_for_every_argument_kind(monkeypatch):
    """``lower().compile()`` compiles (the first call then runs at once), and NumPy arrays
    (writable), functrans Arrays (read-only) and strided views all run that one
    specialization: a training loop passing NumPy data with Array parameters compiles once.
    Compile errors surface at compile()."""
    from functrans.transforms.jit.executable import executable_for
    from functrans.transforms.native import engine
    f = ft.jit(lambda x, s: fnp.tanh(x) * s + 0.5)
    x = np.linspace(-1, 1, 12)
    lowered = f.lower(x, 2.0)
    compiled = lowered.compile()
    assert executable_for(lowered.jaxpr, f.name).checked  # built by compile(), before a call
    built = dict(engine.stats)
    # The kernel's SIMD tanh is within test_jit's 32-ulp bound; terms are at most 3.5 in
    # magnitude, so the absolute error stays below 32 eps * 3.5 (results cross zero).
    atol = 32 * np.finfo(np.float64).eps * 3.5
    for arg in (x, fnp.asarray(x), np.linspace(-1, 1, 24)[::2]):
        np.testing.assert_allclose(compiled(arg, 2.0), np.tanh(arg) * 2 + 0.5, rtol=0, atol=atol)
        np.testing.assert_allclose(f(arg, 3.0), np.tanh(arg) * 3 + 0.5, rtol=0, atol=atol)
    assert engine.stats == built  # no call compiled or loaded anything
    assert x.flags.writeable  # the caller's array is left as it was

    _break_cos(monkeypatch)
    with pytest.raises(NotImplementedError, match=r"'cos'"):
        ft.jit(lambda v: fnp.cos(v) + 2.0).lower(x).compile()


def _break_cos(monkeypatch):
    """Make Numba fail on cos: its rule calls an undefined function (and the native code
    generator compiles that rule with Numba instead of writing cos itself)."""
    from functrans.transforms.lowering import scalar
    from functrans.transforms.native import scalar as native_scalar
    monkeypatch.setitem(scalar.scalar_rules, "cos", lambda ctx, a, i, o: f"undefined_fn({a[0]})")
    monkeypatch.delitem(native_scalar.native_rules, "cos")


def test_threads_compile_once_and_agree():
    calls = []

    def h(x):
        calls.append(1)
        return fnp.cumsum(fnp.exp(x) * 3.0)

    g = ft.jit(h)
    x = np.linspace(0, 1, 1000)
    results, errors = [None] * 8, []
    barrier = threading.Barrier(8)

    def run(i):
        try:
            barrier.wait()
            results[i] = np.asarray(g(x))
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 1
    for r in results:
        np.testing.assert_allclose(r, np.cumsum(np.exp(x) * 3.0), rtol=1e-12)


_CHILD = textwrap.dedent("""
    import numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.transforms.native import engine
    # sin and tanh: native code; sort: a Numba kernel (the native backend leaves it to Numba)
    g = ft.jit(lambda x: (fnp.sum(fnp.tanh(x) * fnp.sin(x) + x * x * 0.5), fnp.sort(x)))
    x = np.linspace(1, 0, 100, dtype=np.float32)
    print(float(g(x)[0]), float(g(x)[1][3]))
    print(engine.stats["from_disk"], engine.stats["compiled"], engine.stats["rebuilt"])
""")


def _run_child(cache):
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-W", "always", "-c", _CHILD], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    values, counts = out.stdout.split("\n")[:2]
    return tuple(map(float, values.split())), tuple(map(int, counts.split())), out.stderr


def test_disk_cache_warms_a_second_process(tmp_path):
    v1, (disk1, compiled1, _), _ = _run_child(tmp_path)
    assert disk1 == 0 and compiled1 > 0  # the first process compiles
    v2, (disk2, compiled2, _), _ = _run_child(tmp_path)
    assert disk2 == compiled1 and compiled2 == 0  # the second loads the machine code
    assert v1 == v2
    assert oct(os.stat(tmp_path / "kernels-0.1.0").st_mode & 0o777) == "0o700"
    assert list((tmp_path / "kernels-0.1.0").rglob("ft_*.nbi"))  # the Numba kernel's cache


def test_corrupt_cache_entries_are_rebuilt(tmp_path):
    """Truncated or flipped object files, Numba's index and data files, and a kernel module
    replaced by other code: each is detected, discarded with a warning (never executed) and
    rebuilt; results are unchanged."""
    v1, _, _ = _run_child(tmp_path)
    root = tmp_path / "kernels-0.1.0"
    objects = sorted((root / "native").glob("*.o"))
    numba_files = sorted(root.rglob("ft_*.nbi")) + sorted(root.rglob("ft_*.nbc"))
    modules = sorted(root.glob("ft_*.py"))
    assert objects and numba_files and modules
    for k, path in enumerate(objects + numba_files):
        data = bytearray(path.read_bytes())
        if k % 2:
            data[len(data) // 2] ^= 0xFF  # a flipped byte
            path.write_bytes(bytes(data))
        else:
            path.write_bytes(bytes(data[:len(data) // 2]))  # truncated
    for m in modules:  # a foreign/corrupt module must not be executed
        m.write_text("raise SystemExit('executed a corrupt cache entry')\n")
    v2, (_, compiled, rebuilt), stderr = _run_child(tmp_path)
    assert v2 == v1
    assert rebuilt == len(objects) and compiled >= len(objects)
    assert "discarding a corrupt compiled-code cache entry" in stderr
    assert "discarding a corrupt Numba cache entry" in stderr
    assert "Generated by functrans" in modules[0].read_text()
    v3, (disk, compiled3, rebuilt3), _ = _run_child(tmp_path)  # rebuilt entries are good
    assert v3 == v1 and compiled3 == rebuilt3 == 0 and disk > 0


# ---- bad input ------------------------------------------------------------------------------------
def test_non_hashable_static_argument_is_named():
    g = ft.jit(lambda x, shape: fnp.zeros(shape) + x, static_argnums=1)
    with pytest.raises(TypeError, match=r"static argument 1 must be hashable.*list"):
        g(1.0, [2, 3])
    assert g(1.0, (2, 3)).shape == (2, 3)


def test_python_control_flow_on_traced_value_names_the_line():
    def bad(x):
        if x > 0:  # the error must point here
            return x
        return -x

    with pytest.raises(ft.ConcretizationTypeError, match=r"test_jit_api.py:\d+ \(in bad\)") as e:
        ft.jit(bad)(1.0)
    assert "lax.cond" in str(e.value)


def test_lowering_errors_name_the_primitive_and_line():
    clipped = ft.custom_vjp(lambda x: x * 2)
    clipped.defvjp(lambda x: (x * 2, None), lambda r, g: (g,))

    def fwd_mode(x):
        return ft.jvp(clipped, (x,), (x,))[1]  # forward mode of a custom_vjp function

    with pytest.raises(NotImplementedError, match=r"custom_lin.*test_jit_api.py:\d+"):
        ft.jit(fwd_mode)(1.0)


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_numba_errors_are_reported_with_the_equation(monkeypatch, codegen):
    _break_cos(monkeypatch)

    def uses_cos(x):
        return fnp.cos(x) + 1.0

    with ft.config.override(jit_codegen=codegen):
        with pytest.raises(NotImplementedError, match=r"'cos' \(from test_jit_api.py:\d+ \(in "
                                                      r"uses_cos\)\)"):
            ft.jit(uses_cos)(np.ones(3) * 0.25)


def test_disable_jit_runs_eagerly():
    seen = []
    g = ft.jit(lambda x: seen.append(type(x)) or x * 2)
    with ft.config.override(disable_jit=True):
        assert float(g(1.5)) == 3.0
    assert seen == [float]


def test_float16_runs_on_the_reference_interpreter():
    x = np.array([0.1, 2.0, -3.0], np.float16)
    g = ft.jit(lambda x: fnp.exp(x) * x)
    np.testing.assert_array_equal(g(x), np.exp(x) * x)
    assert g(x).dtype == np.float16


def test_outputs_do_not_alias_caller_numpy_arrays():
    x = np.arange(4.0)
    y = ft.jit(lambda v: v)(x)
    x[0] = 100.0
    assert float(y[0]) == 0.0
    lax.stop_gradient(y)
