"""jit's float32 products on the kernels that run them fastest on this CPU: a second private
OpenBLAS copy on the AVX2 kernels where those measured faster than the AVX-512 ones (AMD's
Zen 4 executes AVX-512 in two halves), the answer measured once per CPU model and cached."""
from __future__ import annotations

import os
import types

import numpy as np
import pytest

import functrans as ft
from functrans.transforms.lowering import blas_library


class FakeLibrary:
    """What the measurement uses of a library: its thread count and a core name."""

    def __init__(self, core="SkylakeX", threads=2):
        self._core, self.n, self.seen = core, threads, []
        self.private = True
        self.path = __file__
        self.handle = types.SimpleNamespace(gotoblas_HASWELL=1)

    def core(self):
        return self._core

    def threads(self):
        return self.n

    def set_threads(self, n):
        self.n = n


@pytest.fixture
def timed(monkeypatch):
    """Each fake library's ?gemm takes the seconds given for it (and notes its thread
    count while measured)."""
    seconds = {}

    def gemm_seconds(lib, letter, n=256, reps=7):
        assert letter == "s"
        lib.seen.append(lib.n)
        return [seconds[lib]] * reps
    monkeypatch.setattr(blas_library, "_gemm_seconds", gemm_seconds)
    return seconds


@pytest.mark.parametrize("ratio, switch", [(0.90, True), (0.99, False), (1.10, False)])
def test_the_avx2_copy_is_chosen_only_when_clearly_faster(timed, tmp_path, ratio, switch):
    mine, other = FakeLibrary(), FakeLibrary("Haswell")
    timed[mine], timed[other] = 1e-3, ratio * 1e-3
    path = tmp_path / "answer"
    assert blas_library._measure_single(mine, other, str(path)) is switch
    assert path.read_text() == ("avx2" if switch else "same")
    # measured on one thread each, and the thread counts given back
    assert set(mine.seen) == set(other.seen) == {1}
    assert mine.n == other.n == 2


def test_an_unwritable_answer_still_decides(timed, tmp_path, monkeypatch):
    from functrans.transforms.lowering import cache_dir
    monkeypatch.setattr(cache_dir, "_warned", False)  # (warned once per process)
    mine, other = FakeLibrary(), FakeLibrary("Haswell")
    timed[mine], timed[other] = 1e-3, 0.5e-3
    with pytest.warns(cache_dir.CacheWarning, match="cannot write"):
        assert blas_library._measure_single(mine, other, str(tmp_path / "none" / "answer"))


@pytest.mark.parametrize("known", ["same", "avx2"])
def test_a_cached_answer_is_used_without_measuring(monkeypatch, tmp_path, known):
    answer = tmp_path / "answer"
    answer.write_text(known)
    copies = []
    monkeypatch.setattr(blas_library, "_single_answer_path", lambda lib, core: str(answer))
    monkeypatch.setattr(blas_library, "_private_copy",
                        lambda lib, core, tag="": copies.append((core, tag)) or "copy")
    monkeypatch.setattr(blas_library, "_measure_single",
                        lambda *a: pytest.fail("measured although the answer was cached"))
    monkeypatch.delenv("FUNCTRANS_BLAS_CORETYPE", raising=False)
    chosen = FakeLibrary()
    got = blas_library._single_library(chosen, FakeLibrary())
    if known == "same":  # no second copy loaded where it would not be used
        assert got is chosen and copies == []
    else:
        assert got == "copy" and copies == [("Haswell", "float32-")]


@pytest.mark.parametrize("why", ["forced", "not private", "avx2 core"])
def test_one_copy_where_there_is_nothing_to_choose(monkeypatch, why):
    monkeypatch.setattr(blas_library, "_private_copy",
                        lambda *a, **k: pytest.fail("loaded a second copy"))
    monkeypatch.delenv("FUNCTRANS_BLAS_CORETYPE", raising=False)
    chosen = FakeLibrary()
    if why == "forced":  # a chosen core (CI's AVX2 runs) holds for every dtype
        monkeypatch.setenv("FUNCTRANS_BLAS_CORETYPE", "SkylakeX")
    elif why == "not private":
        chosen.private = False
    else:
        chosen._core = "Haswell"
    assert blas_library._single_library(chosen, FakeLibrary()) is chosen


