"""The cuda backend against the cpu backend, primitive family by primitive family, and under
grad, vmap, control flow, random and pmap. In CI it runs in numba-cuda's simulator (set by
conftest.py), on small shapes: the simulator runs each GPU thread as a Python thread.

Tolerance: the 32-ulp bound of test_jit (libdevice and the simulator's math differ from the
CPU kernels' SIMD math by a few ulp; reductions add in another order); integers, booleans and
PRNG bits must match exactly.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.devices import available_backends
from functrans.core.trace import all_primitives
from functrans.transforms.passes import CALL_PARAMS

from primitive_coverage import COLLECTIVES, primitives_in
from test_jit import CASES, FLOATS, _all_ops, _assert_close, _conversions, _remaining_ops
from test_jit import BINARY_FLOAT, BINARY_INT, UNARY_FLOAT, UNARY_INT

pytestmark = pytest.mark.skipif(
    "cuda" not in available_backends(),
    reason="numba-cuda is not installed (the dev extra installs it)")

from functrans.transforms.cuda import executable as cuda_exec  # noqa: E402


def cuda_jit(f):
    return ft.jit(f, backend="cuda")


def assert_matches_cpu(name, f, args, exact=False, rtol=None):
    want = ft.jit(f, backend="cpu")(*args)
    got = cuda_jit(f)(*args)
    for w, g in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        if rtol is not None:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)
        else:
            _assert_close(name, g, w, exact)
    return got


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_table_program_matches_the_cpu_backend(name):
    f, args = CASES[name]
    assert_matches_cpu(name, f, [fnp.asarray(a) for a in args])


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_elementwise(dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.9, 6).astype(dtype)
    y = rng.uniform(0.1, 0.9, 6).astype(dtype)
    assert_matches_cpu(dtype, _all_ops(UNARY_FLOAT, BINARY_FLOAT), (x, y))


@pytest.mark.parametrize("dtype", ("int32", "uint8", "int64", "bool"))
def test_integer_and_bool_elementwise(dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-5, 6, 6).astype(dtype)
    y = rng.integers(1, 6, 6).astype(dtype)
    if dtype == "bool":
        assert_matches_cpu(dtype, lambda a, b: {"and": a & b, "or": a | b, "xor": a ^ b, "not": ~a,
                                     "eq": a == b, "sel": lax.select(a, a, b)}, (x, y), True)
        return
    unary = [n for n in UNARY_INT if not (n == "neg" and dtype.startswith("u"))]
    assert_matches_cpu(dtype, _all_ops(unary, BINARY_INT), (x, y), True)


def _complex_ops(z, w):
    return {"exp": fnp.exp(z), "log": fnp.log(z), "log1p": fnp.log1p(z), "expm1": fnp.expm1(z),
            "sqrt": fnp.sqrt(z), "sin": fnp.sin(z), "tanh": fnp.tanh(z), "asin": fnp.arcsin(z),
            "acosh": fnp.arccosh(z), "abs": fnp.abs(z), "sign": fnp.sign(z), "div": z / w,
            "pow": z ** w, "square": z ** 2, "parts": lax.complex(z.imag, z.real).conj(),
            "eq": z == w, "sum": fnp.sum(z), "prod": fnp.prod(w), "matmul": fnp.outer(z, w),
            "real": fnp.real(z * w).astype("complex64")}


@pytest.mark.parametrize("dtype", ("complex64", "complex128"))
def test_complex_elementwise_reductions_and_products(dtype):
    rng = np.random.default_rng(5)
    z, w = ((rng.uniform(0.2, 2, 6) + 1j * rng.uniform(0.2, 2, 6)).astype(dtype)
            for _ in range(2))
    assert_matches_cpu(dtype, _complex_ops, (z, w))


def test_conversions_and_remaining_primitives():
    x = np.random.default_rng(2).uniform(0, 120, 6).astype("float32")
    assert_matches_cpu("conversions", _conversions, (x,), True)
    a, b = (np.random.default_rng(3).uniform(-2, 2, 4) for _ in range(2))
    assert_matches_cpu("remaining", _remaining_ops, (a, b))


def test_every_primitive_runs_on_the_cuda_backend_or_is_listed_as_host():
    """Coverage: every primitive is reached by a program above; the ones that ran on the host
    are exactly those listed in HOST_PRIMITIVES (plus host-only steps: collectives, callbacks,
    shard_map), so a new primitive without a CUDA kernel fails here until listed."""
    x = np.ones(4, "float32")
    programs = [(_all_ops([], []), (x, x)), (_conversions, (x,)), (_remaining_ops, (x, x))]
    programs += [(f, [fnp.asarray(a) for a in args]) for f, args in CASES.values()]
    seen = primitives_in(programs) | set(UNARY_FLOAT + BINARY_FLOAT + UNARY_INT + BINARY_INT)
    host_only = {n for n, p in all_primitives().items() if getattr(p, "host_only", False)}
    missing = set(all_primitives()) - seen - COLLECTIVES - host_only - {
        "cond", "while", "scan", "custom_jvp_call", "custom_vjp_call", "custom_vmap_call",
        "custom_lin", "checkpoint", "jit", "sharding_constraint",
        # users' kernels: test_cuda_kernels.py runs them in CUDA programs
        "numba_call", "numba_vectorize",
        # expanded into its solve by jit's lowerings before any backend sees it
        # (test_custom_linear_solve, and a CUDA program below); reduce into its fold (a scan)
        "custom_linear_solve", "reduce",
        # replaced by a literal when an export with symbolic shapes is specialized
        "dimension_as_value"}
    assert not missing, f"primitives no cuda test reaches: {sorted(missing)}"
    # jit's passes inline call primitives; custom_lin only exists while differentiating;
    # sharding_constraint's lowering is the identity (a partitioned program has none left).
    inlined = set(CALL_PARAMS) | {"custom_lin", "sharding_constraint", "custom_linear_solve",
                                  "reduce", "dimension_as_value"}
    on_host = {n for n, p in all_primitives().items()
               if not cuda_exec.runs_on_device(p) and n not in host_only | inlined}
    assert on_host == cuda_exec.HOST_PRIMITIVES


def test_grad_vmap_control_flow_and_random_compose():
    """Whole programs: per-operation differences of a few ulp compound through loops and
    matrix products, so float64 results are compared to 1e-12 relative (about 5,000 ulp)."""
    rng = np.random.default_rng(4)
    w, xs = rng.normal(size=(3, 2)), rng.normal(size=(5, 3))

    def loss(w, x):
        h = lax.fori_loop(0, 2, lambda i, h: fnp.tanh(h @ w @ w.T), x)
        return fnp.sum(lax.cond(h.sum() > 0, lambda v: v * v, lambda v: -v, h))
    assert_matches_cpu("grad", ft.grad(loss), (w, xs[0]), rtol=1e-12)
    assert_matches_cpu("vmap(grad)", ft.vmap(ft.grad(loss), in_axes=(None, 0)), (w, xs), rtol=1e-12)
    assert_matches_cpu("scan", lambda x: lax.scan(lambda c, r: (c + r, c * r), 0.0, x), (xs[:, 0],),
            rtol=1e-12)
    key = ft.random.key(7)
    assert_matches_cpu("bits", lambda k: ft.random.bits(k, (6,)), (key,), exact=True)
    assert_matches_cpu("normal", lambda k: ft.random.normal(k, (6,)), (key,))


def test_pmap_over_cuda_devices_runs_collectives_through_the_host():
    devs = ft.devices("cuda")
    f = ft.pmap(lambda v: v * lax.psum(v, "i"), "i", devices=devs)
    x = np.arange(len(devs) * 3.0).reshape(len(devs), 3)
    out = f(x)
    np.testing.assert_allclose(out, ft.vmap(lambda v: v * lax.psum(v, "i"), axis_name="i")(x))


def test_placement_and_default_backend():
    gpu = ft.devices("cuda")[0]
    x = ft.device_put(np.arange(3.0), ft.devices("cpu")[0])  # moved to the GPU at the call
    y = cuda_jit(lambda v: v + 1)(x)
    assert y.devices() == {gpu}
    np.testing.assert_array_equal(y, [1.0, 2.0, 3.0])
    with ft.config.override(default_backend="cuda"):
        z = ft.jit(lambda v: v * 2)(x)
    assert z.devices() == {gpu}
    assert ft.jit(lambda v: v * 2)(x).devices() == {ft.devices("cpu")[0]}


def test_float16_is_refused_by_name():
    with pytest.raises(TypeError, match="float16 arithmetic is not supported"):
        cuda_jit(lambda v: v * 2)(np.ones(2, np.float16))


def test_no_driver_and_no_simulator_names_the_available_backends():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = ("import functrans as ft\n"
            "try:\n    ft.jit(lambda x: x, backend='cuda')\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    if "cuda" in out.stdout and "not available" not in out.stdout:
        pytest.skip("this machine has a CUDA GPU")
    assert "the cuda backend is not available here" in out.stdout, out.stdout + out.stderr
    assert "the available backends are ['cpu']" in out.stdout


def test_results_stay_on_the_device_between_programs(monkeypatch):
    from functrans.core.array import Array
    from functrans.transforms.cuda.resident import DeviceResidentArray
    copies_in = []
    to_device = cuda_exec.to_device
    monkeypatch.setattr(cuda_exec, "to_device",
                        lambda x, aval: copies_in.append(aval) or to_device(x, aval))
    x = np.linspace(0.0, 1.0, 8).astype(np.float32)
    f, g = cuda_jit(lambda v: fnp.sin(v) * 2.0), cuda_jit(lambda v: v + 1.0)
    y = f(x)
    assert len(copies_in) == 1 and type(y) is DeviceResidentArray
    z = g(y)  # y's buffer is passed as it is: no copy in, and y was never copied out
    assert len(copies_in) == 1
    with pytest.raises(AttributeError):
        Array.__dict__["_value"].__get__(y, Array)
    assert y.shape == (8,) and y.dtype == np.float32 and ft.typeof(z).shape == (8,)
    want = ft.jit(lambda v: fnp.sin(v) * 2.0 + 1.0, backend="cpu")(x)
    _assert_close("resident", z, want, False)
    _assert_close("eager on the host", y + 1.0, z, False)


def test_a_user_reducer_runs_in_a_cuda_program():
    """jit expands lax.reduce's user reducer into its fold (a scan) before the backend
    compiles: the same operations in the same order, so float64 results agree to 1e-13."""
    def f(x):
        return lax.reduce((x, x * 0.5), (0.0, 1.0), lambda a, b: (a[0] + b[0] * b[0],
                                                                  a[1] * (1.0 + b[1])), (0,))
    x = np.random.default_rng(5).normal(size=(6, 3))
    for got, want in zip(ft.jit(f, backend="cuda")(x), ft.jit(f)(x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)


def test_a_custom_linear_solve_runs_in_a_cuda_program():
    """jit expands custom_linear_solve into its solve (a fori_loop here) before the backend
    compiles: the CUDA program equals the CPU one to float64 rounding (30 iterations)."""
    def f(b):
        return lax.custom_linear_solve(
            lambda x: x * 3.0 + fnp.roll(x, 1), b,
            lambda mv, r: lax.fori_loop(0, 30, lambda i, x: x + (r - mv(x)) * 0.25, r * 0.0))
    b = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(ft.jit(f, backend="cuda")(b)),
                               np.asarray(ft.jit(f)(b)), rtol=1e-13)
