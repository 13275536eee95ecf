"""jit's work-sharing pool (transforms/native/work_pool.py): regions finish on the caller when
no worker takes a unit, results are the same bits whoever runs the units (and on Numba's own
threading layer), concurrent callers and forked children get correct results. Oracles: the
same program with the workers paused, NumPy in float64 with stated bounds."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.native import work_pool
from functrans.transforms.native.parallel import PARALLEL_MIN

from threads import one_thread

N = 2 * PARALLEL_MIN  # a parallel loop's size (flat loops split into 64 units)
EPS32 = np.finfo(np.float32).eps


def _programs():
    """Three programs with regions of each kind: a flat loop with a sum, a nested loop with
    row sums, a product cut into blocks."""
    total = ft.jit(lambda x: (fnp.sin(x) * 2.0 + 1.0).sum())
    rows = ft.jit(lambda m: fnp.exp(-m * m).sum(axis=1))
    product = ft.jit(lambda a, b: fnp.maximum(a @ b, 0.0))
    return total, rows, product


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N).astype(np.float32)
    m = rng.standard_normal((1024, 512)).astype(np.float32)
    a = rng.standard_normal((256, 384)).astype(np.float32)
    b = rng.standard_normal((384, 320)).astype(np.float32)
    return x, m, a, b


def _run_all(programs, inputs):
    total, rows, product = programs
    x, m, a, b = inputs
    return [np.asarray(total(x)), np.asarray(rows(m)), np.asarray(product(a, b))]


def _check_against_numpy(results, inputs):
    x, m, a, b = (v.astype(np.float64) for v in inputs)
    got_total, got_rows, got_product = (r.astype(np.float64) for r in results)
    terms = np.sin(x) * 2.0 + 1.0
    # 64 units, each a running sum of N/64 terms (float32 rounding per addition, and the
    # terms' own float32 rounding: sin within a few ulps), then 64 partials added.
    bound = (N / 64 + 64 + 4) * EPS32 * np.abs(terms).sum()
    assert abs(got_total - terms.sum()) <= bound
    e = np.exp(-m * m)
    np.testing.assert_array_less(np.abs(got_rows - e.sum(1)), (512 + 4) * EPS32 * e.sum(1))
    # a product of K=384 float32 terms: |error| <= K * eps * (|a| @ |b|)
    want = np.maximum(a @ b, 0.0)
    np.testing.assert_array_less(np.abs(got_product - want) - 384 * EPS32 * (np.abs(a) @ np.abs(b)),
                                 1e-30)


def test_regions_finish_on_the_caller_when_no_worker_takes_a_unit():
    programs, inputs = _programs(), _inputs()
    shared = _run_all(programs, inputs)
    alone: list = []

    def run_paused():
        with work_pool.paused():  # as when every worker is late: the caller runs all units
            alone.extend(_run_all(programs, inputs))

    caller = threading.Thread(target=run_paused)  # a caller waiting for workers would hang
    caller.start()
    caller.join(timeout=300)
    assert not caller.is_alive(), "a region waited for units no worker took"
    for s, a in zip(shared, alone):
        np.testing.assert_array_equal(s, a)  # same units, same partials: the same bits
    _check_against_numpy(shared, inputs)


def test_one_thread_runs_every_region_on_the_caller():
    programs, inputs = _programs(), _inputs(1)
    shared = _run_all(programs, inputs)
    with one_thread():
        one = _run_all(programs, inputs)
    np.testing.assert_array_equal(shared[0], one[0])  # a flat loop's units do not change
    np.testing.assert_array_equal(shared[1], one[1])
    _check_against_numpy(one, inputs)  # a product's blocks may (BLAS's kernel per block)


def test_concurrent_callers_get_their_own_results():
    # A region from a second thread while one runs goes on its caller alone.
    programs = _programs()
    inputs = [_inputs(seed) for seed in range(4)]
    want = [_run_all(programs, i) for i in inputs]
    errors: list = []

    def caller(k):
        try:
            for _ in range(15):
                for got, w in zip(_run_all(programs, inputs[k]), want[k]):
                    np.testing.assert_array_equal(got, w)
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a caller hung"
    assert not errors, errors[0]


def _child(queue):
    queue.put([r.tolist() for r in _run_all(_programs(), _inputs(2))])


@pytest.mark.skipif(sys.platform != "linux", reason="fork")
def test_a_forked_child_runs_regions():
    want = _run_all(_programs(), _inputs(2))  # the pool is started in the parent
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    got = queue.get(timeout=300)
    child.join(timeout=60)
    assert child.exitcode == 0
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g, w.dtype), w)


_SCRIPT = """
import sys, numpy as np
sys.path.insert(0, {here!r})
from test_work_pool import _programs, _inputs, _run_all
np.save(sys.argv[1], np.concatenate([r.ravel() for r in _run_all(_programs(), _inputs(3))[:2]]))
"""


def test_same_bits_on_numbas_threading_layer(tmp_path):
    # The loops' units (and so their partial sums) are the program's, not the pool's.
    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT.format(here=here))
    outs = {}
    for mode in ("work", "numba"):
        path = tmp_path / f"{mode}.npy"
        env = dict(os.environ, FUNCTRANS_POOL=mode)
        subprocess.run([sys.executable, str(script), str(path)], env=env, check=True,
                       timeout=600)
        outs[mode] = np.load(path)
    np.testing.assert_array_equal(outs["work"], outs["numba"])


def test_regions_stay_correct_while_workers_pause_and_resume():
    # Workers stop and start taking units between and during regions (as late threads do
    # on a busy machine); every region still finishes with the same bits.
    total, rows, _ = _programs()
    x, m, _, _ = _inputs(4)
    want = (np.asarray(total(x)), np.asarray(rows(m)))
    done = threading.Event()

    def toggle():
        while not done.is_set():
            with work_pool.paused():
                done.wait(0.002)
            done.wait(0.002)

    toggler = threading.Thread(target=toggle)
    toggler.start()
    try:
        for _ in range(300):
            np.testing.assert_array_equal(np.asarray(total(x)), want[0])
            np.testing.assert_array_equal(np.asarray(rows(m)), want[1])
    finally:
        done.set()
        toggler.join(timeout=60)
