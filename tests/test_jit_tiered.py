"""config.jit_tiered: the first call on the interpreter, the kernel compiled in the background.

Tiered jit is the product's default; the suite turns it off (conftest.py) so that jit's other
tests check kernels, and these tests turn it on where they need it.

Tolerances: interpreted calls are the primitives' NumPy impls, so they equal eager evaluation
exactly. Compiled calls use SIMD sin/exp (a few ulp; test_jit.py allows 32 ulp) and otherwise
round like NumPy, so they are compared to eager with rtol 32 * eps(float64).
"""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.jit.tiered import Tiered
from functrans.transforms.lowering.compile import Kernel
from functrans.transforms.lowering.emit import LoweringError
from functrans.transforms.native.program import NativeProgram

RTOL = 32 * np.finfo(np.float64).eps


@pytest.fixture(autouse=True)
def _empty_disk_cache(tmp_path, monkeypatch):
    """Each test compiles into an empty kernel cache: a program whose code is built already
    (on disk, or earlier in this process) compiles before its first call instead of being
    interpreted. Tests of the tiered path use programs no other test compiles."""
    monkeypatch.setenv("FUNCTRANS_CACHE_DIR", str(tmp_path / "cache"))


def _f(x, y):
    return fnp.sum(fnp.sin(x) * y, axis=0) + fnp.exp(-x[0])


def _executable(jitted, *args):
    return executable_for(jitted.lower(*args).jaxpr, jitted.name)


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((5, 3)), rng.standard_normal(3)


_DEFAULT_CHILD = textwrap.dedent("""
    import numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.transforms.jit.executable import executable_for
    f = ft.jit(lambda x: fnp.exp(x) * 2.0)
    x = np.linspace(0, 1, 7)
    y = f(x)
    print(ft.config.jit_tiered, type(executable_for(f.trace(x).jaxpr, "f")).__name__)
""")


def _run(code, cache, timeout=300, **env):
    env = dict({k: v for k, v in os.environ.items() if k != "FUNCTRANS_JIT_TIERED"},
               FUNCTRANS_CACHE_DIR=str(cache), **env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_on_by_default_and_switched_off_by_the_environment(tmp_path):
    assert _run(_DEFAULT_CHILD, tmp_path / "a") == ["True", "Tiered"]
    assert _run(_DEFAULT_CHILD, tmp_path / "b", FUNCTRANS_JIT_TIERED="0") == \
        ["False", "NativeProgram"]


def test_exit_waits_for_the_compile_so_the_next_run_loads_the_kernel(tmp_path):
    """A script that calls a new program once and exits still leaves its kernel in the disk
    cache: the compiling thread is not a daemon."""
    assert _run(_DEFAULT_CHILD, tmp_path) == ["True", "Tiered"]
    kernels = tmp_path / "kernels-0.1.0"
    assert list(kernels.rglob("ftp_*.o")), sorted(p.name for p in kernels.rglob("*"))


def test_off_compiles_before_the_first_call_returns():
    assert ft.config.jit_tiered is False  # the suite's setting (conftest.py)
    jf = ft.jit(_f)
    x, y = _args()
    np.testing.assert_allclose(jf(x, y), _f(x, y), rtol=RTOL)
    exe = _executable(jf, x, y)
    assert type(exe) is NativeProgram and exe.checked


def test_first_call_interpreted_then_compiled():
    x, y = _args()
    want = _f(x, y) * 2.0
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: _f(a, b) * 2.0)
        first = jf(x, y)
        exe = _executable(jf, x, y)
    assert isinstance(exe, Tiered)
    np.testing.assert_array_equal(first, want)  # the interpreter: eager's own arithmetic
    assert exe.wait(timeout=600)
    assert exe.kernel.checked  # compiled for the first call's argument types
    later = jf(x, y)
    np.testing.assert_allclose(later, want, rtol=RTOL)
    assert later.dtype == first.dtype and later.shape == first.shape
    assert jf.lower(x, y).as_text() == exe.kernel.text  # the source is there from the start


def test_block_until_ready_waits_for_the_kernel_then_calls_skip_the_tiers(monkeypatch):
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: _f(a, b) + 1.0)
        first = jf(x, y)
        exe = _executable(jf, x, y)
        assert first.block_until_ready() is first
        assert exe.wait(timeout=0) and exe.kernel.checked  # ready when it returned
        tier_calls = []
        tiered_call = Tiered.__call__
        monkeypatch.setattr(Tiered, "__call__",
                            lambda self, *a: tier_calls.append(1) or tiered_call(self, *a))
        for _ in range(3):  # the slow path once, then jit's fast path: the kernel itself
            np.testing.assert_allclose(jf(x, y), _f(x, y) + 1.0, rtol=RTOL)
    assert tier_calls == []