def test_this_process_float32_core_is_one_the_cpu_runs():
    info = blas_library.info()
    if not info:
        pytest.skip("no BLAS found: products run as loops")
    assert info["float32_core"] in (info["core"], "Haswell")
    # the products' symbols lead to each dtype's library
    from llvmlite import binding as llvm
    assert llvm.address_of_symbol("functrans_sgemm_blas") == blas_library.SINGLE.address("s")
    assert llvm.address_of_symbol("functrans_dgemm_blas") == blas_library.JIT.address("d")
    if blas_library.SINGLE is not blas_library.JIT:
        assert blas_library.SINGLE.private
        assert blas_library.SINGLE.path != blas_library.JIT.path
        if not os.environ.get("FUNCTRANS_BLAS_CORETYPE"):
            path = blas_library._single_answer_path(blas_library.NUMPY, info["core"])
            with open(path, encoding="ascii") as f:
                assert f.read() == "avx2"


def test_float32_and_float64_products_agree_with_numpy():
    """Each dtype's products through its own library (they may be two copies)."""
    rng = np.random.default_rng(7)
    for dtype, eps in ((np.float32, np.finfo(np.float32).eps),
                       (np.float64, np.finfo(np.float64).eps)):
        a = rng.standard_normal((96, 300)).astype(dtype)
        b = rng.standard_normal((300, 80)).astype(dtype)
        got = np.asarray(ft.jit(lambda x, y: x @ y)(a, b))
        want = a.astype(np.float64) @ b.astype(np.float64)
        # a sum of 300 products: within 300 eps of the sum of their magnitudes
        bound = 300 * eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
        assert got.dtype == dtype
        assert np.all(np.abs(got - want) <= bound)


def test_copies_are_named_by_build_not_by_install(tmp_path):
    """Every virtualenv installs NumPy's library anew (another modification time): the
    private copies are named after its contents, so the cache keeps one per build."""
    body = os.urandom(200_000)
    first, second, other = tmp_path / "a.so", tmp_path / "b.so", tmp_path / "c.so"
    first.write_bytes(body)
    second.write_bytes(body)
    other.write_bytes(body[:-1] + bytes([body[-1] ^ 1]))  # another build: its tail differs
    os.utime(first, ns=(1, 1))
    assert blas_library._build_id(str(first)) == blas_library._build_id(str(second))
    assert blas_library._build_id(str(first)) != blas_library._build_id(str(other))


def test_an_answer_written_while_waiting_for_the_lock_is_used(monkeypatch, tmp_path):
    """Processes starting together (test workers, a job's ranks) run the same kernels: the
    first measures, the others wait for its answer rather than measure again."""
    answer = tmp_path / "answer"
    reads = []

    def read(path):  # nothing before the lock; another process's answer once it is taken
        reads.append(path)
        return None if len(reads) == 1 else "avx2"
    monkeypatch.setattr(blas_library, "_single_answer_path", lambda lib, core: str(answer))
    monkeypatch.setattr(blas_library, "_read_answer", read)
    monkeypatch.setattr(blas_library, "_private_copy", lambda *a, **k: "copy")
    monkeypatch.setattr(blas_library, "_measure_single",
                        lambda *a: pytest.fail("measured although another process had"))
    monkeypatch.delenv("FUNCTRANS_BLAS_CORETYPE", raising=False)
    assert blas_library._single_library(FakeLibrary(), FakeLibrary()) == "copy"
    assert len(reads) == 2 and (tmp_path / "answer.lock").exists()
