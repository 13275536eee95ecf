"""Timing helpers shared by the benchmarks: medians over repeats, a side-by-side table, and
optional JAX (only when installed; functrans itself never imports it).

JAX is timed in its own process: its idle threads slow OpenBLAS (and so NumPy and functrans)
down in the process they share. :func:`run` runs a benchmark module's ``check_and_time`` once
in a child process where :func:`maybe_jax` returns JAX, keeps that run's JAX rows, then runs
it here without JAX and :func:`table` adds the child's JAX rows to the same tables (ratios
against this process's baseline rows).
"""
from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

_PEER_ENV = "FUNCTRANS_BENCH_JAX_PEER"
_PEER_MARK = "JAX-PEER-ROWS "
_peer_rows: dict = {}  # table title -> [(label, seconds)]: JAX rows from the peer process


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (else ``platform.processor()``), for tables."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown CPU"


def _block(result):
    """``block_until_ready`` on every array of ``result`` that has it: for a jit program just
    traced, that waits for its kernel (tiered jit), so the timing that follows is of compiled
    code."""
    if isinstance(result, (tuple, list)):
        for r in result:
            _block(r)
    elif isinstance(result, dict):
        for r in result.values():
            _block(r)
    elif hasattr(result, "block_until_ready"):
        result.block_until_ready()


def median_time(fn, *, repeat=15, number=None, warmup=2, min_time=0.2):
    """Median seconds per call of ``fn()`` (calls batched so each sample takes >= ~10 ms)."""
    for _ in range(warmup):
        _block(fn())
    if number is None:
        t0 = time.perf_counter()
        fn()
        one = max(time.perf_counter() - t0, 1e-7)
        number = max(1, int(0.01 / one))
    samples = []
    gc.disable()
    try:
        start = time.perf_counter()
        while len(samples) < repeat or (time.perf_counter() - start < min_time and
                                        len(samples) < 10 * repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    return statistics.median(samples)


def fmt(seconds: float) -> str:
    if seconds is None:
        return "-"
    if abs(seconds) < 1e-6:
        return f"{seconds * 1e9:.1f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def table(title: str, rows: list[tuple[str, float | None]], baseline: str) -> str:
    """Rows of (label, seconds); ratios are relative to the ``baseline`` row. In the JAX peer
    process the JAX rows are recorded for the parent; in the parent they are added here.
    A row's seconds may be a pair (median, 90th percentile): then a p90 column is added."""
    if _in_peer():
        _peer_rows[title] = [(label, t) for label, t in rows if label.startswith("jax")]
    else:
        rows = list(rows) + _peer_rows.get(title, [])
    pairs = {label: tuple(t) if isinstance(t, (tuple, list)) else (t, None)
             for label, t in rows}
    base, base90 = pairs[baseline]
    has90 = any(p90 is not None for _, p90 in pairs.values())
    width = max(len(r[0]) for r in rows)
    head = f"  {'':{width}}  {'median':>10}  {'vs ' + baseline:>14}"
    lines = [f"\n{title}", head + (f"  {'p90':>10}  {'p90 ratio':>10}" if has90 else "")]
    for label, _ in rows:
        t, p90 = pairs[label]
        ratio = "-" if t is None or not base else f"{t / base:.2f}x"
        line = f"  {label:{width}}  {fmt(t):>10}  {ratio:>14}"
        if has90:
            ratio90 = "-" if p90 is None or not base90 else f"{p90 / base90:.2f}x"
            line += f"  {fmt(p90):>10}  {ratio90:>10}"
        lines.append(line)
    return "\n".join(lines)


def _in_peer() -> bool:
    return os.environ.get(_PEER_ENV) == "1"


def maybe_jax():
    """``(jax, jax.numpy)`` in the JAX peer process (see the module docstring), else
    ``(None, None)``."""
    if not _in_peer():
        return None, None
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    return jax, jnp


def run(module) -> str:
    """``module.check_and_time()`` with JAX rows timed in a child process when JAX is
    installed."""
    _peer_rows.clear()
    # FUNCTRANS_BENCH_JAX_PYTHON names a Python with JAX (and NumPy and Numba) in another
    # environment; functrans is then imported from this checkout's source.
    python = os.environ.get("FUNCTRANS_BENCH_JAX_PYTHON") or (
        sys.executable if importlib.util.find_spec("jax") is not None else None)
    if python is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        code = (f"import sys, json; sys.path.insert(0, {here!r}); "
                f"sys.path.append({os.path.dirname(here)!r}); import timing, "
                f"{module.__name__} as m; m.check_and_time(); "
                f"print({_PEER_MARK!r} + json.dumps(timing._peer_rows))")
        done = subprocess.run([python, "-c", code], capture_output=True, text=True,
                              env={**os.environ, _PEER_ENV: "1"}, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"the JAX process of {module.__name__} failed:\n"
                               f"{done.stderr[-3000:]}")
        line = [ln for ln in done.stdout.splitlines() if ln.startswith(_PEER_MARK)][-1]
        _peer_rows.update({k: [tuple(r) for r in v]
                           for k, v in json.loads(line[len(_PEER_MARK):]).items()})
    return module.check_and_time()