def test_block_until_ready_waits_for_every_compile_in_flight():
    """Whatever computed the arrays (a pytree of them, an unrelated array, pmap's shards),
    block_until_ready returns once no kernel is compiling in the background."""
    from functrans.core import background
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: {"same": a, "new": _f(a, b) * 2.5})
        out = jf(fnp.asarray(x), y)
        exe = _executable(jf, fnp.asarray(x), y)
        assert ft.block_until_ready(out) is out
        assert exe.wait(timeout=0) and not background._running
        g = ft.jit(lambda a: fnp.cos(a) - 4.0)
        g(x)
        exe = _executable(g, x)
        fnp.ones(2).block_until_ready()  # not computed by g: still waits
        assert exe.wait(timeout=0) and not background._running


def test_interpreted_calls_return_what_the_kernel_returns():
    """Before the kernel is ready: arguments converted to the traced dtypes (a float64 array in
    32-bit mode runs as float32), weak types kept, and no output aliasing a caller's array."""
    with ft.config.override(jit_tiered=True, enable_x64=False):
        x = np.linspace(0, 1, 4)  # float64, traced as float32
        scaled = ft.jit(lambda v, s: v * s)
        got = scaled(x, 3.0)
        assert got.dtype == np.float32 and not got.weak_type
        np.testing.assert_array_equal(got, x.astype(np.float32) * np.float32(3.0))
    with ft.config.override(jit_tiered=True):
        got = ft.jit(lambda s: s * 2 + 1)(2.0)
        assert (got.dtype, got.weak_type) == (np.float64, True) and float(got) == 5.0
        buf = np.arange(3.0)
        same = ft.jit(lambda v: v)(buf)
        buf[0] = 99.0  # the caller's buffer is theirs: the output must not change with it
        assert np.asarray(same).tolist() == [0.0, 1.0, 2.0]


def _log_of_negative(x):
    return fnp.log(fnp.sin(x) - 2.0)  # the NaN comes from here


def test_debug_nans_names_the_programs_line_on_interpreted_calls():
    line = _log_of_negative.__code__.co_firstlineno + 1
    with ft.config.override(jit_tiered=True, debug_nans=True):
        f = ft.jit(_log_of_negative)
        with pytest.raises(FloatingPointError, match=rf"log at test_jit_tiered.py:{line} \(in "
                                                     rf"_log_of_negative\) inside jit"):
            f(1.0)


def test_lower_compile_compiles_now():
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: _f(a, b) * 5.0)
        compiled = jf.lower(x, y).compile()
        exe = _executable(jf, x, y)
    assert isinstance(exe, Tiered) and exe.wait(timeout=0) and exe.kernel.checked
    np.testing.assert_allclose(compiled(x, y), _f(x, y) * 5.0, rtol=RTOL)


def test_tiered_under_transformations():
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        g = ft.grad(lambda a: fnp.sum(ft.jit(_f)(a, y)))
        got = [g(x) for _ in range(2)]
    want = ft.grad(lambda a: fnp.sum(_f(a, y)))(x)
    for value in got:
        np.testing.assert_allclose(value, want, rtol=RTOL)


def test_short_loops_are_interpreted_long_and_while_loops_compile_first():
    def short(x):
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0 + 1.5, x)  # a scan of 3 steps

    def long(x):
        return lax.fori_loop(0, 50_000, lambda i, c: c * 0.5 + 1.0, x)

    def until(x):
        return lax.while_loop(lambda c: c[0] < 10.0, lambda c: c * 2.0 + 1.0, x)

    x = np.arange(4.0)
    with ft.config.override(jit_tiered=True):
        for fun, kind in ((short, Tiered), (long, NativeProgram), (until, NativeProgram)):
            jf = ft.jit(fun)
            np.testing.assert_allclose(jf(x), fun(x), rtol=RTOL)
            assert type(_executable(jf, x)) is kind, fun.__name__


