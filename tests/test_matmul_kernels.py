"""jit's matrix products against NumPy: the small-product loops (one per memory order of the
operands: a @ b, a @ b.T, a.T @ b, a.T @ b.T, vectors, empty contractions, batches) and the
BLAS route for large ones.

Tolerances: float64 rtol 1e-12; float32 rtol 1e-5 with an absolute floor of 1e-5 times the
sum of |a||b| over the contraction (summation order differs from NumPy's BLAS; errors grow
with the contraction length, at most 64 here).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.lowering import blas, blas_library

SPECS = {"nn": ("ij,jk->ik", False, False), "nt": ("ij,kj->ik", False, True),
         "tn": ("ji,jk->ik", True, False), "tt": ("ji,kj->ik", True, True)}


def assert_product_close(got, a, b, spec):
    want = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
    scale = np.einsum(spec, np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    if a.dtype == np.float32:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale.max(initial=0))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale.max(initial=0))


@settings(max_examples=30, deadline=None)
@given(order=st.sampled_from(sorted(SPECS)), m=st.sampled_from([1, 3, 17, 40]),
       k=st.sampled_from([0, 1, 2, 5, 33, 64]), n=st.sampled_from([1, 4, 19, 40]),
       dtype=st.sampled_from(["float32", "float64"]))
def test_small_products_every_memory_order(order, m, k, n, dtype):
    spec, ta, tb = SPECS[order]
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    got = ft.jit(lambda x, y: fnp.einsum(spec, x, y))(a, b)
    assert_product_close(np.asarray(got), a, b, spec)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_vector_and_batched_products(dtype):
    rng = np.random.default_rng(3)
    v, w = rng.standard_normal(40).astype(dtype), rng.standard_normal(24).astype(dtype)
    mat = rng.standard_normal((40, 24)).astype(dtype)
    f = ft.jit(lambda v, w, mat: (v @ mat, mat @ w, fnp.outer(v, w), mat.T @ v))
    got = f(v, w, mat)
    assert_product_close(np.asarray(got[0])[None], v[None], mat, "ij,jk->ik")
    assert_product_close(np.asarray(got[1])[:, None], mat, w[:, None], "ij,jk->ik")
    assert_product_close(np.asarray(got[2]), v[:, None], w[None], "ij,jk->ik")
    assert_product_close(np.asarray(got[3])[None], v[None], mat, "ij,jk->ik")
    x = rng.standard_normal((3, 20, 8)).astype(dtype)
    y = rng.standard_normal((3, 20, 6)).astype(dtype)
    got = np.asarray(ft.jit(lambda x, y: fnp.einsum("bki,bkj->bij", x, y))(x, y))
    for q in range(3):
        assert_product_close(got[q], x[q], y[q], "ji,jk->ik")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blas_products(dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((70, 90)).astype(dtype)
    b = rng.standard_normal((110, 90)).astype(dtype)
    c = rng.standard_normal((70, 110)).astype(dtype)
    for spec, x, y in [("ij,kj->ik", a, b), ("ji,jk->ik", a, c), ("ij,jk->ik", a, b.T.copy()),
                       ("ji,kj->ik", a, c.T.copy())]:
        got = np.asarray(ft.jit(lambda p, r: fnp.einsum(spec, p, r))(x, y))
        assert_product_close(got, x, y, spec)


def test_blas_thread_count_acts_on_the_library_jit_calls_and_numpys():
    n = blas.blas_threads()
    if n is None:
        pytest.skip("no OpenBLAS: no thread control")
    try:
        blas.set_blas_threads(1)
        assert blas.blas_threads() == 1 == blas_library.JIT.threads()
        assert blas_library.SINGLE.threads() == 1  # (float32's copy, when it is another)
        assert blas_library.NUMPY.threads() == 1
    finally:
        blas.set_blas_threads(n)
    assert blas.blas_threads() == n


def test_jit_blas_core_is_one_the_cpu_runs():
    info = blas_library.info()
    if not info:
        pytest.skip("no BLAS found: products run as loops")
    if info["private"]:
        # a private copy runs NumPy's core, or AVX-512 kernels the CPU reports
        assert info["path"] != blas_library.NUMPY.path
        if info["core"] != blas_library.NUMPY.core():
            assert info["core"] == "SkylakeX"
            assert {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= \
                blas_library.cpu_flags()


_AVX2_CPU = textwrap.dedent("""
    import builtins, io
    _open = builtins.open
    def without_avx512(path, *a, **k):  # /proc/cpuinfo of a CPU with AVX2 and no AVX-512
        if path == "/proc/cpuinfo":
            return io.StringIO("flags\\t\\t: fpu sse sse2 avx avx2 fma\\n")
        return _open(path, *a, **k)
    builtins.open = without_avx512
    import numpy as np, functrans as ft
    from functrans.transforms.lowering import blas_library as b
    builtins.open = _open
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4) @ np.ones((4, 64), np.float32)
    print(b.info().get("private"), b.info().get("core") == b.NUMPY.core(),
          np.array_equal(ft.jit(lambda x: x.T @ x)(a), a.T @ a))
""")


def test_cpus_without_avx512_get_a_private_copy_with_numpys_kernels():
    """Its idle threads stop spinning sooner than NumPy's copy's, whatever the CPU: with
    NumPy's copy, conv + bias + relu under jit ran 2.5x slower (8.0 ms against 3.2 ms)."""
    if not blas_library.info() or not sys.platform.startswith("linux"):
        pytest.skip("no OpenBLAS on Linux")
    out = subprocess.run([sys.executable, "-c", _AVX2_CPU], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]


def test_functrans_blas_numpy_keeps_numpys_copy():
    code = ("from functrans.transforms.lowering import blas_library as b; "
            "import numpy as np, functrans as ft; "
            "a = np.arange(9.0).reshape(3, 3) @ np.ones((3, 40)); "
            "print(b.info().get('private'), "
            "np.array_equal(ft.jit(lambda x: x.T @ x)(a), a.T @ a))")
    env = dict(os.environ, FUNCTRANS_BLAS="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    private, same = out.stdout.split()
    assert private in ("False", "None") and same == "True"


def test_unwritable_cache_falls_back_to_numpys_copy():
    code = ("from functrans.transforms.lowering import blas_library as b; "
            "print(b.info().get('private'))")
    env = dict(os.environ, FUNCTRANS_CACHE_DIR="/dev/null/cache")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() in (["False"], ["None"])
