"""jit's matrix products cut into blocks on Numba's thread pool (transforms/native/blas_split):
the blocks the wrapper hands to BLAS (recorded by a stand-in ?gemm), and jit's products against
NumPy with the cut on and off."""
from __future__ import annotations

import ctypes
import os
import threading

import numba
import numpy as np
import pytest
from llvmlite import binding as llvm

import functrans as ft
from functrans.transforms.lowering import blas_library
from functrans.transforms.native import blas_split, engine, parallel

_I32 = ctypes.c_int32
_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, _I32, _I32, _I32,
                          ctypes.c_float, ctypes.c_void_p, _I32, ctypes.c_void_p, _I32,
                          ctypes.c_float, ctypes.c_void_p, _I32)
_calls: list = []
_lock = threading.Lock()


def _record(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    with _lock:
        _calls.append((m, n, k, a or 0, b or 0, c or 0))


_recorder = _PROTO(_record)


@pytest.fixture(scope="module")
def split_with_recorder():
    """The float32 wrapper (32-bit integers) calling the recorder instead of BLAS."""
    parallel.ensure_threads()
    llvm.add_symbol("ft_test_sgemm_record", ctypes.cast(_recorder, ctypes.c_void_p).value)
    text = (blas_split.wrapper_ir("s", False)
            .replace("@functrans_sgemm_blas", "@ft_test_sgemm_record")
            .replace("@functrans_sgemm_split", "@ft_test_sgemm_split")
            .replace("@chunk", "@ft_test_sgemm_chunk"))
    return _PROTO(engine.load("ft_test_sgemm_split",
                              engine.compile_ir(text, opt=blas_split.WRAPPER_OPT)))


def _run(wrapper, threads, ta, tb, m, n, k, lda, ldb, ldc, a=4096, b=1 << 20, c=1 << 24):
    _calls.clear()
    prev = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        wrapper(101, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc)
    finally:
        numba.set_num_threads(prev)
    return sorted(_calls, key=lambda call: call[5])


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
@pytest.mark.parametrize("ta", [111, 112])
def test_cut_by_rows_in_whole_tiles(split_with_recorder, ta):
    # 1000 rows on 2 threads: 512 (a whole number of 16-row tiles) and 488.
    lda = 1000 if ta == 112 else 100
    calls = _run(split_with_recorder, 2, ta, 111, 1000, 300, 100, lda, 300, 300)
    assert [c[:3] for c in calls] == [(512, 300, 100), (488, 300, 100)]
    a_step = 4 * (512 if ta == 112 else 512 * lda)
    assert [c[3] for c in calls] == [4096, 4096 + a_step]
    assert [c[4] for c in calls] == [1 << 20, 1 << 20]
    assert [c[5] for c in calls] == [1 << 24, (1 << 24) + 4 * 512 * 300]


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
@pytest.mark.parametrize("tb", [111, 112])
def test_cut_by_columns_when_wider(split_with_recorder, tb):
    ldb = 300 if tb == 112 else 1000
    calls = _run(split_with_recorder, 2, 111, tb, 100, 1000, 300, 300, ldb, 1000)
    assert [c[:3] for c in calls] == [(100, 512, 300), (100, 488, 300)]
    b_step = 4 * (512 * ldb if tb == 112 else 512)
    assert [c[4] for c in calls] == [1 << 20, (1 << 20) + b_step]
    assert [c[5] for c in calls] == [1 << 24, (1 << 24) + 4 * 512]


@pytest.mark.parametrize("threads,m,n,k", [(1, 1000, 300, 100),   # one thread
                                           (2, 64, 64, 63),       # below SPLIT_MIN
                                           (2, 31, 20, 1000)])    # too narrow to cut
def test_one_call_when_not_worth_cutting(split_with_recorder, threads, m, n, k):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs more threads")
    calls = _run(split_with_recorder, threads, 111, 111, m, n, k, k, n, n)
    assert [c[:3] for c in calls] == [(m, n, k)]


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("shape", [(300, 200, 500), (700, 64, 40), (40, 300, 900),
                                   (513, 129, 257), (1, 1000, 1000)])
@pytest.mark.parametrize("threads", [1, 2])
def test_jit_products_match_numpy(dtype, rtol, shape, threads):
    # Sums of k products of standard normals: relative to the largest entry, the rounding
    # error grows like sqrt(k) * eps (k <= 1000: below 2e-5 in float32, 1e-13 in float64).
    m, k, n = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    prev = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for f, x, y in [(lambda x, y: x @ y, a, b), (lambda x, y: x.T @ y, a.T.copy(), b),
                        (lambda x, y: x @ y.T, a, b.T.copy()),
                        (lambda x, y: x.T @ y.T, a.T.copy(), b.T.copy())]:
            got = np.asarray(ft.jit(f)(x, y))
            want = a.astype(np.float64) @ b.astype(np.float64)
            np.testing.assert_allclose(got, want, rtol=0, atol=rtol * np.abs(want).max())
    finally:
        numba.set_num_threads(prev)


def _jaxpr(f, *shapes):
    return ft.make_jaxpr(f)(*(np.ones(s, np.float32) for s in shapes)).jaxpr


def test_may_split_counts_products_from_static_shapes():
    assert blas_split.may_split(_jaxpr(lambda x, y: x @ y, (64, 64), (64, 63))) == set()
    assert blas_split.may_split(_jaxpr(lambda x, y: x @ y, (64, 64), (64, 64))) == {"s"}  # 2^18
    # batched products count all their multiply-adds (a bound on each BLAS call's)
    assert blas_split.may_split(_jaxpr(lambda x, y: x @ y, (4, 64, 64), (4, 64, 16))) == {"s"}
    assert blas_split.may_split(_jaxpr(lambda x: ft.numpy.sin(x) * 2, (1024, 1024))) == set()
    # a product nested in a scan's body, or in a convolution; the dtype is the product's
    def scanned(c, xs):
        return ft.lax.scan(lambda c, x: (c @ x, None), c, xs)[0]
    assert blas_split.may_split(_jaxpr(scanned, (128, 128), (3, 128, 128))) == {"s"}
    conv = lambda x, w: ft.lax.conv(x, w, (1, 1), "SAME")  # noqa: E731
    assert blas_split.may_split(_jaxpr(conv, (8, 16, 32, 32), (32, 16, 3, 3))) == {"s"}
    assert blas_split.may_split(_jaxpr(conv, (1, 1, 4, 4), (1, 1, 3, 3))) == set()
    both = ft.make_jaxpr(lambda a, b: (a @ a, b @ b))(np.ones((64, 64), np.float32),
                                                     np.ones((64, 64), np.float64)).jaxpr
    assert blas_split.may_split(both) == {"s", "d"}
    ints = ft.make_jaxpr(lambda a: a @ a)(np.ones((128, 128), np.int32)).jaxpr
    assert blas_split.may_split(ints) == set()  # not a BLAS product


_FRESH = """
import numpy as np, functrans as ft
from functrans.transforms.lowering import blas_library
from functrans.transforms.native import blas_split
ft.jit(lambda x: x @ x)(np.ones((16, 16), np.float32))
print(sorted(blas_split._installed), blas_library.split_products)
ft.jit(lambda x: x @ x)(np.ones((128, 128), np.float32))
print(sorted(blas_split._installed), blas_library.split_products)
ft.jit(lambda x: x @ x)(np.ones((128, 128), np.float64))
print(sorted(blas_split._installed), blas_library.split_products)
"""


def test_wrappers_installed_with_the_first_program_that_may_cut():
    """In a fresh process: small products keep OpenBLAS's symbols (no wrapper compile); each
    dtype's wrapper comes with the first program that may cut its products."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[] False"
    parallel.ensure_threads()
    lib = blas_library.JIT
    can = (lib is not None and lib.private and numba.threading_layer() != "workqueue"
           and os.environ.get("FUNCTRANS_BLAS_SPLIT", "1") != "0")
    assert out[1] == ("['s'] True" if can else "['s'] False")
    assert out[2] == ("['d', 's'] True" if can else "['d', 's'] False")


def test_installed_with_jits_private_blas_on_one_thread():
    ft.jit(lambda x: x @ x)(np.ones((128, 128)))  # the first program that may cut installs
    lib = blas_library.JIT
    if lib is None or not lib.private or numba.threading_layer() == "workqueue":
        assert not blas_split.install()
    else:
        assert blas_split.install() == blas_library.split_products
        if blas_library.split_products:
            assert lib.threads() == 1 == blas_library.SINGLE.threads()


def test_loops_beside_cut_products_run_on_the_pool():
    """With products cut on the pool (jit's BLAS on one thread), a program's large loops run
    on the pool too (before, programs calling BLAS kept their loops serial, to leave the
    cores to OpenBLAS's threads); the results do not change."""
    from functrans.transforms.jit.executable import executable_for
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    big = rng.standard_normal((1 << 19,)).astype(np.float32)

    def f(a, big):
        return a @ a, ft.numpy.tanh(big) * 2.0 + 1.0

    got = ft.jit(f)(a, big)
    program = executable_for(ft.make_jaxpr(f)(a, big).jaxpr, "f")
    assert program.single.parallel == blas_library.split_products
    # tanh's SIMD form is within a few ulps: 16 float32 ulps (2e-6) bound it and the affine
    np.testing.assert_allclose(np.asarray(got[1]), np.tanh(big) * 2 + 1, rtol=2e-6, atol=2e-6)
    # a sum of 128 products: within 128 eps of the sum of their magnitudes, which the
    # largest row's absolute sum squared bounds
    want = a.astype(np.float64) @ a.astype(np.float64)
    np.testing.assert_allclose(np.asarray(got[0]), want, rtol=0,
                               atol=128 * np.finfo(np.float32).eps * np.abs(a).sum(1).max() ** 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spec", ["bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "bqhd,bhkd->bhqk",
                                  "bhqk,bkhd->bhqd"])
def test_batches_of_small_products_run_on_the_pool(dtype, spec):
    """Attention's products (a batch of heads, each too small to cut) run a unit each on the
    pool once products are cut; layouts BLAS cannot read are copied first. Oracle: einsum in
    float64, within k * eps of the sums of magnitudes (k = 64 terms)."""
    from functrans.transforms.jit.executable import executable_for
    rng = np.random.default_rng(len(spec))
    sizes = {"b": 4, "h": 4, "q": 64, "k": 64, "d": 32}
    lhs, rest = spec.split(",")
    rhs, out = rest.split("->")
    x = rng.standard_normal([sizes[c] for c in lhs]).astype(dtype)
    y = rng.standard_normal([sizes[c] for c in rhs]).astype(dtype)

    def f(x, y):
        return ft.numpy.einsum(spec, x, y)

    program = executable_for(ft.make_jaxpr(f)(x, y).jaxpr, "f")
    assert program.single.parallel == blas_library.split_products
    want = np.einsum(spec, x.astype(np.float64), y.astype(np.float64))
    bound = 64 * np.finfo(dtype).eps * np.einsum(spec, np.abs(x).astype(np.float64),
                                                 np.abs(y).astype(np.float64))
    for run in (lambda: ft.jit(f)(x, y), lambda: program(x, y)[0]):
        got = np.asarray(run()).astype(np.float64)
        np.testing.assert_array_less(np.abs(got - want), bound + 1e-300)