def test_interpreted_cost_counts_loop_bodies_per_step():
    from functrans.transforms.jit.tiered import INTERPRET_BUDGET, interpreted_cost

    def scan_of(n):
        return ft.make_jaxpr(lambda c: lax.scan(lambda c, _: (fnp.sin(c) * 2.0, None), c,
                                                None, length=n)[0])(1.0)
    per_step = interpreted_cost(scan_of(2)) - interpreted_cost(scan_of(1))
    assert per_step == 2  # sin and mul
    assert interpreted_cost(scan_of(100)) == interpreted_cost(scan_of(1)) + 99 * per_step
    branches = ft.make_jaxpr(lambda p, v: lax.cond(p, lambda u: fnp.sin(u) * u, fnp.cos, v))
    assert interpreted_cost(branches(True, 1.0)) <= 4  # the dearer branch, plus the cond
    assert interpreted_cost(scan_of(INTERPRET_BUDGET)) > INTERPRET_BUDGET


def test_background_failure_warns_and_keeps_interpreting(monkeypatch):
    def fail(self):
        raise LoweringError("jit could not compile 'sin': simulated")
    monkeypatch.setattr(NativeProgram, "compile", fail)
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: _f(a, b) * 3.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = jf(x, y)
            exe = _executable(jf, x, y)
            assert exe.wait(timeout=600) is False
    assert any("simulated" in str(w.message) for w in caught)
    assert isinstance(exe.error, LoweringError)
    want = _f(x, y) * 3.0
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(jf(x, y), want)  # still the interpreter, still right


def test_programs_whose_kernels_are_built_compile_first():
    """A new batch size of a program that ran: its driver is new, and so is a kernel whose
    constant depends on the batch (the mean's gradient, 1/batch); compiling them is quicker
    than interpreting a call, so the call compiles first (no interpreted tier). The first
    batch size's program is mostly new kernels (two loops with constants no other test
    uses, beside two products whose kernels other programs share)."""
    def loss(w, a):
        return fnp.mean(fnp.tanh(a @ w * 0.3125) + 7.25) + fnp.mean(fnp.sin(w * 0.40625))

    with ft.config.override(jit_tiered=True):
        jf = ft.jit(ft.grad(loss))
        w = np.random.default_rng(2).standard_normal((64, 64))
        small = np.random.default_rng(0).standard_normal((32, 64))
        jf(w, small).block_until_ready()
        bigger = np.random.default_rng(1).standard_normal((48, 64))
        got = jf(w, bigger)
        exe = _executable(jf, w, bigger)
    assert isinstance(_executable(jf, w, small), Tiered)  # new kernels: interpreted first
    assert type(exe) is NativeProgram and exe.checked
    old = {k.symbol() for r in _executable(jf, w, small).kernel.runs for k in r.kernels}
    assert any(k.symbol() not in old for r in exe.runs for k in r.kernels)
    # BLAS sums the 64-term products in another order than eager NumPy: up to 64 roundings
    # of the largest term, which may cancel (hence an absolute bound)
    want = ft.grad(loss)(w, bigger)
    np.testing.assert_allclose(got, want, rtol=0, atol=64 * RTOL * np.abs(want).max())


def test_programs_slow_to_interpret_compile_first():
    """A new program whose interpreted call would take about as long as its compile (here:
    a chain of elementwise steps over 1M elements, one fused kernel) compiles first; the
    same chain over 100 elements is interpreted while it compiles."""
    def chain(c):
        def f(a):
            for k in range(8):
                a = fnp.sin(a) * c + k
            return a
        return f

    with ft.config.override(jit_tiered=True):
        small, large = np.linspace(0, 1, 100), np.linspace(0, 1, 1 << 20)
        jf_small, jf_large = ft.jit(chain(0.4375)), ft.jit(chain(0.2875))
        np.testing.assert_allclose(jf_small(small), chain(0.4375)(small), rtol=RTOL)
        got = jf_large(large)
        assert isinstance(_executable(jf_small, small), Tiered)
        exe = _executable(jf_large, large)
    assert type(exe) is NativeProgram and exe.checked
    np.testing.assert_allclose(got, chain(0.2875)(large), rtol=RTOL)


def test_flag_name_is_checked():
    with pytest.raises(AttributeError, match="jit_tiered"):
        ft.config.update("jit_tierd", True)


def test_pmap_and_shard_map_under_tiered_jit_agree_with_vmap():
    """Per-shard programs (with a collective) run tiered on the device threads too, and
    block_until_ready on pmap's results waits for their kernels."""
    from functrans.core import background
    from functrans.sharding import Mesh, PartitionSpec as P
    x = np.arange(8.0).reshape(2, 4)

    def per_shard(v):
        return fnp.sin(v) * 2.0 + lax.psum(v, "i")

    want = ft.vmap(per_shard, axis_name="i")(x)
    with ft.config.override(jit_tiered=True, num_cpu_devices=2):
        mapped = ft.pmap(per_shard, "i")
        for _ in range(3):  # interpreted while compiling, then compiled
            np.testing.assert_allclose(ft.block_until_ready(mapped(x)), want, rtol=RTOL)
            assert not background._running
        mesh = Mesh(np.array(ft.devices()[:2]), ("i",))
        sharded = ft.jit(ft.shard_map(lambda v: fnp.sin(v) * 2.0 + lax.psum(v, "i"), mesh=mesh,
                                      in_specs=P("i"), out_specs=P("i")))
        for _ in range(3):
            np.testing.assert_allclose(sharded(x.reshape(8)), want.reshape(8), rtol=RTOL)


