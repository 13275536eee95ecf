"""LLVM's powi helpers (``__powisf2``/``__powidf2``) resolve in compiled programs.

LLVM turns ``pow(x, float(n))`` into ``powi(x, n)`` under fast math and calls the compiler
runtime for it; an unresolved helper aborted the whole process, so the programs run in a child
process here. powi squares repeatedly: at most 2*log2(|n|) + 2 roundings for |n| <= 40, about
13 float32 ulp, hence rtol 2e-6 against float64 NumPy.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from functrans.transforms.lowering import compiler_rt

_PROGRAM = textwrap.dedent("""
    import json, numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.core import background
    n = np.arange(-6, 41, dtype=np.int32)
    scalar = ft.jit(lambda j: fnp.float32(.9) ** j.astype(fnp.float32))
    vector = ft.jit(lambda x, j: fnp.power(x, j.astype(fnp.float32)))
    x = np.linspace(0.5, 1.5, n.size, dtype=np.float32)
    out = {"scalar": [float(scalar(np.int32(k))) for k in (2, 3, -4, 17)],
           "vector": np.asarray(vector(x, n)).tolist()}
    background.wait_all()
    print(json.dumps(out))
""")


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_powers_to_a_converted_integer_compile_and_run(codegen, tmp_path):
    env = dict(os.environ, FUNCTRANS_JIT_CODEGEN=codegen, FUNCTRANS_JIT_TIERED="0",
               FUNCTRANS_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["scalar"], [0.9 ** k for k in (2, 3, -4, 17)], rtol=2e-6)
    n = np.arange(-6, 41)
    x = np.linspace(0.5, 1.5, n.size, dtype=np.float32).astype(np.float64)
    np.testing.assert_allclose(out["vector"], x ** n, rtol=2e-6)


def _reference(a, b, dtype):
    """compiler-rt's powi, rounding in ``dtype`` at every step."""
    a, r, recip = dtype(a), dtype(1), b < 0
    while True:
        if b & 1:
            r = dtype(r * a)
        b = int(b / 2)  # C division truncates toward zero
        if b == 0:
            break
        a = dtype(a * a)
    return dtype(1) / r if recip else r


@pytest.mark.parametrize("symbol,ctype,dtype", [("__powisf2", ctypes.c_float, np.float32),
                                                ("__powidf2", ctypes.c_double, np.float64)])
def test_the_ir_fallback_is_compiler_rts_powi(symbol, ctype, dtype):
    fallback = compiler_rt.compile_fallback()[symbol]
    fn = ctypes.CFUNCTYPE(ctype, ctype, ctypes.c_int)(fallback)
    registered = ctypes.CFUNCTYPE(ctype, ctype, ctypes.c_int)(compiler_rt.ADDRESSES[symbol])
    with np.errstate(over="ignore", divide="ignore"):
        for a in (0.0, -0.0, 0.9, -1.7, 3.0, 1e-3, float("inf"), float("nan")):
            for b in (0, 1, 2, 3, -1, -2, -7, 31, 64, 1000, -1000, 2 ** 31 - 1, -2 ** 31):
                want = _reference(a, b, dtype)
                for got in (fn(a, b), registered(a, b)):
                    np.testing.assert_array_equal(dtype(got), want, err_msg=f"{symbol}({a}, {b})")