def test_calls_made_while_native_code_compiles_are_interpreted(monkeypatch):
    """Native code compiles mostly inside LLVM, outside the GIL: calls made meanwhile run on
    the interpreter instead of waiting (a training loop never stops for the compiler); once
    it is compiled, calls run it."""
    import time
    from functrans.transforms.jit import tiered
    compile_, interpreted = NativeProgram.compile, []

    def slow_compile(self):
        time.sleep(0.5)  # still compiling when the next calls come
        compile_(self)

    def counting_eval(jaxpr, *args):
        interpreted.append(1)
        return eval_jaxpr(jaxpr, *args)

    from functrans.core.eval import eval_jaxpr
    monkeypatch.setattr(NativeProgram, "compile", slow_compile)
    monkeypatch.setattr(tiered, "eval_jaxpr", counting_eval)
    x, y = _args()
    with ft.config.override(jit_tiered=True):
        jf = ft.jit(lambda a, b: _f(a, b) - 1.0)
        calls = [jf(x, y) for _ in range(3)]
        exe = _executable(jf, x, y)
        assert not exe.wait(timeout=0) and len(interpreted) == 3  # none waited
        assert exe.wait(timeout=600)
        compiled = jf(x, y)
    assert len(interpreted) == 3
    for got in calls:
        np.testing.assert_array_equal(got, _f(x, y) - 1.0)
    np.testing.assert_allclose(compiled, calls[0], rtol=RTOL)


def test_numba_kernels_interpret_only_the_first_call_later_ones_wait(monkeypatch):
    """With the Numba code generator, whose compile holds the GIL most of the time, calls
    interpreted meanwhile would compete with it for the GIL and the cores, so a call made
    before the kernel is ready waits for it."""
    import time
    from functrans.transforms.jit import tiered
    compile_for, interpreted = Kernel.compile_for, []

    def slow_compile(self, args):
        time.sleep(0.3)  # a compile still running when the second call comes
        compile_for(self, args)

    def counting_eval(jaxpr, *args):
        interpreted.append(1)
        return eval_jaxpr(jaxpr, *args)

    from functrans.core.eval import eval_jaxpr
    monkeypatch.setattr(Kernel, "compile_for", slow_compile)
    monkeypatch.setattr(tiered, "eval_jaxpr", counting_eval)
    x, y = _args()
    with ft.config.override(jit_tiered=True, jit_codegen="numba"):
        jf = ft.jit(lambda a, b: _f(a, b) - 1.0)
        first = jf(x, y)
        exe = _executable(jf, x, y)
        assert not exe.wait(timeout=0)  # still compiling
        second = jf(x, y)
        assert exe.wait(timeout=0)  # the second call waited for the kernel
    assert interpreted == [1]
    np.testing.assert_array_equal(first, _f(x, y) - 1.0)
    np.testing.assert_allclose(second, first, rtol=RTOL)


_FORK_CHILD = textwrap.dedent("""
    import os, time, numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.transforms.native.program import NativeProgram
    compile_ = NativeProgram.compile
    def slow_compile(self):
        time.sleep(1.0)  # the fork below comes while the kernel compiles
        compile_(self)
    NativeProgram.compile = slow_compile
    f = ft.jit(lambda v: fnp.sin(v) * 3.0)
    x = np.linspace(0, 1, 5)
    f(x)
    pid = os.fork()
    if pid == 0:
        ok = all(np.allclose(f(x), np.sin(x) * 3.0) for _ in range(2))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    print(os.WEXITSTATUS(status), bool(np.allclose(f(x), np.sin(x) * 3.0)))
""")


def test_fork_while_a_kernel_compiles_does_not_hang_the_child(tmp_path):
    """A forked child has none of its parent's threads: os.fork waits for background
    compiles, so the child's calls neither wait forever nor find Numba's lock taken."""
    out = _run(_FORK_CHILD, tmp_path, timeout=120)  # a hang raises TimeoutExpired
    assert out == ["0", "True"]
